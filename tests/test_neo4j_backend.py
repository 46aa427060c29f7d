"""The Neo4j backend end to end on a real server: the whole product switched
by PILAR_GRAPH=neo4j, counts identical to the embedded store, read-only
Cypher exploration (its refusals in test_cypher_guard.py), idempotent migrations."""

from __future__ import annotations

import gc
import logging

import pytest

from pilar import Pilar
from pilar.config import Settings
from pilar.graph.neo4j_rows import batch_rows
from pilar.ingest import parse
from tests.conftest import FIXTURES

pytestmark = pytest.mark.neo4j
CORPUS = FIXTURES / "corpus"
DOCS = [CORPUS / "204-541.html", CORPUS / "204-445.html", CORPUS / "203-534.html"]


@pytest.fixture
def on_neo4j(neo4j_store, neo4j_uri, tmp_path) -> Pilar:
    return Pilar(home=tmp_path / "neo", settings=Settings(graph="neo4j", neo4j_uri=neo4j_uri))


def test_same_counts_as_the_embedded_store(on_neo4j: Pilar, tmp_path):
    embedded = Pilar(home=tmp_path / "sqlite")
    assert [r.status for r in embedded.ingest(DOCS)] == ["ingested"] * 3
    assert [r.status for r in on_neo4j.ingest(DOCS)] == ["ingested"] * 3
    assert on_neo4j.graph.name == "neo4j"
    neo, lite = on_neo4j.stats(), embedded.stats()
    assert neo == lite
    assert neo["documents"] == 3 and neo["supports"] > 40


def test_search_delete_and_reingest_through_neo4j(on_neo4j: Pilar):
    results = on_neo4j.ingest(DOCS)
    hit = on_neo4j.search("what is the tallest building in kanpur?", budget=800, k=3)
    assert hit.pages[0].source.endswith("204-541.html")
    assert "Ratan Planet" in hit.packet.text and hit.packet.tokens <= 800
    assert [r.status for r in on_neo4j.ingest(DOCS[:1])] == ["unchanged"]
    assert on_neo4j.delete(results[0].doc_id) is True
    assert on_neo4j.stats()["documents"] == 2
    assert on_neo4j.index.count() == 2



def test_a_search_reads_the_graph_in_a_few_queries(on_neo4j: Pilar, tmp_path, monkeypatch):
    """Round trips per search do not grow with the pages or entities touched:
    one document read for the shortlist, the entity full-text lookup, one
    expansion read, at most one document read for expanded pages, supports
    and units of all packed pages (one read for both, none when the pages
    are in the page cache). Results as embedded."""
    embedded = Pilar(home=tmp_path / "sqlite")
    embedded.ingest(DOCS)
    on_neo4j.ingest(DOCS)
    q = "which buildings in kanpur are taller than ratan planet?"
    on_neo4j.search(q)
    queries = []
    execute_query = on_neo4j.graph.driver.execute_query

    def counted(query, *args, **kwargs):
        queries.append(query)
        return execute_query(query, *args, **kwargs)

    monkeypatch.setattr(on_neo4j.graph.driver, "execute_query", counted)
    on_neo4j.pages.clear()  # the page cache would serve supports and units
    hit = on_neo4j.search(q, k=10)
    assert 4 <= len(queries) <= 5, queries
    cold = len(queries)
    queries.clear()
    assert on_neo4j.search(q, k=10).packet.text == hit.packet.text
    assert len(queries) == cold - 1, queries  # supports and units came from the cache
    assert len(hit.pages) == 3 and hit.pages[0].source.endswith("204-541.html")
    assert all(p.title and p.source for p in hit.pages)
    lite = embedded.search(q, k=10)
    assert [(p.page_id, p.score, p.title) for p in hit.pages] == [
        (p.page_id, p.score, p.title) for p in lite.pages]
    assert hit.packet.text == lite.packet.text


def test_a_write_sends_rows_the_driver_logs_by_count(neo4j_store, caplog):
    """The driver formats every RUN's parameters for its debug log, even when
    that log is off: a write's rows stand there as their count, not their
    text (as a plain list, they are longer than any line allowed here), and
    the garbage collector paused while they are built is on again."""
    parsed = parse(DOCS[0])
    assert max(len(repr(list(rows))) for _, rows in batch_rows([parsed])) > 4000
    with caplog.at_level(logging.DEBUG, logger="neo4j"):
        neo4j_store.write_documents([(parsed, [])])
    runs = [r.getMessage() for r in caplog.records if " C: RUN " in r.getMessage()]
    assert "ChangeStamp" in runs.pop()  # the write ends by setting the change stamp (no rows)
    assert len(runs) >= 5
    assert max(len(m) for m in runs) < 4000
    assert sum("rows>" in m for m in runs) == len(runs)
    assert not any(parsed.pages[0].text[:80] in m for m in runs)
    assert gc.isenabled()
    assert neo4j_store.stats()["supports"] == len(parsed.supports)


def test_migrations_are_recorded_and_idempotent(neo4j_store):
    versions = [r["v"] for r in neo4j_store._read(
        "MATCH (m:SchemaMigration) RETURN m.version AS v ORDER BY v")]
    assert versions[:2] == [1, 2]
    assert neo4j_store.migrate() == []
    names = {r["name"] for r in neo4j_store._read("SHOW INDEXES YIELD name RETURN name")}
    assert {"entity_names", "page_doc", "document_sha256"} <= names
    assert "Neo4j Kernel 5.26" in neo4j_store.server_version()


def test_explorer_binds_params_caps_rows_and_converts_values(on_neo4j: Pilar):
    on_neo4j.ingest(DOCS)
    res = on_neo4j.cypher("MATCH (d:Document) WHERE d.uri ENDS WITH $end RETURN d, d.title AS t",
                          {"end": "204-541.html"})
    assert res.columns == ["d", "t"] and len(res.rows) == 1
    node = res.rows[0]["d"]
    assert node["labels"] == ["Document"] and node["properties"]["uri"].endswith("204-541.html")
    capped = on_neo4j.cypher("MATCH (s:Support) RETURN s.support_id AS id", row_cap=5)
    assert len(capped.rows) == 5 and capped.truncated
    path = on_neo4j.cypher("MATCH p = (:Support)-[:HAS_PROVENANCE]->(:Provenance)-[:ON_PAGE]->(:Page) "
                           "RETURN p LIMIT 1").rows[0]["p"]
    assert [r["type"] for r in path["relationships"]] == ["HAS_PROVENANCE", "ON_PAGE"]


def test_unreachable_server_is_a_clear_error(tmp_path):
    from pilar.errors import StoreError

    with pytest.raises(StoreError, match="cannot reach Neo4j at bolt://127.0.0.1:1"):
        Pilar(home=tmp_path, settings=Settings(graph="neo4j", neo4j_uri="bolt://127.0.0.1:1"))
