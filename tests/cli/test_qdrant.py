"""Qdrant (`memory.provider = "qdrant"`, core/qdrant.py): doctor's check, and
the points `sessions delete` and `wipe --owner` take along.

Against qdrant-client's local mode: a real engine keeping its collection in a
folder (`memory.qdrant.path`), filled here with one point per message of the
demo store, its payload as the seed's (resource_id, thread_id, message_id,
index, role, created_at, turn_id). There is no Qdrant server here: the server
path is tested only as far as a server that does not answer (a closed port).
"""

from __future__ import annotations

import importlib.util
import json
import socket
import sqlite3
import subprocess
import sys
import time
import uuid
from contextlib import closing

import pytest

from tests.support.sessions_support import ANA, BUDGET, TOMATO

# Imported by the functions that use it: it takes 1.5 s of CPU to import (numpy,
# grpc, pydantic), and every xdist worker collects this file.
pytestmark = pytest.mark.skipif(
    importlib.util.find_spec("qdrant_client") is None, reason="qdrant-client is not installed"
)

COLLECTION = "andromeda_memory"


def fill(path, db) -> dict[str, int]:
    """One point per message of the store; returns the points per session."""
    with closing(sqlite3.connect(db)) as conn:
        rows = conn.execute(
            "SELECT m.id, m.sessionId, m.seq, m.role, m.createdAt, s.owner FROM messages AS m"
            " JOIN sessions AS s ON s.id = m.sessionId"
        ).fetchall()
    from qdrant_client import QdrantClient, models

    client = QdrantClient(path=str(path))
    try:
        client.create_collection(COLLECTION, vectors_config=models.VectorParams(
            size=4, distance=models.Distance.COSINE))  # fmt: skip
        client.upsert(COLLECTION, [
            models.PointStruct(
                id=str(uuid.uuid5(uuid.NAMESPACE_URL, mid)), vector=[1.0, seq % 3, 0.5, 0.25],
                payload={"resource_id": owner or "terminal", "thread_id": sid, "message_id": mid,
                         "index": seq, "role": role, "created_at": at, "turn_id": f"{sid}:{seq // 2}"})
            for mid, sid, seq, role, at, owner in rows
        ])  # fmt: skip
        # A document chunk: not a conversation's, never deleted with one.
        client.upsert(COLLECTION, [models.PointStruct(
            id=str(uuid.uuid4()), vector=[0.1, 0.2, 0.3, 0.4],
            payload={"source": "https://example.org", "doc_id": "d1", "chunk": 0})])  # fmt: skip
    finally:
        client.close()
    per: dict[str, int] = {}
    for _, sid, *_ in rows:
        per[sid] = per.get(sid, 0) + 1
    return per


def points(path, **match) -> int:
    from qdrant_client import QdrantClient, models

    client = QdrantClient(path=str(path))
    try:
        if not match:
            return client.count(COLLECTION, exact=True).count
        (key, value), = match.items()  # fmt: skip
        flt = models.Filter(
            must=[models.FieldCondition(key=key, match=models.MatchValue(value=value))]
        )
        return client.count(COLLECTION, count_filter=flt, exact=True).count
    finally:
        client.close()


def use_qdrant(kaja, body: str) -> None:
    kaja.config.parent.mkdir(parents=True, exist_ok=True)
    kaja.config.write_text(f'[memory]\nprovider = "qdrant"\n\n[memory.qdrant]\n{body}')


@pytest.fixture
def store(demo_store):
    folder = demo_store.root / "qdrant"
    demo_store.points = fill(folder, demo_store.db)
    demo_store.folder = folder
    use_qdrant(demo_store, f'path = "{folder}"\n')
    return demo_store


def closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def doctor_check(kaja) -> dict:
    r = kaja("doctor", "--check", "qdrant", "--json")
    return json.loads(r.out)["checks"][0]


# --- doctor --------------------------------------------------------------------------
def test_doctor_counts_the_points(store):
    total = sum(store.points.values()) + 1
    check = doctor_check(store)
    assert check["status"] == "ok"
    assert check["summary"] == (
        f"the Qdrant folder {store.folder} answers: collection 'andromeda_memory' holds {total} points"
    )


def test_doctor_a_missing_collection(store):
    with open(store.config, "a") as f:
        f.write('collection = "kaja_memory"\n')
    check = doctor_check(store)
    assert check["status"] == "warn"
    assert "has no collection 'kaja_memory'" in check["summary"]
    assert "its collections: andromeda_memory" in check["details"]


def test_doctor_a_server_that_does_not_answer(demo_store):
    use_qdrant(demo_store, f'url = "http://127.0.0.1:{closed_port()}"\n')
    start = time.monotonic()
    r = demo_store("doctor", "--check", "qdrant")
    assert time.monotonic() - start < 30
    assert r.code == 1
    assert "✗ Qdrant at http://127.0.0.1:" in r.out and "does not answer" in r.out


def test_doctor_nothing_set(demo_store):
    use_qdrant(demo_store, "")
    check = doctor_check(demo_store)
    assert check["status"] == "error"
    assert check["summary"].startswith('memory.provider is "qdrant" but neither memory.qdrant.url')
    assert check["fix"] == "kaja config set memory.qdrant.url http://localhost:6333"


def test_doctor_without_qdrant_client(store, monkeypatch):
    monkeypatch.setitem(sys.modules, "qdrant_client", None)  # what an uninstalled package does
    check = doctor_check(store)
    assert check["status"] == "error"
    assert check["summary"] == 'memory.provider is "qdrant" but qdrant-client is not installed'
    assert check["fix"] == "install the optional driver: pip install 'kaja-cli[qdrant]'"


