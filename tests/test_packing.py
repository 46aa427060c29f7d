"""Query-time linking and budget-neutral packing on real pages (PILAR
§3.4-3.5, Tessera §3.4-3.5): rows reach the packet under their headers, the
gate drops unrelated expanded pages, packets never exceed their budget."""

from __future__ import annotations

import math
from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest

from pilar import Pilar
from pilar.config import Settings
from pilar.errors import EmptyStoreError
from pilar.model import Unit
from pilar.packing.packet import PageEvidence, block_order, page_excerpt, unit_block
from pilar.packing.statistics import tables_of
from pilar.packing.selection import ScoredUnit, UnitSelector, bm25_scores
from pilar.retrieval.terms import tokens
from pilar.retrieval.unit_runs import (GROUP_WORDS, UNIT_TOKENS, group_leaders, group_text,
                                      table_heads, unit_groups)
from tests.conftest import FIXTURES

CORPUS = FIXTURES / "corpus"
HTML = FIXTURES / "html"


@pytest.fixture(scope="module")
def store(tmp_path_factory) -> Pilar:
    p = Pilar(home=tmp_path_factory.mktemp("packing"))
    results = p.ingest([CORPUS, HTML])
    assert not [r for r in results if r.status == "failed" and r.path.endswith(".html")]
    return p


def test_row_under_multi_row_header_reaches_the_packet_with_its_headers(store: Pilar):
    result = store.search("what was the peak chart position of bring me edelweiss in the uk?",
                          budget=1024)
    assert Path(result.pages[0].source).stem == "202-278"
    text = result.packet.text
    header = ("Year | Single | Peak chart positions > AT | Peak chart positions > UK | "
              "Peak chart positions > U.S. Dance")
    assert header in text
    row = next(i for i in result.packet.items if '"Bring Me Edelweiss"' in i.text)
    assert row.text.index(header) < row.text.index('"Bring Me Edelweiss"') or \
        text.index(header) < text.index('"Bring Me Edelweiss"')
    assert row.citation.table_index is not None and row.citation.row is not None
    assert row.citation.section_path[-2:] == ("Discography", "Singles")
    # each context path and header appears once above its rows
    assert text.count(header) == 1


def test_packet_never_exceeds_budget(store: Pilar):
    questions = [line.split("\t")[1] for line in
                 (CORPUS / "questions.tsv").read_text(encoding="utf-8").splitlines()[1:20]]
    for budget in (64, 300, 1024, 3072):
        for q in questions:
            packet = store.search(q, budget=budget).packet
            assert packet.tokens <= budget
            assert store.tokens.count(packet.text) == packet.tokens
            assert all(item.citation.doc_id and item.citation.page == 1 for item in packet.items)


def test_unit_block_replaces_the_lowest_ranked_item_at_equal_cost(store: Pilar):
    q = "which broadcaster hosted 3 titles but they had only 1 episode?"
    with_units = store.search(q, budget=3072)
    pages_only = store.pack(q, with_units.pages, 3072, use_units=False)
    assert "## Evidence units" in with_units.packet.text
    assert "## Evidence units" not in pages_only.text
    headers = lambda t: [line for line in t.splitlines() if line.startswith("## ") and "page" in line]
    # six page items of 512 tokens at 3,072; the unit block replaces the lowest-
    # ranked items worth block_tokens: four by default (2,048), two when set to 1,024
    assert len(headers(pages_only.text)) == 6
    assert headers(with_units.packet.text) == headers(pages_only.text)[:2]
    assert with_units.packet.tokens <= 3072 and pages_only.tokens <= 3072
    one_item = Pilar(home=store.settings.home, settings=Settings(block_tokens=1024))
    packet = one_item.pack(q, with_units.pages, 3072)
    assert headers(packet.text) == headers(pages_only.text)[:4]
    assert "## Evidence units" in packet.text and packet.tokens <= 3072


def page_units(store: Pilar, stem: str) -> list[Unit]:
    doc = next(d for d in store.docs() if Path(d.uri).stem == stem)
    return store.graph.units_on_pages([f"{doc.doc_id}:1"])[f"{doc.doc_id}:1"]


