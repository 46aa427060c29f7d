"""Table and rule-based text assertions (PILAR §3.2, App. E.5) and the
closed predicate inventory, on real Wikipedia pages."""

from __future__ import annotations

from pathlib import Path

import pytest

from pilar.config import Settings
from pilar.errors import ConfigError
from pilar.ingest import parse
from pilar.ingest.assertions import AssertionBuilder, key_column, text_assertions
from pilar.ingest.entities import EntityResolver, load_aliases
from pilar.ingest.predicates import load_inventory
from pilar.ingest.tables import SourceCell, build_grid
from pilar.model import Provenance, Support
from tests.conftest import FIXTURES

CORPUS = FIXTURES / "corpus"


@pytest.fixture(scope="module")
def bad_boy(wtq_pages):
    return parse(wtq_pages / "200-14.html")


def _support(parsed, sid):
    return next(s for s in parsed.supports if s.support_id == sid)


def test_infobox_rows_take_the_page_entity_as_subject(bad_boy):
    doc = bad_boy.document.doc_id
    a = bad_boy.assertions[0]
    assert a.assertion_id == f"{doc}:a0"
    assert (a.subject, a.predicate, a.object, a.modality, a.extractor) == (
        "Bad Boy Records", "parent_organization", "Universal Music Group", "table", "table")
    assert (a.subject_entity, a.object_entity) == ("organization:bad boy records",
                                                   "organization:universal music group")
    row = _support(bad_boy, a.supports[0])
    assert row.kind == "row" and row.text == "Parent company: Universal Music Group"
    assert a.qualifiers == {"table_title": "Bad Boy Records", "section": "Bad Boy Records",
                            "cell": f"{doc}:t0:r2c1"}
    assert a.qualifiers["cell"] in row.provenance.cell_ids  # provenance down to the cell
    founder = bad_boy.assertions[2]
    assert (founder.predicate, founder.object, founder.object_entity) == (
        "founder", 'Sean "Diddy" Combs', "person:sean diddy combs")
    located = bad_boy.assertions[6]
    assert (located.predicate, located.object, located.object_entity) == (
        "located_in", "New York City, New York", "place:new york city")
    assert [x.assertion_id for x in bad_boy.assertions] == [
        f"{doc}:a{i}" for i in range(len(bad_boy.assertions))]


def test_body_rows_take_the_key_cell_as_subject(bad_boy):
    diddy = [a for a in bad_boy.assertions if a.subject == "Diddy"]
    assert [(a.predicate, a.object) for a in diddy] == [
        ("year_signed", "1993"), ("albums_released_under_bad_boy", "6")]
    assert diddy[0].qualifiers["section"] == "Bad Boy Records > Artists > Current artists"
    assert _support(bad_boy, diddy[0].supports[0]).text == "Diddy | 1993 | 6"


def test_a_parameter_value_row_naming_a_known_field_is_a_field_of_the_record(shared_data):
    """A datasheet's two-column ``Parameter | Value`` table: the row whose key
    the inventory knows ("Manufacturer") is a field of the page's record
    with the value as its object (an organisation), not a "value" of a
    thing called "Manufacturer"; a key it does not know stays a row."""
    parsed = parse(shared_data / "multihop2" / "ambrel_rt41_datasheet.html")
    made = next(a for a in parsed.assertions if a.object == "Ambrel Machinery Co")
    assert (made.predicate, made.object_entity) == ("manufacturer",
                                                    "organization:ambrel machinery co")
    assert made.subject.startswith("Ambrel RT-41")
    fuel = next(a for a in parsed.assertions if a.object.startswith("9.5 L/h"))
    assert fuel.subject == "Average fuel consumption"


def test_every_row_with_two_cells_yields_assertions(wtq_pages):
    for path in sorted(CORPUS.glob("*.html")):
        parsed = parse(path)
        supported = {sid for a in parsed.assertions for sid in a.supports}
        for s in parsed.supports:
            if s.kind != "row" or s.support_id in supported:
                continue
            grid = parsed.tables[s.provenance.table_index]
            filled = {c.cell_id for c in grid.cells[s.provenance.row] if c.text}
            assert len(filled) <= 1, (path.name, s.text)


def test_a_generic_infobox_title_is_not_the_subject(wtq_pages):
    parsed = parse(wtq_pages / "203-179.html")  # a footballer: "Personal information"
    born = next(a for a in parsed.assertions if a.predicate == "born_on")
    assert (born.subject, born.object, born.subject_entity) == (
        "Elvir Baljić", "8 July 1974 (age 39)", "person:elvir baljic")
    assert "Personal information" not in {e.name for e in parsed.entities}


def _grid(rows: list[list[str]], header: bool = True):
    cells = [[SourceCell(t, is_header=header and r == 0) for t in row]
             for r, row in enumerate(rows)]
    return build_grid(cells, table_index=0, doc_id="d", page=1)


