"""The engines kaja stores data in, knowing nothing of Kaja: files and folders (`fs`),
the SQLite opener (`db`), the SQL dialects (`dialect`) and the PostgreSQL client (`postgres`).
"""
