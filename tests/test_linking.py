"""Cross-document SAME_AS linking (PILAR App. E.2, E.5) on both graph
backends, and its precision on hand-labelled links from the dev corpus."""

from __future__ import annotations

import csv
from pathlib import Path

import pytest

from pilar.config import Settings
from pilar.graph.linking import link_across, link_batch, match
from pilar.graph.sqlite import SqliteGraphStore
from pilar.db import SqliteDatabase
from pilar.ingest import parse
from pilar.model import Entity, SameAs
from tests.conftest import FIXTURES

LABELS = FIXTURES / "same_as_labels.tsv"
ALIAS_PAGE = "203-417.html"      # 2002 NFL Draft: names the college "LSU"
CANONICAL_PAGE = "204-389.html"  # 2007 National Football League Draft: "Louisiana State University"


def _e(name: str, type_: str = "thing", aliases: tuple[str, ...] = ()) -> Entity:
    from pilar.ingest.names import entity_id

    return Entity(entity_id(type_, name), name, type_, aliases)


@pytest.mark.parametrize("a, b, expected", [
    (_e("Leeds United", "team"), _e("Leeds United"), (1.0, "name")),
    (_e("Cardiff City F.C.", "thing", ("Cardiff City",)), _e("Cardiff City", "team"),
     (0.95, "alias")),
    (_e("LSU", "organization"), _e("Louisiana State University", "organization", ("LSU",)),
     (0.9, "alias")),
    (_e("ECAC", "organization"), _e("Eastern College Athletic Conference", "organization"),
     (0.9, "abbreviation")),
    (_e("Canadian National Railway"), _e("Canadian National Railways"), (0.9804, "fuzzy")),
    (_e("St. Poelten"), _e("St. Pölten"), (0.9474, "fuzzy")),
    (_e("Sevilla FC", "team"), _e("Sevilla", "team"), (0.9, "fuzzy")),
    # not the same thing
    (_e("Sevilla FC", "team"), _e("Sevilla", "place"), None),
    (_e("Peter Allen", "person", ("Allen",)), _e("Irwin Allen", "person", ("Allen",)), None),
    (_e("Utah", "team"), _e("Utah", "organization"), None),
    (_e("Germany", "country"), _e("German"), None),
    (_e("George W. Bush", "person", ("George Bush",)),
     _e("George H. W. Bush", "person", ("George Bush",)), None),
    (_e("Jordan", "person"), _e("Jordan", "country"), None),
    (_e("Jonatan Johansson"), _e("Jonathan Johansson", "person"), None),
    (_e("Still Alive", "work"), _e("Still Alive"), None),
    (_e("European Championships", "organization"), _e("European Championship"), None),
    (_e("MA", "place"), _e("Metro Atlanta", "place"), None),
])
def test_match_methods(a, b, expected):
    got = match(a, b, 0.8)
    assert (None if got is None else (pytest.approx(got[0], abs=1e-4), got[1])) == expected


def _ingest(graph_store, path: Path, settings: Settings | None = None):
    parsed = parse(path)
    parsed.same_as = link_across(parsed, graph_store, settings)
    graph_store.write_document(parsed)
    return parsed


def _pages_via_same_as(graph_store, name: str) -> set[str]:
    """Entity named ``name`` -SAME_AS- Entity -MENTIONED_IN-> Support
    -HAS_PROVENANCE-> Provenance -ON_PAGE-> Page, on either backend."""
    if graph_store.name == "sqlite":
        rows = graph_store.db.conn.execute(
            "SELECT DISTINCT pg.page_id FROM entities a "
            "JOIN same_as l ON a.entity_id IN (l.source, l.target) "
            "JOIN entities b ON b.entity_id = CASE WHEN l.source = a.entity_id "
            "THEN l.target ELSE l.source END "
            "JOIN mentions m ON m.entity_id = b.entity_id "
            "JOIN supports s ON s.support_id = m.support_id "
            "JOIN provenance p ON p.provenance_id = s.provenance_id "
            "JOIN pages pg ON pg.doc_id = p.doc_id AND pg.number = p.page "
            "WHERE a.name = ?", (name,)).fetchall()
        return {r[0] for r in rows}
    records, _, _ = graph_store.driver.execute_query(
        "MATCH (a:Entity {name: $name})-[:SAME_AS]-(b:Entity)-[:MENTIONED_IN]->(:Support)"
        "-[:HAS_PROVENANCE]->(:Provenance)-[:ON_PAGE]->(pg:Page) RETURN DISTINCT pg.page_id AS p",
        name=name)
    return {r["p"] for r in records}


@pytest.mark.parametrize("order", ["canonical_first", "alias_first"])
def test_an_alias_reaches_the_canonical_pages_through_the_graph(graph_store, wtq_pages, order):
    names = [CANONICAL_PAGE, ALIAS_PAGE] if order == "canonical_first" else [
        ALIAS_PAGE, CANONICAL_PAGE]
    docs = {name: _ingest(graph_store, wtq_pages / name) for name in names}
    alias_doc, canonical_doc = docs[ALIAS_PAGE], docs[CANONICAL_PAGE]
    lsu = next(e for e in alias_doc.entities if e.name == "LSU")
    lsu_university = next(e for e in canonical_doc.entities
                          if e.name == "Louisiana State University")
    assert (lsu.entity_id, lsu_university.entity_id) == (
        "organization:lsu", "organization:louisiana state university")
    link = docs[names[1]].same_as
    assert [(l.method, l.score) for l in link if {l.source, l.target} == {
        lsu.entity_id, lsu_university.entity_id}] == [("alias", 0.9)]
    assert graph_store.stats()["SAME_AS"] >= 1
    # from the alias, through SAME_AS, to the page that names the university
    assert _pages_via_same_as(graph_store, "LSU") == {canonical_doc.pages[0].page_id}
    assert _pages_via_same_as(graph_store, "Louisiana State University") == {
        alias_doc.pages[0].page_id}