def test_block_order_offers_a_small_table_whole_else_the_rows_neighbours(store: Pilar):
    units = page_units(store, "204-98")  # Luís Filipe Jesus: one results table
    tables = tables_of(units)
    rows = next(rows for rows in tables.values() if any("Paris Marathon" in u.text for u in rows))
    i = next(i for i, u in enumerate(rows) if "Paris Marathon" in u.text)
    chosen = [ScoredUnit(rows[i], lexical=3.0, score=0.9, page_rank=0)]
    # the whole table fits in 70% of 4,000 tokens: all rows, in document order
    whole = block_order(chosen, tables, store.tokens, 4000)
    assert [s.unit.unit_id for s in whole] == [u.unit_id for u in rows]
    assert "Turin Marathon" in whole[0].unit.text  # the first row, which no query term named
    # in 60 tokens it does not: the row, then the rows just above and below it
    near = block_order(chosen, tables, store.tokens, 60)
    assert [s.unit.unit_id for s in near] == [rows[i].unit_id, rows[i - 1].unit_id,
                                              rows[i + 1].unit_id]
    assert block_order(chosen, tables, store.tokens, 60, neighbours=0) == chosen


def test_block_order_does_not_offer_a_bridging_rows_table_whole(store: Pilar):
    # a multi-hop chain's bridging row comes first for the chain, not for its
    # score: the table offered whole is the best-scored other row's
    units = page_units(store, "204-98")
    tables = tables_of(units)
    rows = next(rows for rows in tables.values() if any("Paris Marathon" in u.text for u in rows))
    fact = Unit("x", "other", 1, "row", "Span | 23.5 m", "Data | Span | 23.5 m", "sx",
                ("Data",), 0, 0, ("Parameter", "Value"), ("Span", "23.5 m"))
    bridge = ScoredUnit(rows[2], lexical=0.1, score=1.0, page_rank=1, bridging=True)
    best = ScoredUnit(fact, lexical=3.0, score=0.9, page_rank=0)
    tables[("other", 1, 0)] = [fact]
    order = block_order([bridge, best], tables, store.tokens, 4000, neighbours=0)
    assert [s.unit.unit_id for s in order] == ["x", rows[2].unit_id]
    # the same row scored first for itself brings its whole table
    order = block_order([replace(bridge, bridging=False), best], tables, store.tokens, 4000,
                        neighbours=0)
    assert [s.unit.unit_id for s in order] == [u.unit_id for u in rows] + ["x"]


def test_a_chains_links_come_page_by_page_each_before_the_pages_best_unit(store: Pilar):
    """Multi-hop selection: page 0 (no link) gives its best unit first; page 1
    its bridging unit, then its best other unit; only then the pages' other
    units in turn. The last page of a chain is not crowded out by the links
    of the pages before it."""
    def para(uid: str, doc: str, text: str) -> Unit:
        return Unit(uid, doc, 1, "paragraph", text, text, f"s-{uid}", ("Report",))

    units = [(0, para("a1", "a", "The crane QC-09 stopped at berth N3.")),
             (0, para("a2", "a", "The crane was released after repair.")),
             (1, para("b1", "b", "QC-09 is a Megalift 65 crane made by Vostrand.")),
             (1, para("b2", "b", "The crane QC-09 has a lift height of 49 m above rail.")),
             (1, para("b3", "b", "Register maintained by Engineering."))]
    q = "what lift height does the crane that stopped at berth N3 have?"
    selector = UnitSelector(store.embedder, lambda ids: {}, cues=False)
    plain = [s.unit.unit_id for s in selector.select(q, units)]
    chained = [s.unit.unit_id for s in selector.select(q, units, bridging=frozenset({"s-b1"}))]
    best_a = next(u for u in plain if u.startswith("a"))
    best_b = next(u for u in plain if u in ("b2", "b3"))
    assert best_b == "b2"  # the lift height, not the register's footer
    assert chained[:3] == [best_a, "b1", "b2"] and set(chained) == set(plain)
    flags = {s.unit.unit_id: s.bridging for s in selector.select(q, units,
                                                                 bridging=frozenset({"s-b1"}))}
    assert flags["b1"] and not flags["b2"]


