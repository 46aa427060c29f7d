"""Shared fixtures: paths to the real corpora in ../shared/data and a fresh
pilar home per test."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
SHARED_DATA = Path(os.environ.get("PILAR_SHARED_DATA", ROOT.parent / "shared" / "data"))
FIXTURES = ROOT / "tests" / "fixtures"


@pytest.fixture(scope="session", autouse=True)
def models_dir(tmp_path_factory) -> Path:
    """One folder of exported query encoders for the whole session
    (``PILAR_MODELS_DIR``, inherited by subprocesses): the model is exported
    for ONNX Runtime once, not once per fresh home."""
    folder = tmp_path_factory.mktemp("models")
    os.environ["PILAR_MODELS_DIR"] = str(folder)
    return folder


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


@pytest.fixture(scope="session")
def made_hostile() -> Path:
    """The hostile PDFs of ``tests/fixtures/hostile/make.py`` (a 3.5 MB file
    inflating to 1 GiB and others like it) with their ``index.jsonl``, made
    once per version of the generator into ``~/.cache/pilar/hostile``."""
    from tests.fixtures.hostile.make import cached

    return cached()


@pytest.fixture(scope="module")
def local_ray():
    """A local Ray instance (head and workers), started for a test module and
    stopped after it; its address."""
    ray = pytest.importorskip("ray", reason="the extra pilar[ray] is not installed")
    info = ray.init(num_cpus=2, include_dashboard=False, logging_level="ERROR",
                    log_to_driver=False)
    yield info.address_info["address"]
    ray.shutdown()


SERVER_MARKERS = {
    "neo4j": ("NEO4J_URI", "./scripts/test starts a real Neo4j"),
    "elasticsearch": ("ELASTICSEARCH_URL", "./scripts/test starts a real Elasticsearch"),
    "browser": ("PILAR_CHROMIUM", "./scripts/test sets it when Debian's chromium is installed"),
    "llm": ("LLM_TEST_BASE_URL", "./scripts/test starts llama-cpp-python's server "
            "(tests/servers/llm)"),
}
"""Marker -> (environment variable, how it gets set) for tests needing a server or tool."""


def pytest_collection_modifyitems(config, items):
    """Tests marked ``neo4j``, ``elasticsearch`` (``browser``) run whenever
    NEO4J_URI, ELASTICSEARCH_URL (PILAR_CHROMIUM) is set, and then fail if the server (browser) is not
    there; without it they are skipped, saying why."""
    for marker, (var, how) in SERVER_MARKERS.items():
        if os.environ.get(var):
            continue
        skip = pytest.mark.skip(reason=f"{var} is not set ({how})")
        for item in items:
            if marker in item.keywords:
                item.add_marker(skip)


@pytest.fixture(scope="session")
def llm_base_url() -> str:
    """The real OpenAI-compatible model server of tests/servers/llm (``/v1`` URL)."""
    url = os.environ.get("LLM_TEST_BASE_URL")
    assert url, "LLM_TEST_BASE_URL must be set for tests marked llm"
    return url


@pytest.fixture(scope="session")
def llm_tokenizer() -> str | None:
    """The served model's tokenizer folder (LLM_TEST_TOKENIZER), if saved."""
    return os.environ.get("LLM_TEST_TOKENIZER") or None


@pytest.fixture(scope="session")
def neo4j_uri() -> str:
    uri = os.environ.get("NEO4J_URI")
    assert uri, "NEO4J_URI must be set for tests marked neo4j"
    return uri


def open_neo4j(uri: str):
    """A Neo4jGraphStore on the real server at ``uri`` (NEO4J_USERNAME and
    NEO4J_PASSWORD when set)."""
    from pilar.graph.neo4j import Neo4jGraphStore

    auth = None
    if os.environ.get("NEO4J_USERNAME"):
        auth = (os.environ["NEO4J_USERNAME"], os.environ.get("NEO4J_PASSWORD", ""))
    return Neo4jGraphStore(uri, auth)


@pytest.fixture
def neo4j_store(neo4j_uri):
    """A Neo4jGraphStore on the real server, emptied before the test (schema kept)."""
    store = open_neo4j(neo4j_uri)
    with store.driver.session() as session:  # batched: the server may hold a big graph
        session.run("MATCH (n) WHERE NOT n:SchemaMigration "
                    "CALL (n) { DETACH DELETE n } IN TRANSACTIONS OF 10000 ROWS").consume()
    yield store
    store.close()


@pytest.fixture(scope="session")
def elasticsearch_url() -> str:
    url = os.environ.get("ELASTICSEARCH_URL")
    assert url, "ELASTICSEARCH_URL must be set for tests marked elasticsearch"
    return url


@pytest.fixture
def es_index(elasticsearch_url, request):
    """An ElasticsearchPageIndex on the real node under its own alias prefix
    (one index per test, deleted afterwards)."""
    import uuid

    from pilar.retrieval.elasticsearch import ElasticsearchPageIndex

    index = ElasticsearchPageIndex(elasticsearch_url, os.environ.get("ELASTICSEARCH_API_KEY"),
                                   prefix=f"pilar-test-{uuid.uuid4().hex[:12]}")
    yield index
    index.drop()
    index.close()


@pytest.fixture(params=["sqlite-ann", "sqlite-exact",
                        pytest.param("elasticsearch", marks=pytest.mark.elasticsearch)])
def page_index(request, tmp_path):
    """Every PageIndex backend in turn (one contract): a real SQLite file
    with either dense search (the ANN index beside it, or exact in memory), and
    the real Elasticsearch node when ELASTICSEARCH_URL is set."""
    if request.param.startswith("sqlite"):
        from pilar.retrieval.dense import AnnDense, ExactDense
        from pilar.retrieval.sqlite import SqlitePageIndex
        from pilar.db import SqliteDatabase

        db = SqliteDatabase(tmp_path / "pilar.sqlite")
        dense = AnnDense(db, tmp_path / "dense") if request.param == "sqlite-ann" else ExactDense(db)
        index = SqlitePageIndex(db, dense)
        yield index
        index.close()
    else:
        yield request.getfixturevalue("es_index")


@pytest.fixture(params=["sqlite", pytest.param("neo4j", marks=pytest.mark.neo4j)])
def graph_store(request, tmp_path):
    """Every GraphStore backend in turn (one contract, as Haystack's shared
    store tests): a real SQLite file, and the real Neo4j when NEO4J_URI is set."""
    if request.param == "sqlite":
        from pilar.graph.sqlite import SqliteGraphStore
        from pilar.db import SqliteDatabase

        yield SqliteGraphStore(SqliteDatabase(tmp_path / "pilar.sqlite"))
    else:
        yield request.getfixturevalue("neo4j_store")
