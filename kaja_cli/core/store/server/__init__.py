"""Cloud mode: the same store in a PostgreSQL server (SPEC §10).

The commands do not know which engine answers them: `Store` hands the query
functions a connection, and a PostgreSQL connection (`connection`) speaks
through the same interface as a sqlite3 one, rewriting `?` placeholders and
carrying its `dialect` (`core.dialect`). What differs truly lives here:

- `connection`: psycopg (imported only in cloud mode), timeouts, errors as
  one line with their exit status, the connection the query functions use;
- `ddl`: the one schema description of `core.schema` written as PostgreSQL;
- `schema`: kaja's schema on the server, its version, bringing it up to date;
- `tokenizer`: SQLite's unicode61 tokenizer reproduced in SQL, so the server's
  index holds the words local search holds; `unicode61` is its data;
- `fts4`: FTS4 query syntax as PostgreSQL `tsquery`;
- `search`: `kaja search` on the server (BM25 as locally);
- `wipe`: dropping kaja's schema, erasing one owner.
"""
