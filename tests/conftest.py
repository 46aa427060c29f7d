"""Shared fixtures: paths to the real corpora in ../shared/data and a fresh
pilar home per test."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
SHARED_DATA = Path(os.environ.get("PILAR_SHARED_DATA", ROOT.parent / "shared" / "data"))
FIXTURES = ROOT / "tests" / "fixtures"


@pytest.fixture(scope="session")
def shared_data() -> Path:
    """``../shared/data`` beside the checkout (real corpora); required."""
    assert SHARED_DATA.is_dir(), f"shared data not found at {SHARED_DATA}"
    return SHARED_DATA


@pytest.fixture(scope="session")
def wtq_pages(shared_data: Path) -> Path:
    return shared_data / "wtq" / "dev" / "pages"


@pytest.fixture(scope="session")
def hostile(shared_data: Path) -> Path:
    return shared_data / "hostile"


def pytest_collection_modifyitems(config, items):
    """Tests marked ``neo4j`` run whenever NEO4J_URI is set (and then fail if
    the server is unreachable); without it they are skipped, saying why."""
    if os.environ.get("NEO4J_URI"):
        return
    skip = pytest.mark.skip(reason="NEO4J_URI is not set (./scripts/test starts a real Neo4j)")
    for item in items:
        if "neo4j" in item.keywords:
            item.add_marker(skip)


@pytest.fixture(scope="session")
def neo4j_uri() -> str:
    uri = os.environ.get("NEO4J_URI")
    assert uri, "NEO4J_URI must be set for tests marked neo4j"
    return uri


@pytest.fixture
def neo4j_store(neo4j_uri):
    """A Neo4jGraphStore on the real server, emptied before the test (schema kept)."""
    from pilar.graph.neo4j import Neo4jGraphStore

    auth = None
    if os.environ.get("NEO4J_USERNAME"):
        auth = (os.environ["NEO4J_USERNAME"], os.environ.get("NEO4J_PASSWORD", ""))
    store = Neo4jGraphStore(neo4j_uri, auth)
    with store.driver.session() as session:  # batched: the server may hold a big graph
        session.run("MATCH (n) WHERE NOT n:SchemaMigration "
                    "CALL (n) { DETACH DELETE n } IN TRANSACTIONS OF 10000 ROWS").consume()
    yield store
    store.close()


@pytest.fixture(params=["sqlite", pytest.param("neo4j", marks=pytest.mark.neo4j)])
def graph_store(request, tmp_path):
    """Every GraphStore backend in turn (one contract, as Haystack's shared
    store tests): a real SQLite file, and the real Neo4j when NEO4J_URI is set."""
    if request.param == "sqlite":
        from pilar.graph.sqlite import SqliteGraphStore
        from pilar.stores import SqliteDatabase

        yield SqliteGraphStore(SqliteDatabase(tmp_path / "pilar.sqlite"))
    else:
        yield request.getfixturevalue("neo4j_store")
