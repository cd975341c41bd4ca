"""`kaja wipe`: delete the local store, or everything one owner stored (SPEC §8).

A plan first, then its execution (pipx `reset`): `plan()` and `plan_owner()`
only look (read-only) and return what would go, what stays and why, and what
is refused; the same plan drives `--dry-run`, the confirmation, `--json` and
`execute()` / `execute_owner()`.

What a whole wipe deletes, and nothing else:
- each database (the shared file, a split artifacts file, cache.db,
  db-stats.db, web-auth.db) with its -wal, -shm and -journal;
- under `files/` beside the shared file: `images/<sessionId>/` for the
  sessions the shared file knows, then `images/` and `files/` once empty.
  Anything else there stays (kaja did not create it), and so do the folders
  holding it. A symlinked `files/`, `images/` or session folder loses the
  link; its target is never entered;
- with `settings=True`, the settings file (a symlink: the link);
- the state dir (and the settings folder) when that leaves them empty.

Refused, deleting nothing: a database path that is a folder, a symlink, not a
regular file, not SQLite, or SQLite without a single table of Kaja's (exit 5);
any of those files open in another process (exit 4, `db.holder`). There is
no --force: a file deleted under a running process silently loses what it
writes next.

Interrupted at any point (Ctrl-C, kill -9, power loss), what is left is the
whole store or a state the next `kaja wipe` finishes:
1. Each database is first folded into one self-contained file
   (`db.fold_journal`: WAL checkpointed and removed, rollback mode) while
   nothing has been deleted yet; a process that opened a file meanwhile
   stops the wipe here (exit 4).
2. A marker beside the shared file (`kaja.db.wiping`: core/store/markers.py)
   records every path of the plan and is made durable before the first
   deletion; image folders can only be told apart while the shared file
   exists, so the marker is what lets a later run finish them.
3. Each database goes before its companions, with Ctrl-C held off until the
   group is done; the folder is synced in between so that not even a power
   cut can leave a database without the journal it needed.
4. The marker goes last (before the now empty state dir).
The next `kaja wipe` deletes what the marker still lists along with
whatever exists now. The markers of a demo cut short (`kaja.db.demo`) and
of a prune cut short (`kaja.db.pruning`) go with the wipe's own.
`interrupted(paths)` describes such leftovers for `kaja doctor`.

`--owner` is one ordinary transaction (it waits for the agent's lock like
any writer): the owner's sessions with every row hanging off them (through
`cascade`), their notes, dataset answers and versions, and their search
entries (the index triggers, and `conversation_threads`). Deleted content is
overwritten (`secure_delete`). A marker naming their image folders
(`kaja.db.wiping-owner-<hash of the owner>`) is written
before the commit and removed after the folders: a crash between the two
leaves folders whose sessions are gone, which the next `kaja wipe --owner`
(or `kaja wipe`) removes; folders of sessions that still exist (a crash
before the commit) are never touched.

In cloud mode (`server`) a whole wipe drops kaja's objects in its schema on
the server instead of database files, and `--owner` erases the owner there;
the plans, the images kept here, the markers and the order are the same.

Tests stop a real `kaja wipe` at a chosen step to `kill -9` it through
`markers.checkpoint`; nothing in this package reads the environment.

This package: `model` (the plan's data), `reach` (whether a path is Kaja's
to delete), `leftovers` (what an interrupted wipe left), `whole` (`plan`,
`execute`) and `owner` (`plan_owner`, `execute_owner`): one skeleton each,
for both engines; `local` and `server`, the engine parts they ask the
store for (`store.part`).
"""

from kaja_cli.core.care.wipe.leftovers import interrupted, marker_path
from kaja_cli.core.care.wipe.model import (
    Item,
    Kept,
    Kind,
    Leftovers,
    Mention,
    OwnerPlan,
    OwnerResult,
    Part,
    Refusal,
    Stage,
    WipePlan,
    WipeResult,
)
from kaja_cli.core.care.wipe.owner import ROW_ORDER, execute_owner, plan_owner
from kaja_cli.core.care.wipe.reach import READ_TIMEOUT_MS
from kaja_cli.core.care.wipe.whole import execute, plan

__all__ = [
    "READ_TIMEOUT_MS",
    "ROW_ORDER",
    "Item",
    "Kept",
    "Kind",
    "Leftovers",
    "Mention",
    "OwnerPlan",
    "OwnerResult",
    "Part",
    "Refusal",
    "Stage",
    "WipePlan",
    "WipeResult",
    "execute",
    "execute_owner",
    "interrupted",
    "marker_path",
    "plan",
    "plan_owner",
]
