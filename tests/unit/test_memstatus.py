"""SQLite's memory statistics turned off before `kaja sessions export` opens
the store (kaja_cli/core/engine/memstatus.py): each case in an interpreter of its own,
since the setting is the whole process's and changes only while SQLite is
shut down."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.skipif(sys.platform != "linux", reason="turned off on Linux only")

ROOT = Path(__file__).resolve().parents[2]

# What SQLite counts as in use: always 0 once the statistics are off.
_USED = """
import ctypes, _sqlite3
def used():
    lib = ctypes.CDLL(_sqlite3.__file__)
    now, top = ctypes.c_int64(), ctypes.c_int64()
    assert lib.sqlite3_status64(0, ctypes.byref(now), ctypes.byref(top), 0) == 0
    return now.value
"""


def _run(body: str, *args: str, env: dict[str, str] | None = None) -> dict:
    """`body` in a fresh interpreter; the JSON it prints last."""
    p = subprocess.run(
        [sys.executable, "-c", _USED + body, *args],
        capture_output=True, text=True, timeout=60, cwd=ROOT,
        env={**os.environ, **(env or {})},
    )  # fmt: skip
    assert p.returncode == 0, p.stderr
    return json.loads(p.stdout.splitlines()[-1])


def test_off_before_any_connection_and_sqlite_works_as_before(tmp_path):
    """Nothing of SQLite open: the statistics go off (nothing is counted any
    more), once; a database written and read afterwards holds what was written."""
    got = _run(
        """
import json, sqlite3, sys
from kaja_cli.core.engine import memstatus
first, again = memstatus.turn_off(), memstatus.turn_off()
conn = sqlite3.connect(sys.argv[1])
with conn:
    conn.execute("CREATE TABLE t (x)")
    conn.executemany("INSERT INTO t VALUES (?)", [(str(i) * 50,) for i in range(2000)])
rows = conn.execute("SELECT count(*), sum(length(x)) FROM t").fetchone()
print(json.dumps({"first": first, "again": again, "used": used(), "rows": rows}))
""",
        str(tmp_path / "t.db"),
    )
    assert got["first"] is True and got["again"] is False
    assert got["used"] == 0  # a connection open, and nothing counted
    assert got["rows"] == [2000, sum(len(str(i)) * 50 for i in range(2000))]


def test_left_alone_while_a_connection_is_open(tmp_path):
    """A connection already open: SQLite is not shut down under it (that would
    free what it uses); the statistics stay on and the connection works."""
    got = _run(
        """
import json, sqlite3, sys
conn = sqlite3.connect(sys.argv[1])
conn.execute("CREATE TABLE t (x)")
from kaja_cli.core.engine import memstatus
turned = memstatus.turn_off()
conn.execute("INSERT INTO t VALUES ('still here')")
print(json.dumps({"turned": turned, "used": used() > 0,
                  "rows": conn.execute("SELECT x FROM t").fetchall()}))
""",
        str(tmp_path / "t.db"),
    )
    assert got == {"turned": False, "used": True, "rows": [["still here"]]}


def test_left_alone_where_sqlite_counts_nothing_already(tmp_path):
    """SQLite counting no memory already (built so, or turned off earlier): no
    count can tell whether a connection is open, so SQLite is not shut down
    under the one that is; it works on."""
    got = _run(
        """
import json, sqlite3, sys
from kaja_cli.core.engine import memstatus
assert memstatus.turn_off()  # as a build with SQLITE_DEFAULT_MEMSTATUS=0
memstatus._done = False
conn = sqlite3.connect(sys.argv[1])
conn.execute("CREATE TABLE t (x)")
cur = conn.execute("SELECT 1 UNION ALL SELECT 2")
cur.fetchone()  # a statement half read
turned = memstatus.turn_off()
conn.execute("INSERT INTO t VALUES ('still here')")
print(json.dumps({"turned": turned, "rest": cur.fetchall(),
                  "rows": conn.execute("SELECT x FROM t").fetchall()}))
""",
        str(tmp_path / "t.db"),
    )
    assert got == {"turned": False, "rest": [[2]], "rows": [["still here"]]}


@pytest.mark.parametrize("command", ["export", "sessions"])
def test_an_export_turns_them_off_before_it_opens_the_store(kaja, command):
    """`kaja sessions export ID` in its own process: the statistics were off
    before the store was opened (nothing counted with a connection open),
    exit 0. `kaja sessions` leaves them alone."""
    from tests.support import awkward_session as awkward

    awkward.build(kaja.state)
    got = _run(
        """
import json, sqlite3, sys
connect = sqlite3.connect
seen = []
def counted(*args, **kwargs):
    conn = connect(*args, **kwargs)
    seen.append(used())
    return conn
sqlite3.connect = counted
sys.argv = ["kaja", *sys.argv[1:]]
from kaja_cli.app import main
code = 0
try:
    main()
except SystemExit as e:
    code = e.code
print(json.dumps({"code": code, "seen": seen}))
""",
        *(("sessions", "export", awkward.SID, "--owner", awkward.OWNER, "-f", "html")
          if command == "export" else ("sessions", "--all-owners")),
        env=kaja.env,
    )  # fmt: skip
    assert got["code"] in (0, None) and got["seen"], got
    if command == "export":
        assert set(got["seen"]) == {0}, got
    else:
        assert 0 not in got["seen"], got
