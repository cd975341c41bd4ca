"""No password is ever printed (core/masking.py): the masker itself, then every
command that can name a server, driven with passwords that broke the old
maskers (`/ ? # @ : %`, a URL psycopg cannot parse, a key=value string)."""

from __future__ import annotations

import json
import sqlite3
from contextlib import closing

import pytest

from kaja_cli.core import masking
from tests.conftest import Kaja
from tests.support.cloud_support import use_server

pytest_plugins = ["tests.support.pg", "tests.support.cloud_fixtures"]


# --- the masker ---------------------------------------------------------------------------
@pytest.mark.parametrize(
    ("value", "shown"),
    [
        ("postgresql://kaja:pa?ss@127.0.0.1:5432/db", "postgresql://kaja:***@127.0.0.1:5432/db"),
        ("postgresql://kaja:pa/ss@127.0.0.1/db", "postgresql://kaja:***@127.0.0.1/db"),
        ("postgresql://kaja:pa#ss@127.0.0.1/db", "postgresql://kaja:***@127.0.0.1/db"),
        ("postgresql://kaja:p@ss:w%rd@127.0.0.1:1/db", "postgresql://kaja:***@127.0.0.1:1/db"),
        ("postgresql://kaja:pa ss@127.0.0.1/db", "postgresql://kaja:***@127.0.0.1/db"),
        ("postgresql://kaja:pässwörd@127.0.0.1/db", "postgresql://kaja:***@127.0.0.1/db"),
        ("postgres://kaja:p%40ss%2F@127.0.0.1/db", "postgres://kaja:***@127.0.0.1/db"),
        ("postgresql://:SECRET@127.0.0.1/db", "postgresql://:***@127.0.0.1/db"),
        ("postgresql://u:SECRET@[::1/db", "postgresql://u:***@[::1/db"),
        # No password: nothing hidden, the address stays readable.
        ("postgresql://kaja@127.0.0.1/db", "postgresql://kaja@127.0.0.1/db"),
        (
            "postgresql://[::1]:5432/db?sslmode=require",
            "postgresql://[::1]:5432/db?sslmode=require",
        ),
        ("postgresql:///db?host=/run/pg", "postgresql:///db?host=/run/pg"),
        # A query string: the secret parameters, a bare & kept inside the value.
        ("postgresql://127.0.0.1/db?password=SECRET", "postgresql://127.0.0.1/db?password=***"),
        (
            "postgresql://127.0.0.1/db?sslmode=require&password=a&b&sslpassword=c&user=x",
            "postgresql://127.0.0.1/db?sslmode=require&password=***&sslpassword=***&user=x",
        ),
        ("postgresql://127.0.0.1/db?password=x@y", "postgresql://127.0.0.1/db?password=***"),
        # libpq's key=value, its quoting and spaces around =.
        ("host=127.0.0.1 password=SECRET dbname=x", "host=127.0.0.1 password=*** dbname=x"),
        ("host=127.0.0.1 password='a b\\'c' dbname=x", "host=127.0.0.1 password=*** dbname=x"),
        ("host=127.0.0.1 password = SECRET", "host=127.0.0.1 password = ***"),
        ("host=127.0.0.1 dbname=x", "host=127.0.0.1 dbname=x"),
        # Neither a URL nor a clean key=value string: hidden whole.
        ("host=127.0.0.1 SECRET", "***"),
        ("host=127.0.0.1 password='SECRET", "***"),
        ("kaja:SECRET@127.0.0.1/db", "***"),
        ("postgresql:/kaja:SECRET@127.0.0.1/db", "***"),
        ("", ""),
    ],
)
def test_mask_hides_the_password_and_keeps_the_rest(value, shown):
    assert masking.mask(value) == shown


def test_the_secrets_of_an_address_include_what_the_driver_reads():
    assert masking.secrets("postgres://kaja:p%40ss@h/db") == ["p%40ss", "p@ss"]
    assert masking.secrets("host=h password='a b\\'c'") == ["'a b\\'c'", "a b'c"]
    assert masking.secrets("postgresql://kaja@h/db") == []


@pytest.mark.parametrize(
    ("text", "shown"),
    [
        ("nothing secret here: host=x port=5", "nothing secret here: host=x port=5"),
        ("see postgresql://kaja:pa/ss@h/db now", "see postgresql://kaja:***@h/db now"),
        ("host=x password=SECRET dbname=y", "host=x password=*** dbname=y"),
        ("host=x password='a b\\'c' dbname=y", "host=x password=*** dbname=y"),
        ('token="abc" api_key=xyz', "token=*** api_key=***"),
        ('{"url": "postgresql://kaja:s3cret@h/db"}', '{"url": "postgresql://kaja:***@h/db"}'),
    ],
)
def test_mask_text_hides_every_address_in_free_text(text, shown):
    assert masking.mask_text(text) == shown


