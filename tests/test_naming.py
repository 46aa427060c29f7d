"""The names, codes and dates multi-hop chains are read by (PILAR §3.4):
identifier codes made at ingest, proper and model names, the words around a
mention, the versions a question names, the text it asks and dates, on
real documents of ``../shared/data/multihop2`` and small units."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

from pilar.ingest import parse
from pilar.ingest.codes import code_entities, code_key, codes
from pilar.ingest.names import capitalised_spans, model_names, proper_name
from pilar.model import Provenance, Support, Unit
from pilar.retrieval.naming import asked_text, mention_context, names_matcher, siblings, title_key


def test_codes_are_identifiers_as_written_with_one_key():
    text = ("During the discharge of vessel call VC-24-1183 the spreader on crane QC-09 failed; "
            "reported by TVR. Container CVSU 481207 3 (VT 08.113), IMO 9811427, EUR 182.00, "
            "USD 31,750, on 2024-06-16, firmware 2.4.0, Louis XIV.")
    found = codes(text)
    assert [s for s, _ in found] == ["VC-24-1183", "QC-09", "TVR", "CVSU 481207 3", "481207",
                                     "VT 08.113", "IMO 9811427", "9811427"]
    assert code_key("VSC-65") == code_key("VSC 65") == code_key("vsc65") == "VSC65"
    assert codes("SAFETY AND HEALTH NOTICE FOR ONT") == []  # a heading in capitals


def test_code_entities_are_one_per_key_mentioned_where_they_occur():
    supports = [Support(f"d:1:s{i}", "d", kind, text, Provenance(f"d:p{i}", "d", 1))
                for i, (kind, text) in enumerate([
                    ("paragraph", "Crane QC-09 stopped; QC-10 took over."),
                    ("row", "QC 09 | VSC-65 | KTL-40")], 1)]
    by_id = {e.entity_id: e for e in code_entities(supports)}
    assert set(by_id) == {"code:qc09", "code:qc10", "code:vsc65", "code:ktl40"}
    assert by_id["code:qc09"].mentions == ("d:1:s1", "d:1:s2")
    assert by_id["code:qc09"].type == "code"
    assert set((by_id["code:qc09"].name, *by_id["code:qc09"].aliases)) == {"QC-09", "QC 09"}


def test_proper_names_siblings_and_mentions():
    assert proper_name("Skelmar Tonnage AS") and proper_name("Port of Ostrevik")
    assert not proper_name("Length overall") and not proper_name("Operator (time charterer)")
    assert not proper_name("Corvassa")
    ardent = (title_key("MV Corvassa Ardent – Vessel particulars"), frozenset())
    argent = (title_key("MV Corvassa Argent – Vessel particulars"), frozenset())
    tariff = (title_key("Port of Ostrevik – Port tariff 2024"), frozenset())
    assert siblings(ardent, argent) and not siblings(ardent, tariff)
    assert siblings((title_key("ONT terminal handling charges 2023"), frozenset()),
                    (title_key("ONT terminal handling charges 2024"), frozenset()))
    match = names_matcher(["VSC-65", "Corvassa Ardent"])
    assert match("model vsc 65 fitted") and match("MV CORVASSA ARDENT") and not match("VSC-651")
    assert match("(VSC65)") and match("Corvassa_Ardent") and not match("xVSC-65")
    assert not match("CorvassaArdent") and not match("VSC-65²") and not names_matcher([])("VSC-65")


def test_a_model_is_its_name_and_number_beside_its_sibling(shared_data: Path):
    assert model_names("The Megalift 65 cranes", capitalised_spans("The Megalift 65 cranes")) \
        == ["The Megalift 65"]
    for text in ("In Round 3 teams", "On June 14 people", "It paid EUR 36 per box",
                 "built by Vostrand 2019 onwards", "Ardent Lane 366 m long", "Heidelberg 30 def."):
        assert model_names(text, capitalised_spans(text)) == [], text
    assert proper_name("Megalift 65") and proper_name("The Megalift 65")
    assert not proper_name("Round 3") and not proper_name("June 14") and not proper_name("Windows 2000")
    # the news names the cranes by model; only the datasheet of that model shares it
    named = {n: {e.entity_id for e in parse(shared_data / "multihop2" / f"{n}.html").entities}
             for n in ["news_ont_megalift_delivery", "vostrand_megalift61_datasheet",
                       "vostrand_megalift65_datasheet"]}
    assert "thing:megalift 65" in named["news_ont_megalift_delivery"]
    assert "thing:megalift 65" in named["vostrand_megalift65_datasheet"]
    assert "thing:megalift 65" not in named["vostrand_megalift61_datasheet"]
    assert "thing:megalift 61" in named["vostrand_megalift61_datasheet"]


def test_mention_context_is_the_column_or_the_words_before():
    row = Unit("u1", "d", 1, "row", "VC-24-1183 | Corvassa Ardent | CVL", "", "s1",
               headers=("Call ID", "Vessel", "Operator"),
               cells=("VC-24-1183", "Corvassa Ardent", "CVL"))
    assert mention_context(row, "Corvassa Ardent") == "Vessel Corvassa Ardent"
    text = Unit("u2", "d", 1, "paragraph", "during the discharge of vessel call VC-24-1183, one",
                "", "s2")
    assert mention_context(text, "VC-24-1183") == "the discharge of vessel call , one"
    # found where the text names it however it is written, offsets kept where "İ" lowers to two
    assert mention_context(replace(text, text="İzmir: call vc 24 1183 berthed late"),
                           "VC-24-1183") == "İzmir: call berthed late"


def test_a_question_names_a_version_by_its_year_or_model_number():
    from pilar.retrieval.naming import names_version, versions

    tariff = versions("What port dues apply under the 2024 tariff?")
    assert names_version(tariff, "Port of Ostrevik – Port tariff 2024",
                          "Port of Ostrevik – Port tariff 2023")
    assert not names_version(tariff, "Port of Ostrevik – Port tariff 2023",
                              "Port of Ostrevik – Port tariff 2024")
    pump = versions("How many employees did the maker of the VX-220 pump have in 2023?")
    assert names_version(pump, "Orrin Verta 220 – Datasheet", "Orrin Verta 160 – Datasheet")
    lengths = versions("How long does the spreader take to telescope from 20 ft to 45 ft?")
    assert not names_version(lengths, "Kovalen Tandemlock TL-45 spreader",
                              "Kovalen Tandemlock TL-40 spreader")
    assert not names_version(lengths, "Kovalen Tandemlock TL-40 spreader",
                              "Kovalen Tandemlock TL-45 spreader")


def test_the_asked_text_leaves_out_the_names_a_question_starts_from():
    """A chain's last document answers what the question asks, not the thing
    it names (and the word naming its kind: "incident", "container")."""
    assert asked_text("In which town is the maker of RTG-27 headquartered?",
                      ["RTG-27"]) == "In which town is the maker of headquartered?"
    assert asked_text("What maximum power does the reefer unit of container CVSU 481207 3 draw?",
                      ["CVSU 481207 3"]) == "What maximum power does the reefer unit of draw?"
    assert asked_text("What is the tallest building?", []) == "What is the tallest building?"


def test_dates_are_read_in_their_unambiguous_forms():
    from pilar.ingest.dates import dates_in

    assert dates_in("Date | 13 June 2024") == {"2024-06-13"}
    assert dates_in("2024-06-13 | WO-55812 | Spreader") == {"2024-06-13"}
    assert dates_in("from June 13, 2024 to 1st Sept. 2024") == {"2024-06-13", "2024-09-01"}
    # no day, no real date, a locale-dependent form, or digits of a code: no date
    assert dates_in("May 2024; 2024-02-30; 13/06/2024; IR-2024-06-131") == frozenset()