def test_next_row_reaches_the_packet(store: Pilar):
    q = "which team was the philadelphia soul's next opponent after playing the chicago rush?"
    result = store.search(q, budget=1024)
    assert Path(result.pages[0].source).stem == "203-534"
    lines = result.packet.text.splitlines()
    rush = next(n for n, line in enumerate(lines) if "Chicago Rush" in line and "|" in line)
    assert "Columbus Destroyers" in lines[rush + 1]


def test_units_of_lower_ranked_pages_pay_the_page_score_gap(store: Pilar):
    a, b = page_units(store, "204-98"), page_units(store, "203-189")
    anchors = [(0, u) for u in a] + [(1, u) for u in b]
    q = "what was the marathon time in 2006?"
    plain = UnitSelector(store.embedder, store.index.unit_vectors).select(q, anchors, [0.8, 0.5])
    prior = UnitSelector(store.embedder, store.index.unit_vectors, page_weight=0.5).select(
        q, anchors, [0.8, 0.5])
    before = {s.unit.unit_id: s.score for s in plain}
    assert {s.unit.unit_id for s in prior} == set(before)
    for s in prior:
        gap = 0.0 if s.page_rank == 0 else 0.5 * (0.5 - 0.8)
        assert s.score == pytest.approx(before[s.unit.unit_id] + gap)
    assert any(s.page_rank == 1 for s in plain)


def test_token_counts_are_memoised_and_exact(store: Pilar):
    lines = [u.completed_text for u in page_units(store, "204-541")][:50]
    counter = store.tokens
    first = counter.count_many(lines)
    assert first == [counter.count(t) for t in lines]
    assert counter.count_many(lines[::-1]) == first[::-1]
    assert counter.count_one(lines[0]) == first[0] > 0


def test_page_cache_is_emptied_by_delete(tmp_path):
    p = Pilar(home=tmp_path)
    [result] = p.ingest(CORPUS / "204-541.html")
    first = p.search("what is the tallest building in kanpur?", budget=512).packet.text
    assert f"{result.doc_id}:1" in p.pages
    assert p.search("what is the tallest building in kanpur?", budget=512).packet.text == first
    assert p.delete(result.doc_id)
    assert len(p.pages) == 0
    with pytest.raises(EmptyStoreError):
        p.search("what is the tallest building in kanpur?", budget=512)


@pytest.fixture(scope="module")
def narrow(store: Pilar) -> Pilar:
    """The same store searched with a one-page shortlist, so graph expansion
    has pages outside it to bring in (or gate out)."""
    return Pilar(home=store.settings.home, settings=Settings(shortlist=1, pool=1))


def test_gate_drops_an_unrelated_expanded_page(narrow: Pilar):
    q = "which album by edelweiss reached number 1 in sweden?"
    # the graph reaches pages that mention Sweden, some unrelated to the question
    reached = narrow.graph.expansion_pages(["country:sweden"])["mention"]
    dense = narrow.index.dense_for(narrow.embedder.query(q), list(reached))
    unrelated = {pid for pid, d in dense.items() if d < 0.35}
    assert unrelated, dense
    pages = narrow.search(q).pages
    assert Path(pages[0].source).stem == "202-278"  # Edelweiss
    assert not unrelated & {p.page_id for p in pages}
    assert all(p.dense >= 0.35 for p in pages if p.trace["expanded"])


def test_a_hub_entity_is_not_expanded_from(narrow: Pilar):
    q = "what was habte jifar's time in the marathon?"
    expanded = [p for p in narrow.search(q).pages if p.trace["expanded"]]
    entity = next(iter(expanded[0].trace["paths"].values()))[0].removeprefix("entity:")
    mentioned = narrow.graph.mention_pages([entity])[entity]
    assert 1 <= mentioned <= narrow.settings.hub_pages, (entity, mentioned)
    # the same store, the entity now mentioned on more pages than a hub may be
    hubs = Pilar(home=narrow.settings.home,
                 settings=Settings(shortlist=1, pool=1, hub_pages=mentioned - 1))
    pages = hubs.search(q).pages
    assert any(f"({entity})" in e for e in pages[0].trace["hub_entities"])
    assert not any(f"({entity})" in e for e in pages[0].trace["query_entities"])
    assert not any(path[0] == f"entity:{entity}" for p in pages
                   for path in p.trace.get("paths", {}).values())