@pytest.mark.parametrize(
    ("message", "url", "shown"),
    [
        (
            'end of string reached when looking for matching "]" in IPv6 host address in URI:'
            ' "postgresql://u:SECRET@[::1/db"',
            "postgresql://u:SECRET@[::1/db",
            'end of string reached when looking for matching "]" in IPv6 host address',
        ),
        (
            'invalid percent-encoded token: "w%rd@127.0.0.1:1"',
            "postgresql://kaja:p@ss:w%rd@127.0.0.1:1/db",
            'invalid percent-encoded token: "***@127.0.0.1:1"',
        ),
        (
            'invalid integer value "pa" for connection option "port"',
            "postgresql://kaja:pa/ss@127.0.0.1:1/db",
            'invalid integer value "***" for connection option "port"',
        ),
        (
            'missing "=" after "SECRET" in connection info string',
            "host=127.0.0.1 SECRET",
            'missing "=" after "***" in connection info string',
        ),
        (
            'password authentication failed for user "kaja" (p@ss)',
            "postgres://kaja:p%40ss@h/db",
            'password authentication failed for user "kaja" (***)',
        ),
    ],
)
def test_scrub_takes_the_address_and_every_piece_of_its_password_out_of_a_message(
    message, url, shown
):
    assert masking.scrub(message, url) == shown


# --- every command that can name a server --------------------------------------------------
# (the password, the address holding it); port 1 on 127.0.0.1 refuses at once.
ADDRESSES = [
    ("pa?ss", "postgresql://kaja:pa?ss@127.0.0.1:1/db"),
    ("pa/ss", "postgresql://kaja:pa/ss@127.0.0.1:1/db"),
    ("pa#ss", "postgresql://kaja:pa#ss@127.0.0.1:1/db"),
    ("p@ss:w%rd", "postgresql://kaja:p@ss:w%rd@127.0.0.1:1/db"),
    ("p@ss:w%rd", "postgresql://kaja:p%40ss%3Aw%25rd@127.0.0.1:1/db"),
    ("SECRET", "postgresql://u:SECRET@[::1/db"),
    ("SECRET", "postgres://127.0.0.1:1/db?password=SECRET"),
    ("SECRET", "host=127.0.0.1 port=1 password=SECRET dbname=db"),
]
CLOUD_COMMANDS = [
    ("sessions",), ("sessions", "--json"), ("search", "hello"), ("resume", "-c"),
    ("doctor",), ("doctor", "--json"), ("doctor", "--redact"),
    ("config", "paths"), ("config", "paths", "--json"),
    ("config", "show"), ("config", "show", "--json"), ("config", "get", "memory.databaseUrl"),
]  # fmt: skip
SYNC_COMMANDS = [
    ("sync",), ("sync", "status"), ("sync", "status", "--json"),
    ("usage", "--all-machines"), ("doctor",), ("doctor", "--json"),
    ("config", "show"), ("config", "show", "--json"), ("config", "get", "usage.postgres_url"),
]  # fmt: skip


def pieces(password: str) -> set[str]:
    """What must not be printed: the password, and every 4 characters of it
    (libpq quotes the piece of a URL it choked on)."""
    return {password} | {password[i : i + 4] for i in range(len(password) - 3)}


def assert_hidden(password: str, runs: list[tuple[tuple[str, ...], object]]) -> None:
    leaks = [
        (argv, piece, r)
        for argv, r in runs
        for piece in pieces(password)
        if piece in r.out + r.err  # type: ignore[attr-defined]
    ]
    assert not leaks, leaks[:3]
    assert all("Traceback" not in r.err for _, r in runs)  # type: ignore[attr-defined]


def settings(kaja: Kaja, text: str) -> None:
    kaja.config.parent.mkdir(parents=True, exist_ok=True)
    kaja.config.write_text(text)


def stale_outbox(kaja: Kaja) -> None:
    """A change that has waited for years: doctor asks the sync server about it."""
    with closing(sqlite3.connect(kaja.db)) as conn, conn:
        conn.execute(
            "INSERT INTO sync_outbox (tbl, key, op, at)"
            " VALUES ('runs', 'run_old', 'upsert', '2020-01-01T00:00:00.000Z')"
        )
    conn.close()


@pytest.mark.parametrize(("password", "url"), ADDRESSES, ids=[u for _, u in ADDRESSES])
def test_no_command_prints_the_password_of_the_cloud_server(kaja, password, url):
    runs = [(argv, kaja("--database-url", url, *argv)) for argv in CLOUD_COMMANDS]
    use_server(kaja, url)
    runs += [(argv, kaja(*argv)) for argv in CLOUD_COMMANDS]
    assert_hidden(password, runs)
    assert any(r.code == 1 for _, r in runs)  # the server was tried, and failed


