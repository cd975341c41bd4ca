"""`kaja backup`, `kaja restore`: the whole store in one archive, and back.

- `archive`: the archive's format (members, names, the manifest, sha256 sums);
- `create`: `backup()`, a consistent copy of every database while the agent
  writes (SQLite's online backup API), the image files, one archive written
  atomically;
- `restore`: `plan_restore()` and `execute()` (back up the old store, prepare,
  swap), the steps around `staging`: `extract()` (into a staging folder,
  verified) and `discard()`;
- `swap`: the swap's steps, each one safe to run again, and the restore's
  marker (core/store/markers.py), shared by `restore` and `interrupted`;
- `interrupted`: `interrupted()` and `finish()` for a restore that was
  stopped half way;
- `guarding`: what these commands may write and replace (the archive is
  never one of the store's files; another program's database is refused).

Tests stop a backup or a restore at a chosen step (`markers.checkpoint`).
`kaja optimize` is `core/care/optimize.py`.
"""
