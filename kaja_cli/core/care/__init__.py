"""Looking after a store: `doctor`, `wipe`, `backup`/`restore`, `optimize`, and
importing legacy files (`legacy`).
"""
