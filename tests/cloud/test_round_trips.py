"""How many statements a cloud command sends the server: each is a round trip,
and a hosted server is tens of milliseconds away, not the fixture's socket.
A listing asks the same number of statements whether it shows one row or all
of them (no statement per row), and a plain read asks only a few."""

from __future__ import annotations

import json

import pytest

pytest_plugins = ["tests.support.pg", "tests.support.cloud_fixtures"]


def sent(kaja, monkeypatch, *argv: str) -> list[str]:
    """The statements `kaja ARGV` sent the server (it must succeed)."""
    import psycopg

    statements: list[str] = []
    execute = psycopg.Cursor.execute

    def recorded(self, query, params=None, **kw):
        statements.append(str(query))
        return execute(self, query, params, **kw)

    monkeypatch.setattr(psycopg.Cursor, "execute", recorded)
    try:
        r = kaja(*argv)
    finally:
        monkeypatch.undo()
    assert r.code == 0, r
    return statements


@pytest.mark.parametrize(
    "listing",
    [
        ("runs", "--all-owners", "--subagents"),
        ("sessions", "--all-owners"),
        ("search", "the", "--all-owners"),
    ],
    ids=lambda argv: " ".join(argv),
)
def test_a_listing_asks_no_more_statements_for_every_row_than_for_one(
    cloud_demo, monkeypatch, listing
):
    one = sent(cloud_demo, monkeypatch, *listing, "--limit", "1")
    everything = sent(cloud_demo, monkeypatch, *listing, "--limit", "0", "--json")
    shown = json.loads(cloud_demo(*listing, "--limit", "0", "--json").out)
    rows = next(v for v in shown.values() if isinstance(v, list))
    assert len(rows) > 5, shown  # enough rows that one statement each would show
    # (one row may cost a statement more: the count behind "N more not shown")
    assert len(everything) <= len(one), (one, everything)


def test_runs_asks_for_the_short_ids_of_every_run_shown_at_once(cloud_demo, monkeypatch):
    statements = sent(
        cloud_demo, monkeypatch, "runs", "--all-owners", "--subagents", "--limit", "0"
    )
    neighbours = [s for s in statements if "max(id) FROM runs" in s]
    assert len(neighbours) == 1, neighbours


def test_stats_reads_the_selected_messages_once(cloud_demo, monkeypatch):
    """Each statement over the per-session rows makes them anew on a server
    (a WITH: read-only transactions make no table), reading every message."""
    statements = sent(cloud_demo, monkeypatch, "sessions", "stats", "--all-owners", "--json")
    assert len([s for s in statements if "kaja_stats" in s]) == 1, statements


@pytest.mark.parametrize("argv", [("sessions",), ("notes",), ("runs",), ("search", "tomato")])
def test_a_read_asks_the_catalog_once(cloud_demo, monkeypatch, argv):
    statements = sent(cloud_demo, monkeypatch, *argv)
    catalog = [s for s in statements if "pg_catalog.pg_class" in s]
    assert len(catalog) == 1, statements
    assert len([s for s in statements if "kaja_schema" in s]) == 1, statements


@pytest.mark.parametrize("argv", [("notes",), ("sessions", "--json")])
def test_a_reads_first_look_at_the_catalog_goes_with_its_begin(cloud_demo, monkeypatch, argv):
    """The BEGIN of kaja's own transaction, its settings and the catalog read
    are one round trip: a small read sends four statements in all."""
    statements = sent(cloud_demo, monkeypatch, *argv)
    catalog = [s for s in statements if "pg_catalog.pg_class" in s]
    assert len(catalog) == 1 and catalog[0].startswith(
        "BEGIN ISOLATION LEVEL READ COMMITTED; SET LOCAL"
    ), statements
    # that one, the schema's version, the read itself, and the ROLLBACK that ends it
    assert len(statements) == 4, statements


def test_a_writers_first_look_at_the_catalog_is_committed_with_its_begin(cloud_demo, monkeypatch):
    """A writer's transactions end with their statement (as autocommit): the
    catalog read that opened one is committed at once, and the write that
    follows is still made and kept."""
    sid = json.loads(cloud_demo("sessions", "--all-owners", "--json").out)["sessions"][0]["id"]
    statements = sent(cloud_demo, monkeypatch, "sessions", "archive", sid)
    first = next(i for i, s in enumerate(statements) if "pg_catalog.pg_class" in s)
    assert statements[first].startswith("BEGIN ISOLATION LEVEL READ COMMITTED; SET LOCAL"), (
        statements
    )
    assert statements[first + 1].strip() == "COMMIT", statements
    shown = json.loads(cloud_demo("sessions", "--all-owners", "--archived", "--json").out)
    assert sid in [s["id"] for s in shown["sessions"]]


@pytest.mark.parametrize("word", ["tomato", "the"])
def test_search_counts_a_words_forms_itself_and_the_index_in_one_statement(
    cloud_demo, monkeypatch, word
):
    """BM25 needs each form's messages, the word's own and the index's size:
    asked together, whether the word has other forms (tomato) or not."""
    statements = sent(cloud_demo, monkeypatch, "search", word, "--all-owners")
    counting = [s for s in statements if "count(*) FROM messages WHERE kaja_search" in s]
    stats = [s for s in statements if "kaja_search_stats" in s]
    assert len(counting) == 1 and stats == counting, statements
    assert len(statements) <= 10, statements


def test_one_owners_usage_is_one_statement_that_keeps_their_runs_on_the_server(
    cloud_demo, monkeypatch
):
    """Their runs found once and joined to their calls and tools where they are:
    sending a big account's run ids back (443,000 at ten million messages) made
    the server plan and probe for each, past the statement timeout."""
    statements = sent(cloud_demo, monkeypatch, "usage", "--owner", "telegram:482913", "--json")
    ledger = [s for s in statements if "FROM calls" in s or "FROM tools" in s]
    assert len(ledger) == 1, statements
    assert "FROM tools" in ledger[0] and "FROM mine" in ledger[0]
    assert "ANY(" not in ledger[0]


@pytest.mark.parametrize("writable", [False, True], ids=["reader", "writer"])
def test_a_first_look_that_fails_leaves_the_connection_usable(cloud_demo, monkeypatch, writable):
    """The BEGIN went with the catalog read: when the read fails, the
    transaction it opened is rolled back, as kaja's own always were (doctor
    goes on to its next check on the same connection; a pooler's server
    connection is not left pinned by an aborted transaction)."""
    from kaja_cli.core.engine import postgres as pg
    from kaja_cli.errors import KajaError

    where = pg.Target(cloud_demo.pg.url, "kaja")
    with pg.connect(where, writable=writable) as conn:
        monkeypatch.setattr(pg, "_CATALOG", "SELECT 1 / 0, ? AS schema_name")
        with pytest.raises(KajaError, match="division by zero"):
            conn.table_names()
        monkeypatch.undo()
        assert not conn.in_transaction
        assert conn.raw.info.transaction_status == pg.IDLE
        assert conn.execute("SELECT 1").fetchone() == (1,)
        assert "sessions" in conn.table_names()
