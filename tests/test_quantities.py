"""Quantities linked to the bands that hold them (pilar.ingest.quantities,
pilar.graph.linking.link_bands): a ship's particulars lead to the pilotage
rules by its draught and length and to the port tariff by its tonnage, on
real documents of ``../shared/data/multihop2`` and every graph backend."""

from __future__ import annotations

import math
from pathlib import Path

import pytest

from pilar import Pilar
from pilar.graph.linking import in_collection, link_across
from pilar.ingest import parse
from pilar.ingest.quantities import (Band, compatible_dimensions, holds, is_measure, parse_band,
                                     parse_quantity)

DOCS = ["corvassa_ardent_particulars", "opa_pilotage_tug_rules", "opa_port_tariff_2024",
        "corvassa_argent_particulars"]


def test_ranges_values_and_dimensions_are_read_as_written():
    assert parse_band("up to 14.0 m") == Band(-math.inf, 14.0, "m")
    assert parse_band("14.1 m to 15.0 m") == Band(14.1, 15.0, "m")
    assert parse_band("5,001 to 25,000 GT") == Band(5001.0, 25000.0, "gt")
    assert parse_band("above 150,000 GT") == Band(150000.0, math.inf, "gt")
    assert parse_band("300.1 m – 330 m") == Band(300.1, 330.0, "m")
    assert parse_band("15 m to 12 m") is None  # not a range: the ends are reversed
    assert parse_band("15.5 m") is None and parse_band("at any state of the tide") is None
    assert parse_quantity("152,300") == (152300.0, "") and parse_quantity("15.5 m") == (15.5, "m")
    assert parse_quantity("2 × 2,500 kW") is None and parse_quantity("up to 5 m") is None
    assert holds(Band(14.1, 15.0, "m"), 15.0, "m") and not holds(Band(14.1, 15.0, "m"), 15.5, "m")
    assert not holds(Band(-math.inf, 20.0, "t"), 15.5, "m")  # units disagree
    assert not holds(Band(1.0, 25.0, ""), 7.0, "")  # a count or a year is no measure
    assert holds(Band(150000.0, math.inf, "gt"), 152300.0, "")  # a value written without one
    assert compatible_dimensions("Maximum draught", "Draught on arrival")
    assert compatible_dimensions("Length overall (LOA)", "Length overall")
    assert compatible_dimensions("Gross tonnage", "Gross tonnage band")
    assert not compatible_dimensions("Air draught", "Draught on arrival")
    assert not compatible_dimensions("Beam", "Length overall")
    assert is_measure("band:91b7d5f54c7eb366:0.3") and is_measure("team-a:quantity:ab12:1.10")
    assert not is_measure("code:band") and not is_measure("thing:maximum draught")


def _linked(graph_store, shared_data: Path) -> dict:
    docs = {}
    for name in DOCS:
        parsed = parse(shared_data / "multihop2" / f"{name}.html")
        in_collection(parsed)
        parsed.same_as = link_across(parsed, graph_store)
        graph_store.write_document(parsed)
        docs[name] = parsed
    return docs


def _entity(parsed, label: str):
    return next(e for e in parsed.entities if any(a.startswith(label + ":") for a in e.aliases))


def test_a_value_is_linked_to_the_band_of_its_dimension_that_holds_it(graph_store,
                                                                      shared_data: Path):
    docs = _linked(graph_store, shared_data)
    ardent, argent = docs["corvassa_ardent_particulars"], docs["corvassa_argent_particulars"]
    rules, tariff = docs["opa_pilotage_tug_rules"], docs["opa_port_tariff_2024"]
    bands = {e.entity_id: e.name for d in (rules, tariff) for e in d.entities if e.type == "band"}
    links = {}
    for d in docs.values():
        for link in d.same_as:
            if link.method == "band":
                links.setdefault(link.source, set()).add(link.target)
                links.setdefault(link.target, set()).add(link.source)

    def bands_of(parsed, label):
        return sorted(bands[t] for t in links.get(_entity(parsed, label).entity_id, ()))

    assert bands_of(ardent, "Maximum draught") == ["above 15.0 m"]
    assert bands_of(ardent, "Length overall (LOA)") == ["above 330 m"]
    assert bands_of(ardent, "Gross tonnage") == ["above 150,000 GT"]
    assert bands_of(ardent, "Air draught") == [] and bands_of(ardent, "Beam") == []
    # the sister ship, stored after the bands, is linked by its own values
    assert bands_of(argent, "Maximum draught") == ["above 15.0 m"]
    assert bands_of(argent, "Gross tonnage") == ["above 150,000 GT"]
    # the band is a bridge: from the draught row the graph reaches the rules' row
    row = next(s.support_id for s in ardent.supports if s.text.startswith("Maximum draught"))
    found = {b.entity_id: b for b in graph_store.bridges([row], 10, 20)}
    draught = found[_entity(ardent, "Maximum draught").entity_id]
    reached = {pid.rpartition(":")[0] for pid, _, _ in draught.pages}
    assert rules.document.doc_id in reached and tariff.document.doc_id not in reached


@pytest.fixture(scope="module")
def band_store(shared_data: Path, tmp_path_factory) -> Pilar:
    p = Pilar(home=tmp_path_factory.mktemp("bands"))
    results = p.ingest([shared_data / "multihop2" / f"{n}.html" for n in DOCS])
    assert [r.status for r in results] == ["ingested"] * len(DOCS)
    return p


def test_a_chain_runs_from_a_value_to_the_rule_of_its_band(band_store: Pilar):
    question = "Within what tidal window may MV Corvassa Ardent enter Ostrevik at its maximum draught?"
    hit = band_store.search(question, budget=1024, k=3, profile="multi-hop")
    stems = [Path(p.source).stem for p in hit.pages]
    assert stems[:2] == ["corvassa_ardent_particulars", "opa_pilotage_tug_rules"]
    bridge = hit.pages[1].trace["bridge_path"][2]  # a value of the particulars the rules band
    assert bridge in {"15.5 m (unit of corvassa_ardent_particulars)",
                      "366.0 m (unit of corvassa_ardent_particulars)"}
    assert "±2 hours of high water" in hit.packet.text


@pytest.fixture(scope="module")
def tariff_store(shared_data: Path, tmp_path_factory) -> Pilar:
    p = Pilar(home=tmp_path_factory.mktemp("tariffs"))
    names = ["corvassa_ardent_particulars", "opa_port_tariff_2023", "opa_port_tariff_2024",
             "news_corvassa_nex2_service"]
    assert {r.status for r in p.ingest([shared_data / "multihop2" / f"{n}.html"
                                        for n in names])} == {"ingested"}
    return p


def test_the_version_a_question_does_not_name_keeps_half_its_score(tariff_store: Pilar):
    """Both tariffs hold the ship's tonnage band; the question names 2024, so
    the 2023 tariff is no chain's page and, even as a chain's start, keeps
    half its score."""
    question = ("What port dues rate per GT applies, on a deep-sea call under the 2024 tariff, "
                "to the ship that made the first NEX-2 call at Ostrevik?")
    hit = tariff_store.search(question, budget=1024, k=4, profile="multi-hop")
    by_stem = {Path(p.source).stem: p for p in hit.pages}
    old, new = by_stem["opa_port_tariff_2023"], by_stem["opa_port_tariff_2024"]
    assert old.trace["sibling_of_chain"] == pytest.approx(old.score)  # halved
    assert [Path(p.source).stem for p in hit.pages] == [
        "news_corvassa_nex2_service", "corvassa_ardent_particulars", "opa_port_tariff_2024",
        "opa_port_tariff_2023"]
    assert new.score > old.score