def _links(links: list[SameAs]) -> list[tuple]:
    return sorted((l.source, l.target, l.method, round(l.score, 4)) for l in links)


def test_a_batch_links_as_if_its_documents_were_stored_one_by_one(graph_store, wtq_pages):
    """Documents written together (one transaction) link to each other's
    entities as they would had each been stored before the next."""
    one_by_one = [_ingest(graph_store, wtq_pages / name) for name in (CANONICAL_PAGE, ALIAS_PAGE)]
    expected = [_links(d.same_as) for d in one_by_one]
    assert expected[0] == [] and ("organization:lsu", "organization:louisiana state university",
                                  "alias", 0.9) in expected[1]
    for d in one_by_one:
        graph_store.delete_document(d.document.doc_id)
    assert graph_store.stats()["entities"] == 0
    batch = [parse(wtq_pages / name) for name in (CANONICAL_PAGE, ALIAS_PAGE)]
    link_batch(batch, graph_store)
    assert [_links(d.same_as) for d in batch] == expected
    graph_store.write_documents([(d, []) for d in batch])
    assert graph_store.stats()["SAME_AS"] == len(expected[1])
    assert _pages_via_same_as(graph_store, "LSU") == {batch[0].pages[0].page_id}


def test_stored_entities_are_not_linked_again(tmp_path, wtq_pages):
    graph_store = SqliteGraphStore(SqliteDatabase(tmp_path / "pilar.sqlite"))
    first = _ingest(graph_store, wtq_pages / CANONICAL_PAGE)
    calls = []

    class Counting:
        def __getattr__(self, name):
            return getattr(graph_store, name)

        def entity_candidates(self, name, limit=20, collections=None):
            calls.append(name)
            return graph_store.entity_candidates(name, limit, collections)

    again = parse(wtq_pages / CANONICAL_PAGE)
    assert link_across(again, Counting()) == [] and calls == []
    assert len(first.entities) == len(again.entities)


def _labels() -> list[dict[str, str]]:
    with LABELS.open(encoding="utf-8", newline="") as f:
        return list(csv.DictReader(f, delimiter="\t", quoting=csv.QUOTE_NONE))


def test_same_as_precision_on_hand_labelled_links():
    """50 SAME_AS links sampled from the 400 dev pages (bench/assertion_counts.py
    --ingest 400 --sample 50 --seed 6) and labelled by hand: linking the same
    names again finds them, and at least 90% of what it links is right."""
    rows = _labels()
    assert len(rows) == 50 and {r["label"] for r in rows} <= {"true", "false"}
    predicted = []
    for r in rows:
        a = Entity("a", r["source_name"], r["source_type"],
                   tuple(x for x in r["source_aliases"].split("|") if x))
        b = Entity("b", r["target_name"], r["target_type"],
                   tuple(x for x in r["target_aliases"].split("|") if x))
        got = match(a, b, Settings().link_threshold_cross)
        if got is not None:
            assert got[1] == r["method"] and got[0] == pytest.approx(float(r["score"]), abs=1e-3)
            predicted.append(r["label"] == "true")
    assert len(predicted) == 50
    assert sum(predicted) / len(predicted) >= 0.9


def test_ingest_links_across_documents_and_reports_counts(tmp_path, wtq_pages):
    from typer.testing import CliRunner

    from pilar.cli import app

    paths = [wtq_pages / CANONICAL_PAGE, wtq_pages / ALIAS_PAGE]
    result = CliRunner().invoke(app, ["ingest", *map(str, paths), "--home", str(tmp_path)])
    assert result.exit_code == 0, result.output
    parsed = [parse(p) for p in paths]
    n_assertions = sum(len(p.assertions) for p in parsed)
    n_entities = sum(len(p.entities) for p in parsed)
    assert f"{n_assertions} assertions, {n_entities} entity records)" in " ".join(
        result.output.split())
    from pilar import Pilar

    stats = Pilar(home=tmp_path).stats()
    assert stats["assertions"] == n_assertions and stats["SAME_AS"] >= 1
    assert stats["SUPPORTED_BY"] == n_assertions


def test_a_link_to_an_entity_the_replaced_version_alone_had_is_skipped(graph_store):
    old = parse(b"<h1>Acme</h1><p>Acme Corporation is a maker of anvils in Ohio.</p>",
                uri="acme.html")
    new = parse(b"<h1>Acme</h1><p>Globex Corporation is a maker of rockets in Ohio.</p>",
                uri="acme.html")
    graph_store.write_document(old)
    gone = "thing:acme corporation"
    assert gone in graph_store.get_entities([gone])
    new.same_as = [SameAs("thing:globex corporation", gone, 0.9, "test")]
    graph_store.write_document(new, replaces=[old.document.doc_id])
    assert graph_store.get_entities([gone]) == {} and graph_store.stats()["SAME_AS"] == 0
    assert "thing:globex corporation" in graph_store.get_entities(["thing:globex corporation"])
