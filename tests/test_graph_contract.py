"""One GraphStore contract suite, run against every backend (as Haystack's
shared document-graph_store tests): the embedded SQLite file always, a real Neo4j
when NEO4J_URI is set (./scripts/test starts one)."""

from __future__ import annotations

import dataclasses

from pilar.ingest import parse
from pilar.model import Assertion, Entity, SameAs
from tests.conftest import FIXTURES

CORPUS = FIXTURES / "corpus"


def _with_graph(parsed, people: list[str]):
    """Attach entities and assertions naming ``people`` to the first supports."""
    doc = parsed.document.doc_id
    sup = [s.support_id for s in parsed.supports]
    parsed.entities = [Entity(f"person:{name.lower()}", name, "person", (name.split()[-1],),
                              (sup[i],)) for i, name in enumerate(people)]
    parsed.assertions = [
        Assertion(f"{doc}:a{i}", doc, name, "related_to", parsed.document.title, "text",
                  (sup[i],), {"section": "lead"}, 0.9, True, "test",
                  subject_entity=f"person:{name.lower()}")
        for i, name in enumerate(people)]
    return parsed


def test_write_then_read_back(graph_store):
    parsed = parse(CORPUS / "204-541.html")
    graph_store.write_document(parsed)
    doc = graph_store.get_document(parsed.document.doc_id)
    assert doc.uri == parsed.document.uri and doc.sha256 == parsed.document.sha256
    assert doc.ingested_at
    assert graph_store.find_by_sha256(doc.sha256).doc_id == doc.doc_id
    assert [d.doc_id for d in graph_store.find_by_uri(doc.uri)] == [doc.doc_id]
    page_id = parsed.pages[0].page_id
    assert graph_store.pages([page_id])[page_id].text == parsed.pages[0].text
    supports = graph_store.supports_on_pages([page_id])[page_id]
    assert [s.support_id for s in supports] == [s.support_id for s in parsed.supports]
    assert supports[3].provenance == parsed.supports[3].provenance
    units = graph_store.units_on_pages([page_id])[page_id]
    assert [u.completed_text for u in units] == [u.completed_text for u in parsed.units]
    rows = [u for u in units if u.kind == "row"]
    assert rows and rows[0].table_index is not None and rows[0].headers


def test_stats_have_the_same_keys_and_count_edges(graph_store):
    parsed = parse(CORPUS / "204-541.html")
    graph_store.write_document(_with_graph(parsed, ["Ratan Planet", "Krishna Tower"]))
    stats = graph_store.stats()
    assert set(stats) >= {"documents", "pages", "supports", "provenance", "assertions", "entities",
                          "IN_DOCUMENT", "NEXT", "HAS_PROVENANCE", "ON_PAGE", "SUPPORTED_BY",
                          "SUBJECT_OF", "OBJECT", "MENTIONED_IN", "SAME_AS"}
    n = len(parsed.supports)
    assert (stats["documents"], stats["pages"], stats["supports"], stats["provenance"]) == (1, 1, n, n)
    assert (stats["HAS_PROVENANCE"], stats["ON_PAGE"], stats["IN_DOCUMENT"]) == (n, n, 1)
    assert (stats["assertions"], stats["entities"], stats["SUPPORTED_BY"]) == (2, 2, 2)
    assert (stats["SUBJECT_OF"], stats["MENTIONED_IN"], stats["NEXT"]) == (2, 2, 0)
    assert stats["units"] == len(parsed.units)


def test_pages_are_chained_with_next(graph_store):
    parsed = parse(CORPUS / "204-268.html")
    first = parsed.pages[0]
    parsed.pages = [first] + [dataclasses.replace(first, number=i, text=f"page {i}")
                              for i in (2, 3)]
    parsed.document.n_pages = 3
    graph_store.write_document(parsed)
    assert graph_store.stats()["NEXT"] == 2
    assert graph_store.stats()["pages"] == 3


def test_replace_and_delete_keep_entities_other_documents_use(graph_store):
    a = _with_graph(parse(CORPUS / "204-541.html"), ["Ratan Planet", "Krishna Tower"])
    b = _with_graph(parse(CORPUS / "204-268.html"), ["Ratan Planet"])
    b.same_as = [SameAs("person:ratan planet", "person:krishna tower", 0.5, "test")]
    graph_store.write_document(a)
    graph_store.write_document(b)
    assert graph_store.stats()["entities"] == 2 and graph_store.stats()["SAME_AS"] == 1
    assert graph_store.delete_document(a.document.doc_id) is True
    assert graph_store.delete_document(a.document.doc_id) is False
    stats = graph_store.stats()
    assert stats["documents"] == 1 and stats["entities"] == 1  # Krishna Tower was only in a
    assert list(graph_store.get_entities(["person:ratan planet"])) == ["person:ratan planet"]
    assert stats["SAME_AS"] == 0
    # replacing b by a new version drops b's rows in the same write
    c = parse(CORPUS / "204-903.html")
    graph_store.write_document(c, replaces=[b.document.doc_id])
    assert [d.doc_id for d in graph_store.documents()] == [c.document.doc_id]
    stats = graph_store.stats()  # only c's own graph is left (parse builds it)
    assert (stats["entities"], stats["assertions"]) == (len(c.entities), len(c.assertions))


def test_entity_candidates_match_names_and_aliases(graph_store):
    graph_store.write_document(_with_graph(parse(CORPUS / "204-541.html"), ["Ratan Planet"]))
    assert [e.entity_id for e in graph_store.entity_candidates("planet")] == ["person:ratan planet"]
    assert graph_store.entity_candidates("nothing like it") == []


def test_assertions_round_trip_with_supports(graph_store):
    parsed = _with_graph(parse(CORPUS / "204-541.html"), ["Ratan Planet", "Krishna Tower"])
    graph_store.write_document(parsed)
    got = graph_store.assertions_of(parsed.document.doc_id)
    assert [(a.subject, a.predicate, a.supports, a.subject_entity, a.qualifiers) for a in got] == [
        (a.subject, a.predicate, a.supports, a.subject_entity, a.qualifiers)
        for a in parsed.assertions]
