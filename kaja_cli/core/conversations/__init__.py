"""The conversation store (SPEC §4): sessions, their messages read back
(`transcript`), the write API (`record`), search, and looking after sessions (prune,
archive, export, stats).
"""