def test_local_provider_checks_and_imports_nothing(demo_store):
    r = demo_store.proc("doctor", "--json", env={"PYTHONPROFILEIMPORTTIME": "1"})
    assert r.code == 0
    assert "qdrant" not in {c["id"] for c in json.loads(r.out)["checks"]}
    assert "qdrant_client" not in r.err


# --- deleting takes the points along -------------------------------------------------------
def test_sessions_delete_deletes_their_points(store):
    total = points(store.folder)
    going = store.points[BUDGET] + store.points[TOMATO]
    r = store("sessions", "delete", BUDGET, TOMATO, "--yes")
    assert r.code == 0, r
    assert r.err.splitlines()[-1] == (
        f"kaja: deleted {going} points of them from Qdrant (andromeda_memory at the Qdrant folder"
        f" {store.folder})"
    )
    assert points(store.folder) == total - going
    assert points(store.folder, thread_id=BUDGET) == 0
    assert points(store.folder, doc_id="d1") == 1


def test_sessions_delete_json(store):
    r = store("sessions", "delete", BUDGET, "--yes", "--json")
    assert json.loads(r.out)["qdrant_points"] == store.points[BUDGET]


def test_wipe_owner_deletes_their_points(store):
    theirs = points(store.folder, resource_id=ANA)
    assert theirs > 0
    total = points(store.folder)
    dry = store("wipe", "--owner", ANA, "--dry-run")
    assert dry.code == 0 and f"kaja: and {theirs} points in Qdrant" in dry.err
    assert points(store.folder) == total
    doc = json.loads(store("wipe", "--owner", ANA, "--dry-run", "--json").out)
    assert doc["qdrant_points"] == theirs
    r = store("wipe", "--owner", ANA, "--yes")
    assert r.code == 0, r
    assert f"kaja: deleted {theirs} points of {ANA} from Qdrant" in r.err
    assert points(store.folder, resource_id=ANA) == 0
    assert points(store.folder) == total - theirs


def test_wipe_owner_again_deletes_points_left_behind(store):
    """A wipe whose commit went through but not its Qdrant step (here: the
    rows erased with the provider off) leaves points: running it again deletes them."""
    store.config.rename(store.root / "qdrant.toml")
    assert store("wipe", "--owner", ANA, "--yes").code == 0
    left = points(store.folder, resource_id=ANA)
    assert left > 0
    (store.root / "qdrant.toml").rename(store.config)
    r = store("wipe", "--owner", ANA, "--yes")
    assert r.code == 0, r
    assert f"deleted {left} points of {ANA} from Qdrant" in r.err
    assert points(store.folder, resource_id=ANA) == 0
    assert store("wipe", "--owner", ANA, "--yes").code == 3  # now nothing anywhere


def test_an_unreachable_server_stops_the_deletion_before_anything_goes(demo_store):
    use_qdrant(demo_store, f'url = "http://127.0.0.1:{closed_port()}"\n')
    before = sqlite3.connect(demo_store.db).execute("SELECT count(*) FROM messages").fetchone()
    for argv in (["sessions", "delete", BUDGET, "--yes"], ["wipe", "--owner", ANA, "--yes"]):
        r = demo_store(*argv)
        assert r.code == 1, r
        assert r.err.startswith("kaja: Qdrant at http://127.0.0.1:") and "does not answer" in r.err
        assert r.err.count("\n") == 1
    assert (
        sqlite3.connect(demo_store.db).execute("SELECT count(*) FROM messages").fetchone() == before
    )


def test_a_local_qdrant_held_by_another_process_is_busy(store):
    holder = subprocess.Popen(
        [sys.executable, "-c", HOLD, str(store.folder)], stdout=subprocess.PIPE, text=True
    )
    try:
        assert holder.stdout.readline().strip() == "holding"
        r = store.proc("sessions", "delete", BUDGET, "--yes")
        check = doctor_check(store)
    finally:
        holder.kill()
        holder.wait()
    assert r.code == 4, r
    assert "is in use by another process" in r.err and r.err.count("\n") == 1
    assert sqlite3.connect(store.db).execute(
        "SELECT count(*) FROM sessions WHERE id = ?", (BUDGET,)).fetchone() == (1,)  # fmt: skip
    assert check["status"] == "ok" and "in use by another process" in check["summary"]


HOLD = """
import sys, time
from qdrant_client import QdrantClient
client = QdrantClient(path=sys.argv[1])
print("holding", flush=True)
time.sleep(120)
"""


def test_a_bad_setting_is_one_line(demo_store):
    use_qdrant(demo_store, 'url = "ftp://example.org"\n')
    r = demo_store("sessions", "delete", BUDGET, "--yes")
    assert r.code == 1
    assert (
        r.err.startswith("kaja: ")
        and "memory.qdrant.url must be a URL starting with http://" in r.err
    )


def test_a_missing_qdrant_folder(demo_store):
    use_qdrant(demo_store, f'path = "{demo_store.root / "nowhere"}"\n')
    r = demo_store("sessions", "delete", BUDGET, "--yes")
    assert (r.code, r.err) == (
        1, f"kaja: no Qdrant folder at {demo_store.root / 'nowhere'}: check memory.qdrant.path\n"
    )  # fmt: skip
    assert doctor_check(demo_store)["status"] == "error"
    assert not (demo_store.root / "nowhere").exists()
