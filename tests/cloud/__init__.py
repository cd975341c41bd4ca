"""Cloud mode and ledger sync against a real PostgreSQL the tests start (support/pg.py)."""
