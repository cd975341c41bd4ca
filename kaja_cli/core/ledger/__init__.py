"""The usage ledger (SPEC §4, §10): what the agent spent (`usage`) and sharing it
between machines (`sync`).
"""
