"""`python tests/support/peak_rss.py CMD [ARGS…]`: run CMD (stdout to /dev/null)
and print one JSON line, its exit code and its peak RSS in KiB.

A process's peak RSS (`ru_maxrss`) starts from its parent's at the fork: the
kernel keeps the high-water mark of the memory it was forked with until the
exec, and `posix_spawn`/vfork borrow the parent's. Measured straight from a
pytest worker that has run a few hundred tests (175 MB), any child read as
at least that much. This small process is the parent instead.
"""

import json
import os
import sys

pid = os.posix_spawnp(
    sys.argv[1], sys.argv[1:], os.environ,
    file_actions=[(os.POSIX_SPAWN_OPEN, 1, os.devnull, os.O_WRONLY, 0)],
)  # fmt: skip
_, status, usage = os.wait4(pid, 0)
print(json.dumps({"code": os.waitstatus_to_exitcode(status), "peak_kib": usage.ru_maxrss}))