def test_expansion_brings_in_a_related_page_with_its_path(narrow: Pilar):
    q = "what was habte jifar's time in the marathon?"
    pages = narrow.search(q).pages
    assert Path(pages[0].source).stem == "203-189"  # Habte Jifar, the only base page
    expanded = [p for p in pages if p.trace["expanded"]]
    assert expanded, [p.trace for p in pages]
    page = expanded[0]
    assert page.dense >= 0.35
    assert page.trace.get("alias") == 0.12 or page.trace.get("graph") == 0.08
    path = next(iter(page.trace["paths"].values()))
    assert path[0].startswith("entity:") and path[-1] == f"page:{page.page_id}"
    assert page.score == pytest.approx(page.trace["base"] + page.trace.get("alias", 0)
                                       + page.trace.get("graph", 0))


@pytest.fixture(scope="module")
def oversized(tmp_path_factory) -> Pilar:
    """A page with a 6,000-character word and a 3,000-word paragraph."""
    folder = tmp_path_factory.mktemp("oversized")
    html = folder / "oversized.html"
    html.write_text("<h1>Oversized</h1><p>" + "x" * 6000 + "</p><p>" + "word " * 3000 + "</p>",
                    encoding="utf-8")
    p = Pilar(home=folder / "home")
    [result] = p.ingest(html)
    assert result.status == "ingested"
    return p


def test_a_long_unbroken_word_is_counted_at_its_length(oversized: Pilar):
    counter = oversized.tokens
    assert counter.count("x" * 100) == 50  # WordPiece: "x" then "##xx" pieces
    assert counter.count("x" * 6000) == 3000  # not one unknown token
    assert counter.count_many(["x" * 6000])[0] == 3000
    cut = counter.truncate("x" * 6000, 40)
    assert "x" * 6000 != cut and ("x" * 6000).startswith(cut) and counter.count(cut) <= 40
    packet = oversized.search("xxxxxxxxxxxxxxxx", budget=100).packet
    assert packet.tokens <= 100 and counter.count(packet.text) == packet.tokens
    assert len(packet.text) < 400


@pytest.mark.parametrize("budget", [32, 50, 200, 512])
def test_units_too_big_for_a_small_block_are_truncated_not_dropped(oversized: Pilar, budget):
    packet = oversized.search("word word", budget=budget).packet
    assert packet.items and "word word" in packet.text
    assert oversized.tokens.count(packet.text) == packet.tokens <= budget


def _sections(items) -> list[tuple[str, list]]:
    """Packet items split into its sections: ("excerpt" | "block", items)."""
    out: list[tuple[str, list]] = []
    for item in items:
        if item.text.startswith("## Evidence units"):
            out.append(("block", []))
        elif item.text.startswith("## "):
            out.append(("excerpt", []))
        out[-1][1].append(item)
    return out


def test_no_table_is_carried_twice_and_no_header_is_empty(store: Pilar):
    questions = [line.split("\t")[1] for line in
                 (CORPUS / "questions.tsv").read_text(encoding="utf-8").splitlines()[1:25]]
    both = 0
    for q in questions:
        for budget in (3072, 4500):
            packet = store.search(q, budget=budget).packet
            excerpt_tables, block_tables = set(), set()
            for kind, items in _sections(packet.items):
                seen = block_tables if kind == "block" else excerpt_tables
                seen.update((i.citation.doc_id, i.citation.page, i.citation.table_index)
                            for i in items if i.citation.table_index is not None)
            both += bool(block_tables)
            assert not excerpt_tables & block_tables, q
            # no header is ever printed empty (" | Years active")
            assert not [line for line in packet.text.splitlines()
                        if line.startswith(" | ") or line.startswith("| ") or " |  | " in line]
    assert both  # the blocks carry tables (test_excerpt_row_comes_under_its_header_row
    # shows an excerpt leaving out a table the block carries)


