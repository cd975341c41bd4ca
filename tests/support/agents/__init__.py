"""Stand-ins for the processes that share kaja's files, for the concurrency tests."""
