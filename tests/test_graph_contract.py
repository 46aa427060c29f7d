"""One GraphStore contract suite, run against every backend (as Haystack's
shared document-graph_store tests): the embedded SQLite file always, a real Neo4j
when NEO4J_URI is set (./scripts/test starts one)."""

from __future__ import annotations

import dataclasses
import hashlib

from pilar.graph.linking import in_collection
from pilar.ingest import document_id, parse
from pilar.model import Assertion, Entity, SameAs, UnitStats
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
    [doc] = graph_store.documents([parsed.document.doc_id])
    assert doc.uri == parsed.document.uri and doc.sha256 == parsed.document.sha256
    assert doc.ingested_at
    assert graph_store.find_by_sha256(doc.sha256, "default").doc_id == doc.doc_id
    assert graph_store.find_by_sha256(doc.sha256, "other") is None
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


def test_a_batch_stores_a_shared_entity_once_with_each_alias_once(graph_store):
    docs = [_with_graph(parse(CORPUS / name), ["Ratan Planet"])
            for name in ("204-541.html", "204-268.html", "204-903.html")]
    for parsed in docs[1:]:  # two later documents bring the same new alias
        parsed.entities = [dataclasses.replace(e, aliases=("Ratan",)) for e in parsed.entities]
    graph_store.write_documents([(parsed, []) for parsed in docs])
    [entity] = graph_store.get_entities(["person:ratan planet"]).values()
    assert sorted(entity.aliases) == ["Planet", "Ratan"]
    stats = graph_store.stats()
    assert (stats["documents"], stats["entities"], stats["MENTIONED_IN"], stats["SUBJECT_OF"]) == (
        3, 1, 3, 3)
    assert [d.status for d in graph_store.documents(statuses=None)] == ["ready"] * 3


def test_entity_candidates_match_names_and_aliases(graph_store):
    graph_store.write_document(_with_graph(parse(CORPUS / "204-541.html"), ["Ratan Planet"]))
    assert [e.entity_id for e in graph_store.entity_candidates("planet")] == ["person:ratan planet"]
    assert graph_store.entity_candidates("nothing like it") == []


def test_entity_candidates_of_many_names_in_one_read(graph_store):
    parsed = _with_graph(parse(CORPUS / "204-541.html"), ["Ratan Planet", "Krishna Tower",
                                                          "Ratan Square"])
    graph_store.write_document(parsed)
    names = ["ratan", "nothing like it", "", "Krishna Planet", "ratan"]
    many = graph_store.entity_candidates_many(names, 2, ["default"])
    assert many == [graph_store.entity_candidates(n, 2, ["default"]) for n in names]
    assert many[1] == many[2] == []
    assert {e.entity_id for e in many[3]} == {"person:krishna tower", "person:ratan planet"}
    assert len(many[0]) == 2 and {e.entity_id for e in many[0]} <= {
        "person:ratan planet", "person:ratan square"}
    assert many[0][0].aliases and many[0][0].collection == "default"
    assert graph_store.entity_candidates_many(["ratan"], 5, ["other"]) == [[]]
    assert graph_store.entity_candidates_many([]) == []


def _in(collection: str, path, people: list[str]):
    """``path`` parsed as a document of ``collection`` (its id and entities
    as the writer gives them), with entities naming ``people``."""
    data = path.read_bytes()
    sha = hashlib.sha256(data).hexdigest()
    parsed = _with_graph(parse(data, uri=str(path), doc_id=document_id(sha, collection)), people)
    parsed.document.collection = collection
    in_collection(parsed)
    return parsed


