"""The side databases and kaja's own records in them: notes, the shared cache, web
accounts, and the query profile (`profiler`, `query_stats`).
"""