def test_excerpt_row_comes_under_its_header_row(store: Pilar):
    doc = next(d for d in store.docs() if Path(d.uri).stem == "204-98")
    pid = f"{doc.doc_id}:1"
    units = page_units(store, "204-98")
    tables = tables_of(units)
    q = "what was the time at the paris marathon?"
    [page] = store.hybrid.rank(q, [pid])
    ev = PageEvidence(page, store.graph.supports_on_pages([pid])[pid])
    row = next(u for u in units if u.kind == "row" and "Paris Marathon" in u.text)
    header = " | ".join(row.headers)
    lines = "\n".join(i.text for i in page_excerpt(q, ev, store.tokens, 300, tables)).splitlines()
    at = next(n for n, line in enumerate(lines) if "Paris Marathon" in line)
    assert header in lines[:at] and lines.count(header) == 1
    # a table the block carries is left out of the excerpt
    skip = {(doc.doc_id, 1, row.table_index)}
    text = "\n".join(i.text for i in page_excerpt(q, ev, store.tokens, 300, tables, skip))
    assert "Paris Marathon" not in text and header not in text


def test_key_value_rows_share_one_group_without_header_lines(store: Pilar):
    units = page_units(store, "203-331")  # Marc Comb: an infobox
    kv = [u for u in units if u.kind == "row" and u.headers and not u.headers[0]]
    assert len(kv) >= 3
    doc = next(d for d in store.docs() if Path(d.uri).stem == "203-331")
    [page] = store.hybrid.rank("marc comb date of birth", [f"{doc.doc_id}:1"])
    chosen = [ScoredUnit(u, 1.0, 1.0 - i / 100, 0) for i, u in enumerate(kv[:3])]
    block = unit_block(chosen, {page.page_id: page}, {}, store.tokens, 400)
    text = "\n".join(item.text for item in block).splitlines()
    assert text[0] == "## Evidence units" and text[1].startswith("### ")
    assert text[2:] == [" | ".join(c.replace("\n", " / ") for c in u.cells) for u in kv[:3]]


def test_units_of_one_context_share_one_vector(store: Pilar):
    units = page_units(store, "202-278")  # a discography: long tables under one context each
    runs = unit_groups(units)
    assert [u for run in runs for u in run] == units and (len(units), len(runs)) == (15, 4)
    for run in runs:
        assert len({(u.doc_id, u.page, u.context, u.table_index) for u in run}) == 1
        assert len(run) == 1 or sum(len(u.text.split()) for u in run) <= GROUP_WORDS
    stored = store.index.unit_vectors([u.unit_id for u in units])
    assert set(stored) == {run[0].unit_id for run in runs}
    leaders = group_leaders(units)
    assert all(leaders[u.unit_id] == run[0].unit_id for run in runs for u in run)
    rows = next(run for run in runs if run[0].kind == "row" and len(run) > 3
                and len({u.headers for u in run}) == 1)  # the singles table
    text = group_text(rows)
    header = " | ".join(h for h in rows[0].headers if h)
    assert text.startswith(" > ".join(rows[0].context) + " | " + header + " | ")
    assert text.count(header) == 1 and all(u.text in text for u in rows)
    infobox = runs[0]  # key-value rows: each says its key, no header row
    assert group_text(infobox) == "Edelweiss | " + " ; ".join(u.text for u in infobox)
    assert infobox[0].text == "Origin: Austria"