def test_key_column_prefers_distinct_text_left_of_numbers():
    assert key_column(_grid([["Rank", "Athlete", "Nation", "Time"],
                             ["1", "Usain Bolt", "Jamaica", "9.58"],
                             ["2", "Tyson Gay", "United States", "9.71"],
                             ["3", "Asafa Powell", "Jamaica", "9.84"]])) == 1
    # repeated text (a club played several seasons) is not a key; fall back to it
    assert key_column(_grid([["Season", "Club", "Apps"], ["2001–02", "Arsenal", "30"],
                             ["2002–03", "Arsenal", "28"], ["2003–04", "Arsenal", "35"]])) == 1
    # long free text is not a key: column 0
    long = "The Notorious B.I.G. - Ready to Die, released September 13, 1994 on Bad Boy"
    assert key_column(_grid([["Year", "Information"], ["1994", long], ["1995", long + "!"]])) == 0


def _text(sentence: str, subject: str | None = "Sean Combs", type_: str = "person"):
    inventory = load_inventory()
    b = AssertionBuilder("d", EntityResolver(load_aliases()), inventory)
    support = Support("d:1:s0", "d", "paragraph", sentence,
                      Provenance("d:1:p0", "d", 1, ("Sean Combs", "Early life")))
    n = text_assertions(b, support, subject, type_)
    b.resolver.resolve()
    out = b.finish()
    assert n == len(out)
    return [(a.subject, a.predicate, a.object) for a in out], out


def test_rule_based_text_patterns():
    got, out = _text("Sean Combs (born November 4, 1969) is an American rapper and producer "
                     "from Harlem. He was born in Harlem, New York City.")
    assert got == [("Sean Combs", "born_on", "November 4, 1969"),
                   ("Sean Combs", "is_a", "American rapper and producer"),
                   ("Sean Combs", "born_in", "Harlem")]
    assert out[0].qualifiers == {"section": "Sean Combs > Early life", "rule": "born"}
    assert out[2].object_entity == "place:harlem" and out[0].confidence == 0.6
    got, _ = _text("Andre Harrell, the president of Uptown Records, signed him. Craig Mack, "
                   "a rapper from New York, joined.")
    assert got == [("Andre Harrell", "leader", "Uptown Records"), ("Craig Mack", "is_a", "rapper")]
    got, out = _text("Released: September 13, 1994", type_="work", subject="Ready to Die")
    assert got == [("Ready to Die", "released", "September 13, 1994")]
    got, out = _text("Label: Bad Boy Records", subject="Ready to Die", type_="work")
    assert got == [("Ready to Die", "publisher", "Bad Boy Records")]
    assert out[0].object_entity == "organization:bad boy records"
    got, out = _text("Producers: Easy Mo Bee", subject="Ready to Die", type_="work")
    assert got == [("Ready to Die", "producer", "Easy Mo Bee")]
    got, out = _text("Mood: dark", subject="Ready to Die", type_="work")
    assert got == [("Ready to Die", "related_to", "dark")]
    assert out[0].qualifiers["predicate_text"] == "Mood"


def test_text_assertions_stop_at_five_per_block():
    sentence = " ".join(f"Band{i} Records is a record label." for i in "ABCDEFG")
    got, _ = _text(sentence)
    assert [s for s, _, _ in got] == [f"Band{i} Records" for i in "ABCDE"]


def test_inventory_maps_headers_and_closes_phrases():
    inv = load_inventory()
    assert inv.for_header(("Population (2010)",), 3) == ("population", "2010")
    assert inv.for_header(("Club(s)",), 0) == ("team", "")
    assert inv.for_header(("Peak chart positions", "US"), 4) == ("peak_chart_positions.us", "")
    assert inv.for_header((), 2) == ("column_3", "")
    assert inv.closed("was born in") == ("born_in", True)
    assert inv.closed("loves") == ("related_to", False)
    assert inv.object_type("nationality") == "country" and inv.object_type("year") == "value"
    assert inv.subject_types["born_on"] == "person"
    assert "born in" in inv.verb_phrases and "founded by" in inv.verb_phrases


def test_inventory_file_is_configurable_and_checked(tmp_path: Path):
    good = tmp_path / "p.toml"
    good.write_text('[won]\nobject = "value"\nsynonyms = ["champion", "title"]\n')
    inv = load_inventory(good)
    assert inv.names == ["won"] and inv.closed("Champion") == ("won", True)
    bad = tmp_path / "bad.toml"
    bad.write_text('[a]\nsynonyms = ["x"]\n[b]\nsynonyms = ["x"]\n')
    with pytest.raises(ConfigError, match="synonym of both a and b"):
        load_inventory(bad)
    parsed = parse(CORPUS / "204-541.html", settings=Settings(predicates_path=good))
    assert {a.predicate for a in parsed.assertions if a.modality == "text"} <= {"won",
                                                                              "related_to"}
