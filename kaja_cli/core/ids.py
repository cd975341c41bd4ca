"""Short session ids: the shortest unique prefix, as `kaja sessions` and
`kaja search` show them (a module of its own: search must not pay for
importing the sessions listing on every query)."""

from __future__ import annotations

SHORT_ID_MIN = 8  # the first group of a UUID; longer only where two ids share it


def short_id(sid: object, prev: object, nxt: object, minimum: int = SHORT_ID_MIN) -> str:
    """The shortest prefix of `sid` (at least `minimum` long) that neither
    neighbour in id order starts with, so no other id does. Ids of any type
    another program stored (an INTEGER) are taken as their text."""
    from kaja_cli.core.values import text

    sid, prev, nxt = text(sid) or "", text(prev), text(nxt)
    need = minimum
    for other in (prev, nxt):
        # Once the prefixes differ, every longer one does too.
        while other and need < len(sid) and other[:need] == sid[:need]:
            need += 1
    if need < len(sid) and sid[need - 1] == "-":
        need += 1  # never end a short id on the UUID's dash
    return sid[:need]