def test_each_table_gets_a_schema_vector_of_its_context_and_header_row(store: Pilar):
    units = page_units(store, "202-278")
    page_id = f"{units[0].doc_id}:1"
    heads = table_heads(units)
    head_texts = [t for _, t in heads]
    named = {u.table_index for u in units if u.kind == "row"
             and sum(1 for h in u.headers if h) > 1}
    assert [page for page, _ in heads] == [1] * len(named) and len(named) >= 2
    singles = next(u for u in units if u.kind == "row" and "\"Bring Me Edelweiss\"" in u.text)
    header = " | ".join(h for h in singles.headers if h)
    text = " > ".join(singles.context) + " | " + header
    assert text in head_texts
    assert not any(c.strip() and c in text.split(" | ") for c in singles.cells
                   if c not in singles.headers)
    vectors, ids = store.index.page_vectors([page_id])[page_id]
    runs = unit_groups(units)
    assert ids == [r[0].unit_id for r in runs] + [None] * len(heads)
    expected = store.embedder.encode(head_texts, max_tokens=UNIT_TOKENS)
    np.testing.assert_allclose(vectors[len(runs):], expected, atol=2e-3)
    # a question naming the columns, not the cells, meets the schema vector
    q = store.embedder.query("which single had its peak chart position in the UK?")
    cosines = vectors @ q
    schema = len(runs) + head_texts.index(text)
    # the singles run's first 64 tokens are its header row too: a tie, not a loss
    assert cosines[schema] == pytest.approx(cosines.max(), abs=1e-4)
    others = [i for i, run in enumerate(runs) if run[0].table_index != singles.table_index]
    assert cosines[schema] > cosines[others].max() + 0.05
    assert store.index.dense_for(q, [page_id])[page_id] == pytest.approx(cosines.max(), abs=1e-5)


def test_a_unit_is_scored_by_its_runs_vector(store: Pilar):
    units = page_units(store, "202-278")
    run = next(r for r in unit_groups(units) if any("Bring Me Edelweiss" in u.text for u in r))
    assert len(run) > 1
    q = "what was the peak chart position of bring me edelweiss in the uk?"
    scored = UnitSelector(store.embedder, store.index.unit_vectors, cues=False).select(
        q, [(0, u) for u in units])
    cosine = float(store.index.unit_vectors([run[0].unit_id])[run[0].unit_id]
                   @ store.embedder.query(q))
    lexical = {s.unit.unit_id: s.lexical for s in scored}
    span = max(lexical.values()) - min(lexical.values())
    assert sum(s.unit in run for s in scored) > 1
    for s in scored:  # (its units are no table rows: no key cell bonus)
        if s.unit in run:
            lex = (s.lexical - min(lexical.values())) / span
            assert s.score == pytest.approx(0.4 * lex + 0.6 * cosine, abs=1e-5)


MOUNTAINS = {"Everest": ("29,029", "-"), "K2": ("28,251", "Everest"),
             "Kangchenjunga": ("28,169", "Everest"), "Lhotse": ("27,940", "Everest"),
             "Makalu": ("27,838", "Everest"), "Cho Oyu": ("26,864", "Everest"),
             "Skyang Kangri": ("24,754", "K2"), "Skil Brum": ("24,311", "K2")}
"""Height (ft) and parent mountain of each mountain of the tables below."""


def _mountains(*names: str) -> list[Unit]:
    """Rows m1, m2... of one table of :data:`MOUNTAINS`, in the order given."""
    return [_mountain(i, name, *MOUNTAINS[name]) for i, name in enumerate(names, start=1)]


def _mountain(i: int, name: str, feet: str, parent: str) -> Unit:
    cells = (str(i), name, feet, parent)
    headers = ("Rank", "Mountain", "Height (ft)", "Parent mountain")
    text = " | ".join(cells)
    return Unit(f"m{i}", "doc", 1, "row", text,
                "Highest mountains > List | " + " | ".join(f"{h}: {c}" for h, c in zip(headers, cells)),
                f"s{i}", ("Highest mountains", "List"), 0, i, headers, cells)


