"""What the tests share: in-process runs, fault launchers, the PostgreSQL server, stand-in agents."""
