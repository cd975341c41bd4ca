"""The usage ledger (SPEC §4, §10): what the agent spent, and sharing it between machines.

- `report`: the usage report's model and the SQL of its queries, read by both
  reports below (the bottom of the package).
- `sync/`: ledger sync through PostgreSQL: the protocol (`sync`), the
  `sync_state` table and the lease (`state`), where the server is (`url`),
  `kaja sync status` (`overview`), rows as JSON out and back in (`rows`), the
  shared table on the server (`server`), and its health for `kaja doctor`
  (`health`); `kaja usage --all-machines`.
- `usage/`: `kaja usage` and `kaja usage reset`, one skeleton with an engine
  part per store (`local`, `server`: the ledger is reset only locally) and
  what a reset picks (`plan`).

Imports run one way: usage → sync → report (a reset keeps sync right; sync
never asks usage). The package sits above `conversations` (a vacuum keeps the
search indexes in step) and beside `side`, which it does not import.
"""