def test_a_row_whose_key_cell_the_question_names_joins_the_prefilter_and_leads(store: Pilar):
    # K2 is the key (Mountain) of one row and the parent of the others: the
    # question is about the row whose subject it is (PILAR §3.2)
    rows = _mountains(*MOUNTAINS)
    note = Unit("n", "doc", 1, "paragraph", "Heights are in feet above sea level.",
                "Highest mountains > Heights are in feet above sea level.", "sn",
                ("Highest mountains",))
    q = "how many feet above sea level is k2?"
    chosen = UnitSelector(store.embedder, lambda ids: {}, cues=False).select(
        q, [(0, u) for u in [note, *rows]])
    assert [s.unit.unit_id for s in chosen if s.unit.kind == "row"][0] == "m2"
    # BM25 keeps one unit (the note): the named row joins it, no other row does
    chosen = UnitSelector(store.embedder, lambda ids: {}, prefilter=1, cues=False).select(
        q, [(0, u) for u in [note, *rows]])
    assert {s.unit.unit_id for s in chosen} == {"n", "m2"}


def test_a_misspelled_column_name_still_names_its_column_for_an_extreme_value():
    from pilar.packing.cues import cue_units

    rows = _mountains("Lhotse", "Everest", "Makalu")
    pairs = [(0, u) for u in rows]
    # "heigt" is one edit from "height": the Height column's largest value, not the Rank's
    assert [u.unit_id for u in cue_units("which mountain has the greatest heigt?", pairs,
                                         rows)] == ["m2"]
    assert [u.unit_id for u in cue_units("which mountain has the smallest heigt?", pairs,
                                         rows)] == ["m3"]
    # two edits away, or a short word one edit away, names nothing
    assert cue_units("which mountain has the greatest hieght?", pairs, rows) == []
    assert cue_units("which mountain has the greatest fx?", pairs, rows) == []


def test_a_superlative_that_is_part_of_a_field_name_is_a_lookup_not_an_extreme():
    from pilar.packing.cues import cue_units

    rows = _mountains("Lhotse", "Everest", "Makalu")
    field = Unit("f", "doc", 2, "row", "Maximum climbing height | 8,000 ft",
                 "Permits > Conditions | Maximum climbing height | 8,000 ft", "sf",
                 ("Permits", "Conditions"), 1, 1, ("Condition", "Value"),
                 ("Maximum climbing height", "8,000 ft"))
    pairs = [(0, u) for u in rows] + [(1, field)]
    # the record names the field the question asks for: no row of the largest height
    assert cue_units("what maximum climbing height does the permit allow?", pairs, rows) == []
    # a key of fewer words, or one holding words the question lacks, leaves the cue
    short = Unit("g", "doc", 2, "row", "Maximum height | 8,000 ft", "", "sg", (), 1, 2,
                 ("Condition", "Value"), ("Maximum height", "8,000 ft"))
    assert [u.unit_id for u in cue_units("which mountain has the maximum height?",
                                         pairs + [(1, short)], rows)] == ["m2"]
    assert [u.unit_id for u in cue_units("which mountain has the maximum height?",
                                         pairs, rows)] == ["m2"]


def test_a_sequence_cue_brings_the_rows_beside_the_row_the_question_names(store: Pilar):
    from pilar.packing.cues import neighbour_units

    rows = _mountains(*list(MOUNTAINS)[:6])
    q = "which mountain is listed just before lhotse?"
    pairs = [(0, u) for u in rows]
    # the rows above and below Lhotse's (row 4) hold none of the question's words
    assert [u.unit_id for u in neighbour_units(q, pairs, rows)] == ["m3", "m5"]
    assert neighbour_units("which mountain is lhotse's parent?", pairs, rows) == []
    assert neighbour_units("which mountain comes after the list?", pairs, rows) == []
    # two named rows: the one naming more question words first, else the better ranked
    q2 = "which mountain comes after k2 or lhotse?"
    assert [u.unit_id for u in neighbour_units(q2, pairs, rows)] == ["m1", "m3", "m5"]
    assert [u.unit_id for u in neighbour_units(q2, pairs, rows[::-1])] == ["m3", "m5", "m1"]
    q3 = "which mountain comes after k2 or lhotse at 27,940?"  # m4: 3 words, m2 and m5: 1
    assert [u.unit_id for u in neighbour_units(q3, pairs, rows)] == ["m3", "m5", "m1"]
    assert [u.unit_id for u in neighbour_units(q3, pairs, rows[::-1])] == ["m3", "m6"]
    # the best page's table first: a copy of the table on a better page leads
    better = [(0, replace(u, unit_id=f"b{u.row_index}", doc_id="doc2")) for u in rows]
    assert [u.unit_id for u in neighbour_units(q3, better + [(1, u) for u in rows],
                                               rows)] == ["b3", "b5", "b1"]
    # in selection they lead, above the named row, within the cue limit of the budget
    selector = store.packer.selector
    chosen = [s.unit.unit_id for s in selector.select(q, [(0, u) for u in rows], budget=1024)]
    assert chosen[:2] == ["m3", "m5"] and "m4" in chosen[:5]
    plain = UnitSelector(store.embedder, lambda ids: {}, cues=False).select(
        q, [(0, u) for u in rows])
    assert [s.unit.unit_id for s in plain][0] == "m4"
    assert selector.select(q, [(0, u) for u in rows], budget=255)[0].unit.unit_id == "m4"