def test_the_same_bytes_in_two_collections_are_two_documents(graph_store):
    path = CORPUS / "204-541.html"
    a, b = _in("team-a", path, ["Ratan Planet"]), _in("team-b", path, ["Ratan Planet"])
    graph_store.write_document(a)
    graph_store.write_document(b)
    sha, uri = a.document.sha256, str(path)
    ids = a.document.doc_id, b.document.doc_id
    assert ids[0] != ids[1] and a.pages[0].page_id != b.pages[0].page_id
    assert [graph_store.find_by_sha256(sha, c).doc_id for c in ("team-a", "team-b")] == list(ids)
    assert graph_store.find_by_sha256(sha, "default") is None
    assert [d.doc_id for d in graph_store.find_by_uri(uri, "team-b")] == [ids[1]]
    assert sorted(d.doc_id for d in graph_store.find_by_uri(uri)) == sorted(ids)
    # each collection has its own entity, found only within it
    found = graph_store.entity_candidates("planet", collections=["team-b"])
    assert [(e.entity_id, e.collection) for e in found] == [
        ("team-b:person:ratan planet", "team-b")]
    assert {e.entity_id for e in graph_store.entity_candidates("planet")} == {
        "team-a:person:ratan planet", "team-b:person:ratan planet"}
    assert graph_store.entity_documents(["team-a:person:ratan planet"]) == {
        "team-a:person:ratan planet": [ids[0]]}
    # deleting one leaves the other whole
    assert graph_store.delete_document(ids[0]) is True
    [left] = graph_store.documents(statuses=None)
    assert (left.doc_id, left.collection, left.sources) == (ids[1], "team-b", [uri])
    assert graph_store.supports_on_pages([b.pages[0].page_id])[b.pages[0].page_id]
    assert list(graph_store.get_entities(["team-a:person:ratan planet",
                                          "team-b:person:ratan planet"])) == [
        "team-b:person:ratan planet"]


def test_assertions_round_trip_with_supports(graph_store):
    parsed = _with_graph(parse(CORPUS / "204-541.html"), ["Ratan Planet", "Krishna Tower"])
    graph_store.write_document(parsed)
    got = graph_store.assertions_of(parsed.document.doc_id)
    assert [(a.subject, a.predicate, a.supports, a.subject_entity, a.qualifiers) for a in got] == [
        (a.subject, a.predicate, a.supports, a.subject_entity, a.qualifiers)
        for a in parsed.assertions]


def test_documents_by_id_in_one_read(graph_store):
    a = parse(CORPUS / "204-541.html")
    b = parse(CORPUS / "204-268.html")
    graph_store.write_document(a)
    graph_store.write_document(b)
    ids = {a.document.doc_id: a.document, b.document.doc_id: b.document}
    got = graph_store.documents([b.document.doc_id, "0000000000000000", a.document.doc_id])
    assert sorted(d.doc_id for d in got) == sorted(ids)
    for d in got:
        assert (d.uri, d.title, d.sha256, d.n_pages) == (
            ids[d.doc_id].uri, ids[d.doc_id].title, ids[d.doc_id].sha256, 1)
        assert d.ingested_at
    assert [d.doc_id for d in graph_store.documents([a.document.doc_id])] == [a.document.doc_id]
    assert graph_store.documents([]) == [] and graph_store.documents(["0000000000000000"]) == []
    assert sorted(d.doc_id for d in graph_store.documents()) == sorted(ids)


def test_supports_units_and_sections_of_several_pages_in_one_read(graph_store):
    a = parse(CORPUS / "204-541.html")
    b = parse(CORPUS / "204-268.html")
    graph_store.write_document(a)
    graph_store.write_document(b)
    pa, pb = a.pages[0].page_id, b.pages[0].page_id
    ids = [pb, "0000000000000000:1", pa]
    supports = graph_store.supports_on_pages(ids)
    assert list(supports) == ids and supports["0000000000000000:1"] == []
    assert supports[pa] == a.supports and supports[pb] == b.supports  # order and provenance
    units = graph_store.units_on_pages(ids)
    assert list(units) == ids and units["0000000000000000:1"] == []
    assert units[pa] == a.units and units[pb] == b.units
    sections = graph_store.page_sections(ids)
    assert sections[pb] == {s.provenance.section_path for s in b.supports}
    assert ("Child Maurice", "Synopsis") in sections[pb]
    assert sections[pa] == {("204-541",), ("204-541", "References"), ("204-541", "See also")}
    assert sections["0000000000000000:1"] == set()
    assert graph_store.supports_on_pages([]) == {} and graph_store.units_on_pages([]) == {}


