"""`kaja cache`, `cache prune` and `cache clear`, on the demo store (its nine
entries: eight web fetches, all expired by now, and one embedding that never
expires) and on cache files that are missing, held, linked, foreign or damaged."""

from __future__ import annotations

import json
import os
import time

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.conftest import examples
from tests.support.side_support import fingerprint, holding, integrity, killed_at, sql, write

ROWS = (
    "embeddings\t1\t49\t0\t2026-11-26T12:00:00.000Z\t2026-11-26T12:00:00.000Z\t115\t4\t0.9664\n"
    "web_fetch\t8\t424\t8\t2026-11-29T07:55:00.000Z\t2026-11-29T12:00:00.000Z\t30\t14\t0.6818\n"
)


def cache_db(kaja):
    return kaja.state / "cache.db"


def entries(kaja) -> dict[str, int]:
    return dict(
        sql(cache_db(kaja), "SELECT namespace, count(*) FROM shared_cache GROUP BY namespace")
    )


# --- the report -----------------------------------------------------------------------------
def test_per_namespace_with_hit_rates_from_the_shared_file(demo_store):
    before = fingerprint(demo_store.state)
    r = demo_store("cache")
    assert (r.code, r.out) == (0, ROWS)
    assert r.err == f"kaja: 9 entries, 8 expired; {cache_db(demo_store)} takes 20.5 kB\n"
    doc = json.loads(demo_store("cache", "--json").out)
    assert doc["namespaces"][1] == {
        "namespace": "web_fetch", "entries": 8, "bytes": 424, "expired": 8,
        "oldest_access": "2026-11-29T07:55:00.000Z", "newest_access": "2026-11-29T12:00:00.000Z",
        "hits": 30, "misses": 14, "hit_rate": 0.6818,
    }  # fmt: skip
    assert doc["total"] == {"entries": 9, "bytes": 473, "expired": 8}
    assert fingerprint(demo_store.state) == before


def test_without_the_shared_file_there_are_no_hit_rates(demo_store):
    for p in demo_store.state.glob("kaja.db*"):
        p.unlink()
    r = demo_store("cache", "--json")
    spaces = json.loads(r.out)["namespaces"]
    assert [(s["namespace"], s["hits"], s["hit_rate"]) for s in spaces] == [
        ("embeddings", None, None), ("web_fetch", None, None)]  # fmt: skip


def test_a_missing_cache_holds_nothing_and_nothing_is_created(kaja):
    r = kaja("cache")
    assert (r.code, r.out, r.err) == (
        0,
        "",
        f"kaja: no cache: there is no cache.db at {cache_db(kaja)}\n",
    )
    r = kaja("cache", "prune", "--yes")
    assert (r.code, r.err) == (
        0,
        f"kaja: nothing to prune: there is no cache.db at {cache_db(kaja)}\n",
    )
    assert kaja("cache", "clear", "--yes").code == 0
    r = kaja("cache", "clear", "web_fetch", "--yes")
    assert r.code == 3 and "no cache.db" in r.err
    assert json.loads(kaja("cache", "--json").out)["exists"] is False
    assert not kaja.state.exists()


# --- prune ------------------------------------------------------------------------------------
def test_prune_drops_only_what_expired(demo_store):
    # An expiry another writer stored as a number is not a date kaja can read: kept.
    write(
        cache_db(demo_store),
        "INSERT INTO shared_cache VALUES ('web_fetch', 'odd', 'x', 1700000000, NULL)",
    )
    r = demo_store("cache", "prune")
    assert r.code == 5 and "--yes" in r.err
    r = demo_store("cache", "prune", "--dry-run", "--json")
    doc = json.loads(r.out)
    assert (doc["namespaces"], doc["deleted"], doc["dry_run"]) == ({"web_fetch": 8}, 0, True)
    assert entries(demo_store) == {"embeddings": 1, "web_fetch": 9}
    r = demo_store("cache", "prune", "--yes")
    assert (r.code, r.err) == (0, "kaja: dropped 8 expired entries (web_fetch 8)\n")
    assert entries(demo_store) == {"embeddings": 1, "web_fetch": 1}
    r = demo_store("cache", "prune", "--yes")
    assert (r.code, r.err) == (0, "kaja: dropped 0 expired entries\n")


def test_doctor_counts_what_prune_drops(demo_store):
    r = demo_store("doctor", "--json", "--check", "side-data")
    check = {c["id"]: c for c in json.loads(r.out)["checks"]}["side-data.cache"]
    assert check["summary"] == "cache.db: 9 entries, 8 expired"


# --- clear ------------------------------------------------------------------------------------
def test_clear_one_namespace(demo_store):
    r = demo_store("cache", "clear", "web_fetch", "--yes")
    assert (r.code, r.err) == (0, "kaja: cleared namespace web_fetch (8 entries)\n")
    assert entries(demo_store) == {"embeddings": 1}
    r = demo_store("cache", "clear", "nope", "--yes")
    assert (r.code, r.err) == (3, "kaja: cache.db has no namespace 'nope': it has: embeddings\n")


def test_clear_deletes_the_file_when_nobody_holds_it(demo_store):
    path = cache_db(demo_store)
    r = demo_store("cache", "clear", "--dry-run")
    assert (
        r.err == f"kaja: dry run: would delete {path} (9 entries, 20.5 kB); nothing was deleted\n"
    )
    assert path.exists()
    r = demo_store("cache", "clear", "--yes", "--json")
    doc = json.loads(r.out)
    assert (doc["how"], doc["entries"], doc["files"]) == ("file", 9, [str(path)])
    assert not [p for p in demo_store.state.iterdir() if p.name.startswith("cache.db")]
    assert demo_store("doctor", "--check", "integrity").code == 0