@pytest.mark.parametrize("password", ["pa?ss", "pa/ss", "pa#ss"])
def test_doctor_redact_finds_the_host_behind_any_password(kaja, password):
    """--redact splits the URL where the masker does: the host stays hidden."""
    r = kaja("--database-url", f"postgresql://alice:{password}@127.0.0.1:1/notes", "doctor",
             "--redact")  # fmt: skip
    assert r.code == 1, r
    assert "cannot reach the PostgreSQL server at <database url>: " in r.out
    assert not any(s in r.out + r.err for s in ("127.0.0.1", "alice", "notes", password))


@pytest.mark.parametrize(("password", "url"), ADDRESSES, ids=[u for _, u in ADDRESSES])
def test_no_command_prints_the_password_of_the_sync_server(demo_store, password, url):
    stale_outbox(demo_store)
    env = {"USAGE_POSTGRES_URL": url}
    runs = [(argv, demo_store(*argv, env=env)) for argv in SYNC_COMMANDS]
    for argv in (("sync",), ("sync", "status"), ("usage", "--all-machines")):
        runs.append((argv, demo_store(*argv, "--ledger-url", url)))
    settings(demo_store, f"[usage]\npostgres_url = {json.dumps(url)}\n")
    runs += [(argv, demo_store(*argv)) for argv in SYNC_COMMANDS]
    assert_hidden(password, runs)
    assert any(r.code == 1 for _, r in runs)


@pytest.mark.parametrize(("password", "url"), ADDRESSES, ids=[u for _, u in ADDRESSES])
def test_config_never_prints_the_password_it_writes(kaja, password, url):
    runs = []
    for argv in (
        ("set", "memory.databaseUrl", url),
        ("set", "memory.databaseUrl", url),  # "already …"
        ("set", "usage.postgres_url", url),
        ("set", "--force", "my.dsn", url),
        ("set", "--force", "my.dsn", url),
        ("show",), ("show", "--json"), ("get", "memory.databaseUrl"),
        ("get", "usage.postgres_url"), ("get", "my.dsn"), ("paths",), ("paths", "--json"),
    ):  # fmt: skip
        runs.append((argv, kaja("config", *argv)))
    assert url in kaja.config.read_text()  # written, of course
    runs.append((("unset", "my.dsn"), kaja("config", "unset", "my.dsn")))
    assert_hidden(password, runs)


# --- a live server: what a working sync and cloud mode print -------------------------------
# The test server trusts its socket, so any password gets in (tests/support/pg.py).
LIVE = [("pa?ss", "pa?ss"), ("pa#ss", "pa#ss"), ("p@ss:w%rd", "p%40ss%3Aw%25rd"),
        ("pa/ss", "pa%2Fss")]  # fmt: skip


def with_password(url: str, written: str) -> str:
    assert url.startswith("postgresql://postgres@")
    return url.replace("postgres@", f"postgres:{written}@", 1)


@pytest.mark.parametrize(("password", "written"), LIVE, ids=[w for _, w in LIVE])
def test_a_working_sync_never_prints_the_password(demo_store, pg, password, written):
    url = with_password(pg.url, written)
    settings(demo_store, f"[usage]\npostgres_url = {json.dumps(url)}\n")
    runs = [(argv, demo_store(*argv)) for argv in (("sync",), ("sync", "status"))]
    assert all(r.code == 0 for _, r in runs), runs
    assert runs[0][1].err.endswith(f"({with_password(pg.url, '***')})\n"), runs[0]
    runs += [(argv, demo_store(*argv)) for argv in SYNC_COMMANDS]
    assert json.loads(runs[4][1].out)["url"] == with_password(pg.url, "***")
    stale_outbox(demo_store)  # doctor then asks the server, which answers
    runs += [(argv, demo_store(*argv)) for argv in (("doctor",), ("doctor", "--json"))]
    assert "although PostgreSQL at postgresql://postgres:***@/" in runs[-2][1].out
    assert_hidden(password, runs)


@pytest.mark.parametrize(("password", "written"), LIVE, ids=[w for _, w in LIVE])
def test_cloud_mode_on_a_live_server_never_prints_the_password(cloud_demo, password, written):
    use_server(cloud_demo, with_password(cloud_demo.pg.url, written))
    runs = [(argv, cloud_demo(*argv)) for argv in CLOUD_COMMANDS]
    assert runs[0][1].code == 0 and runs[0][1].out, runs[0]
    assert f"reached {with_password(cloud_demo.pg.url, '***')} in " in runs[4][1].out
    assert_hidden(password, runs)