def test_page_material_is_supports_and_units_in_one_read(graph_store):
    a = parse(CORPUS / "204-541.html")
    b = parse(CORPUS / "204-268.html")
    graph_store.write_document(a)
    graph_store.write_document(b)
    pa, pb = a.pages[0].page_id, b.pages[0].page_id
    ids = [pb, "0000000000000000:1", pa]
    material = graph_store.page_material(ids)
    assert list(material) == ids and material["0000000000000000:1"] == ([], [])
    assert material[pa] == (a.supports, a.units) and material[pb] == (b.supports, b.units)
    assert [u.stats for u in material[pa][1]] == [None] * len(a.units)  # none written
    assert graph_store.page_material([]) == {}


def test_unit_statistics_are_stored_and_read_back(graph_store):
    a = parse(CORPUS / "204-541.html")
    row = next(u for u in a.units if u.kind == "row")
    row.stats = UnitStats({"ratan": 2, "planet": 1}, 3, 17, "tok-a")  # written with the unit
    graph_store.write_document(a)
    pid = a.pages[0].page_id
    first = a.units[0]
    graph_store.set_unit_stats({first.unit_id: UnitStats({"kanpur": 1}, 1, 5, "tok-b"),
                                "no-such-unit": UnitStats({}, 0, 0, "tok-b")})
    units = {u.unit_id: u for u in graph_store.page_material([pid])[pid][1]}
    assert units[row.unit_id].stats == UnitStats({"ratan": 2, "planet": 1}, 3, 17, "tok-a")
    assert units[first.unit_id].stats == UnitStats({"kanpur": 1}, 1, 5, "tok-b")
    assert units[a.units[2].unit_id].stats is None
    assert graph_store.units_on_pages([pid])[pid][0].stats == units[first.unit_id].stats


def test_expansion_pages_reach_pages_by_kind_in_one_read(graph_store):
    a, b = _linked_pair(graph_store)
    bd = b.document.doc_id
    pa, pb = a.pages[0].page_id, b.pages[0].page_id
    assert pa < pb  # pages are ranked by (document, page number)
    sa = [s.support_id for s in a.supports]
    sb = [s.support_id for s in b.supports]
    ad = a.document.doc_id
    krishna, ratan = "entity:person:krishna tower", "entity:person:ratan planet"

    got = graph_store.expansion_pages(["person:krishna tower", "person:ratan planet"])
    assert got == {
        # a page reached from both entities keeps the first entity's path
        "mention": {pa: [krishna, "MENTIONED_IN", f"support:{sa[1]}", f"page:{pa}"],
                    pb: [ratan, "MENTIONED_IN", f"support:{sb[0]}", f"page:{pb}"]},
        "alias": {pa: [krishna, "SAME_AS(test, 0.50)", ratan, "MENTIONED_IN", f"support:{sa[0]}",
                       f"page:{pa}"],
                  pb: [krishna, "SAME_AS(test, 0.50)", ratan, "MENTIONED_IN", f"support:{sb[0]}",
                       f"page:{pb}"]},
        "assertion": {pa: [krishna, f"assertion:{ad}:a1 (related_to)", "SUPPORTED_BY",
                           f"support:{sa[1]}", f"page:{pa}"],
                      pb: [krishna, f"assertion:{bd}:a9 (related_to)", "SUPPORTED_BY",
                           f"support:{sb[2]}", f"page:{pb}"]},
    }
    assert [list(v) for v in got.values()] == [[pa, pb]] * 3
    # the other entity first: its paths win; SAME_AS is followed both ways
    first = graph_store.expansion_pages(["person:ratan planet", "person:krishna tower"])
    assert first["mention"][pa] == [ratan, "MENTIONED_IN", f"support:{sa[0]}", f"page:{pa}"]
    assert first["alias"] == {pa: [ratan, "SAME_AS(test, 0.50)", krishna, "MENTIONED_IN",
                                   f"support:{sa[1]}", f"page:{pa}"],
                              pb: got["alias"][pb]}
    assert first["assertion"][pb] == [ratan, f"assertion:{bd}:a0 (related_to)", "SUPPORTED_BY",
                                      f"support:{sb[0]}", f"page:{pb}"]
    # the limit holds per entity and kind: Ratan Planet's first page is a's
    assert graph_store.expansion_pages(["person:ratan planet"], limit=1) == {
        "mention": {pa: first["mention"][pa]}, "alias": {pa: first["alias"][pa]},
        "assertion": {pa: [ratan, f"assertion:{ad}:a0 (related_to)", "SUPPORTED_BY",
                           f"support:{sa[0]}", f"page:{pa}"]}}
    assert graph_store.expansion_pages(["person:ratan planet"])["mention"] == first["mention"] | {
        pb: [ratan, "MENTIONED_IN", f"support:{sb[0]}", f"page:{pb}"]}
    empty = {"mention": {}, "alias": {}, "assertion": {}}
    assert graph_store.expansion_pages(["person:nobody"]) == empty
    assert graph_store.expansion_pages([]) == empty


