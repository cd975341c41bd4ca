"""`kaja backup`, `kaja restore`: the whole store in one archive, and back.

- `archive`: the archive's format (members, names, the manifest, sha256 sums);
- `create`: `backup()`, a consistent copy of every database while the agent
  writes (SQLite's online backup API), the image files, one archive written
  atomically;
- `restore`: `plan_restore()`, `extract()` (into a staging folder, verified),
  `execute()` (the swap);
- `interrupted`: `interrupted()` and `finish()` for a restore that was
  stopped half way;
- `guarding`: what these commands may write and replace (the archive is
  never one of the store's files; another program's database is refused);
- `hook`: the test hook that stops a restore at a chosen step.

`kaja optimize` is `core/optimize.py`.
"""