@pytest.mark.parametrize("stem, question, answer", [
    ("204-349", "what is the last year listed on this chart?", "1972"),
    ("204-98", "what is the first year?", "1998"),
    ("204-865", "which tournament this year had the highest purse reward offered?", "Argentine Open"),
])
def test_rows_named_by_position_or_extreme_value_are_selected_first(store: Pilar, stem, question,
                                                                    answer):
    units = page_units(store, stem)
    chosen = store.packer.selector.select(question, [(0, u) for u in units])
    assert answer in chosen[0].unit.text or answer in chosen[1].unit.text
    assert any(answer in s.unit.text for s in chosen[:2] if s.unit.kind == "row")
    plain = UnitSelector(store.embedder, store.index.unit_vectors, cues=False)
    assert [s.unit.unit_id for s in plain.select(question, [(0, u) for u in units])] != \
        [s.unit.unit_id for s in chosen]


def test_cue_rows_are_the_tables_first_last_and_extreme_rows(store: Pilar):
    from pilar.packing.cues import cue_units, number

    assert (number("3,083.06"), number("\u22120.7"), number("5th"), number("n/a")) == \
        (3083.06, -0.7, 5.0, None)
    units = page_units(store, "204-865")
    rows = [u for u in units if u.kind == "row" and u.table_index is not None]
    table = [u for u in rows if u.table_index == rows[0].table_index]
    table.sort(key=lambda u: u.row_index)
    pairs = [(0, u) for u in units]
    cues = [u.unit_id for u in cue_units("what was the first and the last tournament?", pairs,
                                         table)]
    assert cues[0] == table[0].unit_id and table[-1].unit_id in cues and len(cues) <= 4
    assert cue_units("where was the tournament held?", pairs, table) == []
    # no header names the column: no extreme row
    assert cue_units("which tournament had the highest zzz?", pairs, table) == []


def test_bm25_scores_match_the_okapi_formula_by_hand():
    """Three texts, query "goals scored": tokens are stemmed and stop words
    dropped ("goals" -> "goal", "the" gone); BM25Okapi k1 1.5, b 0.75."""
    texts = ["the goals scored", "goals goals", "a lap record"]  # tokens: 2, 2, 2 (a: stop word)
    assert tokens("The goals scored") == ("goal", "score")
    # Porter stems, as the page index's FTS5 tokenizer: a question's verb meets a header's noun
    assert tokens("attended") == tokens("Attendance") == ("attend",)
    got = bm25_scores(["goal", "score", "goal"], texts)  # a repeated query term counts once
    n, avg, k1 = 3, 2.0, 1.5

    def part(tf, df, length):
        idf = math.log(1 + (n - df + 0.5) / (df + 0.5))
        return idf * tf * (k1 + 1) / (tf + k1 * (1 - 0.75 + 0.75 * length / avg))

    assert got[0] == pytest.approx(part(1, 2, 2) + part(1, 1, 2))
    assert got[1] == pytest.approx(part(2, 2, 2))
    assert got[2] == 0.0
    assert got[0] > got[1] > got[2]
    assert bm25_scores(["goal"], []).shape == (0,)
    assert bm25_scores(["absent"], texts).tolist() == [0.0, 0.0, 0.0]