def test_mention_pages_count_the_distinct_pages_mentioning_each_entity(graph_store):
    _linked_pair(graph_store)  # Ratan Planet is mentioned in both documents, Krishna Tower in a
    assert graph_store.mention_pages(
        ["person:ratan planet", "person:krishna tower", "person:nobody"]) == {
        "person:ratan planet": 2, "person:krishna tower": 1, "person:nobody": 0}
    assert graph_store.mention_pages([]) == {}


def test_a_document_has_several_sources(graph_store):
    parsed = parse(CORPUS / "204-541.html")
    doc_id, first = parsed.document.doc_id, parsed.document.uri
    graph_store.write_document(parsed)
    assert graph_store.add_source(doc_id, "/copies/kanpur.html") is True
    assert graph_store.add_source(doc_id, "/copies/kanpur.html") is False   # known already
    assert graph_store.add_source("no-such-doc", "/x.html") is False
    [doc] = graph_store.documents([doc_id])
    assert (doc.uri, doc.sources) == (first, [first, "/copies/kanpur.html"])
    assert [d.doc_id for d in graph_store.find_by_uri("/copies/kanpur.html")] == [doc_id]
    graph_store.remove_source(doc_id, first)        # new bytes arrived at the first path
    [doc] = graph_store.documents([doc_id])
    assert (doc.uri, doc.sources) == ("/copies/kanpur.html", ["/copies/kanpur.html"])
    assert graph_store.find_by_uri(first) == []
    assert graph_store.find_by_sha256(parsed.document.sha256, "default").sources == [
        "/copies/kanpur.html"]


def _linked_pair(graph_store, b_people: tuple[str, ...] = (), b_collection: str = "default"):
    """Two documents: Ratan Planet in both, Krishna Tower in a (and the object
    of one of b's assertions), SAME_AS between them; ``b`` also names
    ``b_people`` and is in ``b_collection`` (its entities as given: unprefixed)."""
    a = _with_graph(parse(CORPUS / "204-541.html"), ["Ratan Planet", "Krishna Tower"])
    b = _with_graph(parse(CORPUS / "204-268.html"), ["Ratan Planet", *b_people])
    b.document.collection = b_collection
    bd = b.document.doc_id
    b.assertions.append(Assertion(f"{bd}:a9", bd, "Child Maurice", "related_to", "Krishna Tower",
                                  "text", (b.supports[2].support_id,), {}, 0.9, True, "test",
                                  object_entity="person:krishna tower"))
    b.same_as = [SameAs("person:ratan planet", "person:krishna tower", 0.5, "test")]
    graph_store.write_document(a)
    graph_store.write_document(b)
    return a, b