def test_clear_empties_a_file_another_process_holds(demo_store):
    path = cache_db(demo_store)
    with holding(path):
        r = demo_store("cache", "clear", "--yes")
        assert r.code == 0, r
        assert r.err.startswith(
            f"kaja: emptied {path} (9 entries) instead of deleting it: {path} is open in process"
        )
        assert path.exists() and entries(demo_store) == {}
    assert integrity(path) == "ok"


def test_clear_waits_for_a_writer_then_says_busy(demo_store):
    with holding(cache_db(demo_store), "write"):
        start = time.monotonic()
        r = demo_store("cache", "clear", "web_fetch", "--yes")
        assert r.code == 4 and "busy" in r.err, r
        assert time.monotonic() - start >= 4
        assert demo_store("cache").out == ROWS  # reading never waits
    assert entries(demo_store) == {"embeddings": 1, "web_fetch": 8}


def test_a_linked_cache_is_emptied_never_deleted_through_the_link(demo_store, tmp_path):
    target = tmp_path / "elsewhere.db"
    cache_db(demo_store).rename(target)
    cache_db(demo_store).symlink_to(target)
    r = demo_store("cache", "clear", "--yes")
    assert r.code == 0 and "symbolic link" in r.err, r
    assert cache_db(demo_store).is_symlink() and target.exists()
    assert sql(target, "SELECT count(*) FROM shared_cache") == [(0,)]


def test_a_file_that_is_not_kajas_cache_is_refused(demo_store):
    path = cache_db(demo_store)
    path.unlink()
    write(path, "CREATE TABLE photos (id INTEGER PRIMARY KEY); INSERT INTO photos VALUES (1);")
    before = path.read_bytes()
    r = demo_store("cache")
    assert r.err.startswith(f"kaja: no cache entries: {path} has no shared_cache table\n")
    for argv in (
        ["cache", "prune", "--yes"],
        ["cache", "clear", "--yes"],
        ["cache", "clear", "x", "--yes"],
    ):
        r = demo_store(*argv)
        assert r.code == 5 and "not Kaja's cache.db" in r.err, (argv, r)
    assert path.read_bytes() == before
    path.unlink()
    path.write_text("a shopping list\n")
    assert demo_store("cache").code == 1
    for argv in (["cache", "prune", "--yes"], ["cache", "clear", "--yes"]):
        r = demo_store(*argv)
        assert r.code == 5 and "not a SQLite database" in r.err, (argv, r)
    assert path.read_text() == "a shopping list\n"


def test_a_fifo_is_never_opened(demo_store):
    path = cache_db(demo_store)
    path.unlink()
    os.mkfifo(path)
    for argv, code in ((["cache"], 1), (["cache", "prune", "--yes"], 5),
                       (["cache", "clear", "--yes"], 5)):  # fmt: skip
        r = demo_store(*argv, timeout=20)
        assert r.code == code and "is a FIFO, not a SQLite database" in r.err, (argv, r)
    assert path.exists()


def test_a_damaged_cache_is_what_clear_is_for(demo_store):
    path = cache_db(demo_store)
    data = bytearray(path.read_bytes())
    data[100:4096] = b"\xff" * (4096 - 100)  # the header stays: SQLite, but unreadable
    path.write_bytes(bytes(data))
    assert demo_store("cache").code == 1
    r = demo_store("cache", "clear", "--yes")
    assert r.code == 0, r
    assert not path.exists()


@pytest.mark.process
def test_killed_at_any_step_the_cache_is_whole_or_gone(demo_store):
    path = cache_db(demo_store)
    killed_at(demo_store, "cache-commit", "cache", "prune", "--yes")
    assert entries(demo_store) == {"embeddings": 1, "web_fetch": 8}
    killed_at(demo_store, "cache.db", "cache", "clear", "--yes")  # folded, not yet deleted
    assert integrity(path) == "ok" and entries(demo_store) == {"embeddings": 1, "web_fetch": 8}
    assert not path.with_name("cache.db-wal").exists()
    assert demo_store("cache", "clear", "--yes").code == 0
    assert not path.exists()


@settings(max_examples=examples(10),
          suppress_health_check=[HealthCheck.function_scoped_fixture])  # fmt: skip
@given(value=st.text(max_size=30).filter(lambda v: "\x00" not in v))
def test_any_namespace(demo_store, value):
    r = demo_store("cache", "clear", value, "--dry-run")
    assert r.code in (0, 2, 3) and "Traceback" not in r.err, r
    assert entries(demo_store) == {"embeddings": 1, "web_fetch": 8}


def test_tab_completes_namespaces(demo_store):
    from tests.cli.test_completion import fast_answer, requests, typer_answer

    base = dict(demo_store.env, COLUMNS="100000")
    for shell, env in requests(base, ["cache", "clear"], "").items():
        assert fast_answer(env) == typer_answer(env), shell
    assert fast_answer(requests(base, ["cache", "clear"], "")["bash"]) == (
        "embeddings\nweb_fetch\n",
        0,
    )
    fish, _ = fast_answer(requests(base, ["cache", "clear"], "w")["fish"])
    assert fish == "web_fetch\t8 entries\n"
