"""What `kaja notes` (and `kaja search --notes`) print for a person or a
pipe, and the notes as an export file: Markdown or JSON (the --json of the
listing, `show` and `forget` is the results' own `to_json()`)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from kaja_cli import render
from kaja_cli.core import clock
from kaja_cli.core.owners import label
from kaja_cli.render import Col

if TYPE_CHECKING:
    from kaja_cli.core.side.notes import ForgetPlan, Note, NoteFilter, NoteListing, NoteSearch

CONTENT_WIDTH = 72  # a note's content on a terminal listing: its start, cut at a word


def none_found(result: NoteListing, flt: NoteFilter) -> str | None:
    """Why there are no notes to show, when there are none."""
    if not result.store_exists:
        return f"no notes: there is no Kaja store at {result.location}"
    if not result.has_table:
        return f"no notes: {result.location} has no notes table"
    if not result.notes:
        whose = "anyone" if flt.owner is None else flt.owner.label
        filtered = " matching the filters" if flt.tags or flt.importance else ""
        return f"no notes for {whose}{filtered}"
    return None


def listing(result: NoteListing, *, flt: NoteFilter) -> None:
    if not result.notes:
        return
    all_owners = flt.owner is None
    # The key (you type it), the counts and the sticky mark never give way;
    # the content and tags wrap; on a narrow terminal the use count, the
    # time, the tags and the importance go, in that order (docs/guides/notes.md).
    cols = [Col("key", style="cyan", kind="whole")]
    if all_owners:
        cols.insert(0, Col("owner", kind="whole"))
    cols += [
        Col("importance", kind="whole", drop=4),
        Col("tags", kind="text", drop=3),
        Col("sticky", kind="whole"),
        Col("last used", kind="whole", drop=2),
        Col("uses", justify="right", drop=1),
        Col("content", kind="text", min=20),
    ]
    rows, plain = [], []
    now = clock.now()
    for n in result.notes:
        who = [label(n.owner)] if all_owners else []
        rows.append(
            [*who, n.key, n.importance or "", ", ".join(n.tags), "yes" if n.sticky else "",
             render.relative_time(n.last_used_at or n.created_at, now), n.use_count,
             shorten(n.content or "", CONTENT_WIDTH)]
        )  # fmt: skip
        plain.append(
            [*who, n.key, n.importance, ",".join(n.tags), int(n.sticky),
             n.last_used_at or n.created_at, n.use_count, n.content]
        )  # fmt: skip
    render.table(cols, rows, plain_rows=plain)


def shorten(text: str, width: int) -> str:
    """The start of `text` on one line, cut at a word, with … when cut."""
    text = " ".join(text.split())
    if len(text) <= width:
        return text
    cut = text[: width - 1]
    if " " in cut:
        cut = cut[: cut.rindex(" ")]
    return cut.rstrip(" ,;:.") + "…"


def show(n: Note) -> None:
    """One note whole: its facts, then its content."""
    used = n.last_used_at or n.created_at
    facts = [
        ("owner", label(n.owner)),
        ("importance", n.importance or "-"),
        ("tags", ", ".join(n.tags) or "-"),
        ("sticky", "yes" if n.sticky else "no"),
        ("created", n.created_at or "-"),
        ("last used", f"{used} ({render.relative_time(used)})" if used else "-"),
        ("uses", str(n.use_count)),
    ]
    lines = [[(n.key, "bold cyan")]]
    lines += [[(f"{name:<11}", "dim"), (value, "")] for name, value in facts]
    lines.append([("", "")])
    lines += [[(line, "")] for line in (n.content or "").splitlines() or [""]]
    render.print_lines(lines, pager=False)


def forgetting(plan: ForgetPlan) -> str:
    """'2 notes of terminal (diet, garden)': what forget asks about."""
    names = ", ".join(n.key for n in plan.notes)
    return f"{render.plural(len(plan.notes), 'note')} of {plan.owner.label} ({names})"


def forgot(plan: ForgetPlan, done: list[Note] | None = None, *, dry_run: bool = False) -> None:
    if done is None:
        render.note(f"would forget {forgetting(plan)}")
        return
    names = ", ".join(n.key for n in done)
    render.note(f"forgot {render.plural(len(done), 'note')} of {plan.owner.label} ({names})")
    if len(done) < len(plan.notes):
        render.note(f"{len(plan.notes) - len(done)} were already gone")


# --- the export file ----------------------------------------------------------------------------
def export_text(result: NoteListing, flt: NoteFilter, fmt: str) -> str:
    """`kaja notes export`: the notes as Markdown, or as indented JSON."""
    owner = flt.owner.label if flt.owner else None
    if fmt != "json":
        return markdown(result.notes, owner)
    import json

    doc = {"owner": owner, "all_owners": flt.owner is None,
           "notes": [n.as_json() for n in result.notes]}  # fmt: skip
    return render.json_text(json.dumps(doc, ensure_ascii=False, indent=2)) + "\n"


def markdown(notes: list[Note], owner: str | None) -> str:
    """The notes as Markdown: a section per note (per owner, then note, for everyone's)."""
    out = [f"# Kaja's notes: {owner}" if owner else "# Kaja's notes", ""]
    if not notes:
        out += ["No notes.", ""]
    level = "##" if owner else "###"
    current = None
    for n in sorted(notes, key=lambda n: (n.owner != "", n.owner)) if owner is None else notes:
        if owner is None and label(n.owner) != current:
            current = label(n.owner)
            out += [f"## {current}", ""]
        facts = [n.importance or "no importance"]
        if n.sticky:
            facts.append("sticky")
        if n.tags:
            facts.append("tags: " + ", ".join(n.tags))
        facts.append(f"used {render.plural(n.use_count, 'time')}")
        if n.last_used_at:
            facts.append(f"last {clock.day_of(n.last_used_at)}")
        if n.created_at:
            facts.append(f"written {clock.day_of(n.created_at)}")
        out += [
            f"{level} {n.key}",
            "",
            "*" + " · ".join(facts) + "*",
            "",
            (n.content or "").strip(),
            "",
        ]
    return "\n".join(out).rstrip("\n") + "\n"


# --- kaja search --notes ------------------------------------------------------------------------
def search(result: NoteSearch) -> None:
    if not result.hits:
        return
    owners = result.owner is None
    # The match is shown whole, as a message search's; on a narrow terminal
    # the time, the importance and the owner go, in that order.
    cols = [Col("key", style="cyan", kind="whole")]
    if owners:
        cols.insert(0, Col("owner", kind="whole", drop=3))
    cols += [Col("importance", kind="whole", drop=2), Col("last used", kind="whole", drop=1),
             Col("match", kind="text", min=30)]  # fmt: skip
    rows, plain = [], []
    now = clock.now()
    for h in result.hits:
        n = h.note
        who = [label(n.owner)] if owners else []
        used = n.last_used_at or n.created_at
        rows.append([*who, n.key, n.importance or "", render.relative_time(used, now),
                     render.highlighted(h.snippet, h.highlights)])  # fmt: skip
        plain.append([*who, n.key, used or "", n.importance or "", h.snippet])
    caption = None
    if result.more:
        caption = (f"showing the {'most recently used' if result.recent else 'best'} "
                   f"{len(result.hits)}; more match (--limit N, or 0 for all)")  # fmt: skip
    render.table(cols, rows, caption=caption, plain_rows=plain)


def search_remarks(result: NoteSearch, text: str) -> None:
    """After the hits, on stderr (with --json too): the remarks, or that nothing matched."""
    for line in result.remarks:
        render.note(line)
    if not result.hits and not result.remarks:
        whose = "" if result.owner is None else (
            f" in {result.owner.label}'s notes (--all-owners searches everyone's)")  # fmt: skip
        render.note(f"no notes match {text!r}{whose}")