def test_entity_links_read_one_hop(graph_store):
    a, b = _linked_pair(graph_store)
    ad, bd = a.document.doc_id, b.document.doc_id
    links = graph_store.entity_links(["person:krishna tower", "person:nobody"])
    assert [x.assertion_id for x in links.assertions] == [f"{ad}:a1", f"{bd}:a9"]
    a9 = links.assertions[1]
    assert (a9.subject, a9.object_entity, a9.supports, a9.doc_id) == (
        "Child Maurice", "person:krishna tower", (b.supports[2].support_id,), bd)
    assert links.mentions == [("person:krishna tower", a.supports[1].support_id)]
    assert [(s.source, s.target, s.score, s.method) for s in links.same_as] == [
        ("person:ratan planet", "person:krishna tower", 0.5, "test")]
    both = graph_store.entity_links(["person:ratan planet", "person:krishna tower"], limit=1)
    # at most one assertion and mention per entity; an assertion reached twice comes once
    assert [x.assertion_id for x in both.assertions] == [f"{ad}:a0", f"{ad}:a1"]
    assert both.mentions == [("person:krishna tower", a.supports[1].support_id),
                             ("person:ratan planet", a.supports[0].support_id)]
    assert len(both.same_as) == 1
    empty = graph_store.entity_links(["person:nobody"])
    assert (empty.assertions, empty.mentions, empty.same_as) == ([], [], [])


def test_same_as_links_lists_every_link(graph_store):
    assert graph_store.same_as_links() == []
    _linked_pair(graph_store)
    assert graph_store.same_as_links() == [
        SameAs("person:ratan planet", "person:krishna tower", 0.5, "test")]


def test_entity_documents_and_supports_by_id(graph_store):
    a, b = _linked_pair(graph_store)
    ad, bd = a.document.doc_id, b.document.doc_id
    got = graph_store.entity_documents(["person:krishna tower", "person:ratan planet",
                                        "person:nobody"])
    assert got == {"person:krishna tower": sorted([ad, bd]),  # b only through its assertion
                   "person:ratan planet": sorted([ad, bd]), "person:nobody": []}
    assert graph_store.entity_documents([]) == {}
    ids = [b.supports[2].support_id, "nope", a.supports[3].support_id]
    supports = graph_store.supports_by_id(ids)
    assert set(supports) == {ids[0], ids[2]}
    assert supports[ids[0]] == b.supports[2] and supports[ids[2]] == a.supports[3]
    assert graph_store.supports_by_id([]) == {}


def test_neighborhood_hops_and_document_filter(graph_store):
    from pilar.graph.explore import neighborhood

    a, b = _linked_pair(graph_store)
    ad, bd = a.document.doc_id, b.document.doc_id
    one = neighborhood(graph_store, "person:krishna tower", depth=1)
    assert [e.entity_id for e in one.entities] == ["person:krishna tower", "person:ratan planet"]
    assert {x.assertion_id for x in one.assertions} == {f"{ad}:a1", f"{bd}:a9"}
    assert {s.support_id for s in one.supports} == {a.supports[1].support_id,
                                                     b.supports[2].support_id}
    assert one.pages == [a.pages[0].page_id, b.pages[0].page_id]
    two = neighborhood(graph_store, "person:krishna tower", depth=2)
    assert {x.assertion_id for x in two.assertions} == {f"{ad}:a0", f"{ad}:a1", f"{bd}:a0",
                                                        f"{bd}:a9"}
    only_a = neighborhood(graph_store, "person:krishna tower", depth=2, doc_ids={ad})
    assert {x.doc_id for x in only_a.assertions} == {ad}
    assert {s.doc_id for s in only_a.supports} == {ad} and only_a.pages == [a.pages[0].page_id]
    assert neighborhood(graph_store, "person:nobody") is None
    assert neighborhood(graph_store, "person:krishna tower", doc_ids={"0000000000000000"}) is None
    # the per-entity cap: two assertions at a cap of 1 are cut, under a cap of 3 they are not
    assert (one.truncated, two.truncated) == (False, False)
    cut = neighborhood(graph_store, "person:krishna tower", depth=1, limit=1)
    assert cut.truncated and len(cut.assertions) < len(one.assertions)
