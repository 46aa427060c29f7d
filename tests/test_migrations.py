"""Stores written before collections had documents and entities of their own
keep working without a re-ingest: the graph migrations give every collection
its own copy of the entities its documents used (SQLite migration 9, Neo4j
migration 6), on a real SQLite file and the real Neo4j of tests/servers; a
store written before units kept their packing statistics (SQLite migration
10) gets them on its first search; a store written before mentions carried
their support's document and page (SQLite migration 12) reads the same
bridges once they are filled."""

from __future__ import annotations

import pytest

from tests.conftest import FIXTURES
from tests.test_graph_contract import _linked_pair


def _legacy(graph_store) -> tuple[str, str]:
    """Two documents as a store written before held them
    (:func:`~tests.test_graph_contract._linked_pair`): ``a`` in ``default``,
    ``b`` in ``team-a`` naming Tilak Singh too, all through the shared,
    unprefixed entities. Returns the two doc ids."""
    a, b = _linked_pair(graph_store, ("Tilak Singh",), "team-a")
    return a.document.doc_id, b.document.doc_id


def _check_split(graph_store, a: str, b: str) -> None:
    """What the migration leaves of :func:`_legacy`'s store."""
    entities = graph_store.get_entities([
        "person:ratan planet", "person:krishna tower", "person:tilak singh",
        "team-a:person:ratan planet", "team-a:person:krishna tower",
        "team-a:person:tilak singh"])
    assert {e: x.collection for e, x in entities.items()} == {
        "person:ratan planet": "default", "person:krishna tower": "default",
        "team-a:person:ratan planet": "team-a", "team-a:person:krishna tower": "team-a",
        "team-a:person:tilak singh": "team-a"}   # Tilak Singh was team-a's alone
    assert entities["team-a:person:ratan planet"].aliases == ("Planet",)
    uses = graph_store.entity_documents(list(entities))
    assert uses == {"person:ratan planet": [a], "person:krishna tower": [a],
                    "team-a:person:ratan planet": [b], "team-a:person:krishna tower": [b],
                    "team-a:person:tilak singh": [b]}
    objects = {x.assertion_id: x.object_entity for x in graph_store.assertions_of(b)}
    assert objects[f"{b}:a9"] == "team-a:person:krishna tower"
    assert {(l.source, l.target) for l in graph_store.same_as_links()} == {
        ("person:ratan planet", "person:krishna tower"),
        ("team-a:person:ratan planet", "team-a:person:krishna tower")}
    found = graph_store.entity_candidates("planet", collections=["team-a"])
    assert [e.entity_id for e in found] == ["team-a:person:ratan planet"]
    assert [d.collection for d in graph_store.documents([a, b])] == ["default", "team-a"]


def test_sqlite_store_of_shared_entities_is_split_per_collection(tmp_path, monkeypatch):
    import pilar.db
    from pilar.db import SqliteDatabase
    from pilar.graph.sqlite import SqliteGraphStore
    from pilar.migrations import migration_files

    files = migration_files("sqlite", ".sql")
    assert [v for v, _ in files][8:] == [9, 10, 11, 12]
    monkeypatch.setattr(pilar.db, "migration_files", lambda *_: files[:8])
    old = SqliteGraphStore(SqliteDatabase(tmp_path / "pilar.sqlite"))
    a, b = _legacy(old)
    old.close()
    monkeypatch.undo()
    store = SqliteGraphStore(SqliteDatabase(tmp_path / "pilar.sqlite"))
    assert store.db.schema_version == 12 and store.migrate() == []
    _check_split(store, a, b)
    indexes = {r[0] for r in store.db.conn.execute(
        "SELECT name FROM sqlite_master WHERE type = 'index' AND tbl_name = 'supports'")}
    assert "supports_text" in indexes  # version 11: supports looked up by their text
    store.close()


def test_sqlite_store_before_unit_statistics_gets_them_on_first_search(tmp_path, monkeypatch):
    import pilar.db
    from pilar import Pilar
    from pilar.migrations import migration_files

    files = migration_files("sqlite", ".sql")
    assert files[9][0] == 10 and files[9][1].name == "0010_unit_statistics.sql"
    monkeypatch.setattr(pilar.db, "migration_files", lambda *_: files[:9])
    old = Pilar(home=tmp_path)
    old.writer.unit_stats = lambda units: None  # as a version without them wrote
    (r,) = old.ingest([FIXTURES / "corpus" / "204-541.html"])
    assert r.status == "ingested" and old.graph.db.schema_version == 9
    old.close()
    monkeypatch.undo()
    p = Pilar(home=tmp_path)
    assert p.graph.db.schema_version == 12
    pid = f"{r.doc_id}:1"
    assert [u.stats for u in p.graph.units_on_pages([pid])[pid]] == [None] * r.n_units
    hit = p.search("what is the tallest building in kanpur?", budget=1024)
    assert hit.pages[0].page_id == pid
    units = p.graph.units_on_pages([pid])[pid]
    assert len(units) == r.n_units == 9
    assert all(u.stats is not None and u.stats.tokenizer == p.tokens.name for u in units)
    p.close()


def test_sqlite_store_before_mention_places_reads_the_same_bridges(tmp_path, monkeypatch,
                                                                    shared_data):
    import pilar.db
    from pilar.db import SqliteDatabase
    from pilar.graph.sqlite import SqliteGraphStore
    from pilar.ingest import parse
    from pilar.migrations import migration_files

    files = migration_files("sqlite", ".sql")
    assert files[11][0] == 12 and files[11][1].name == "0012_mention_places.sql"
    docs = [parse(shared_data / "multihop2" / f"{n}.html") for n in
            ["ont_incident_ir_24_117", "ont_vessel_schedule_w24", "ont_vessel_schedule_w23"]]
    details = [s.support_id for s in docs[0].supports if "VC-24-1183" in s.text]
    fresh = SqliteGraphStore(SqliteDatabase(tmp_path / "fresh.sqlite"))
    for parsed in docs:
        fresh.write_document(parsed)
    expected = fresh.bridges(details, 10, 20)
    fresh.close()
    monkeypatch.setattr(pilar.db, "migration_files", lambda *_: files[:11])
    old = SqliteGraphStore(SqliteDatabase(tmp_path / "pilar.sqlite"))
    for parsed in docs[:2]:
        old.write_document(parsed)
    old.close()
    monkeypatch.undo()
    store = SqliteGraphStore(SqliteDatabase(tmp_path / "pilar.sqlite"))
    assert store.db.schema_version == 12
    store.write_document(docs[2])  # a mention written after: placed by the trigger
    places = store.db.conn.execute(
        "SELECT count(*), count(doc_id), count(page) FROM mentions").fetchone()
    assert places[0] > 0 and places == (places[0],) * 3
    found = store.bridges(details, 10, 20)
    assert found == expected and any(b.entity_id == "code:vc241183" and len(b.pages) == 2
                                     for b in found)
    store.close()


@pytest.mark.neo4j
def test_neo4j_graph_of_shared_entities_is_split_per_collection(neo4j_store):
    a, b = _legacy(neo4j_store)
    with neo4j_store.driver.session() as session:  # as if migration 6 had not run yet
        session.run("MATCH (m:SchemaMigration {version: 6}) DELETE m").consume()
    assert neo4j_store.migrate() == [6]
    _check_split(neo4j_store, a, b)
