"""Entity mentions, normalisation, aliases and within-document linking
(PILAR App. E.2)."""

from __future__ import annotations

import pytest

from pilar.config import Settings
from pilar.errors import ConfigError
from pilar.ingest import parse
from pilar.ingest.entities import EntityResolver, load_aliases
from pilar.ingest.names import (alias_pairs, capitalised_spans, compatible, entity_id,
                                entity_surface, normalise, similarity)
from tests.conftest import FIXTURES

CORPUS = FIXTURES / "corpus"


@pytest.mark.parametrize("name, key", [
    ("U.S.", "us"), ("The Beatles", "beatles"), ("Café  Olé", "cafe ole"),
    ('Sean "Diddy" Combs', "sean diddy combs"), ("Manchester United F.C.[1]",
                                                 "manchester united fc"),
    ("Drivers' Championship", "drivers championship"), ("R&B", "r and b"),
    ("ＡＢＣ", "abc")])
def test_normalise(name, key):
    assert normalise(name) == key


@pytest.mark.parametrize("text, surface", [
    ("Universal Music Group", "Universal Music Group"), ("@ Vancouver Canucks",
                                                         "Vancouver Canucks"),
    ("Derby County (R)", "Derby County"), ("Georgia (country)", "Georgia (country)"),
    ("1993", None), ("September 13, 1994", None), ("Yes", None), ("–", None),
    ("2001–02", None), ("badboyonline.com", None), ("did not qualify", None)])
def test_entity_surface(text, surface):
    assert entity_surface(text) == surface


def test_capitalised_spans_and_declared_aliases():
    text = ("Bad Boy Records (originally Bad Boy Entertainment) is a label founded by Sean "
            "Combs, also known as Diddy. In 1994 the label signed The Notorious B.I.G. and "
            "Craig Mack in the U.S. He moved to the Los Angeles-based Death Row Records. The "
            "National Football League (NFL) and The Lord of the Rings.")
    spans = capitalised_spans(text)
    assert [s for s, _, _ in spans] == [
        "Bad Boy Records", "Bad Boy Entertainment", "Sean Combs", "Diddy",
        "The Notorious B.I.G.", "Craig Mack", "U.S.", "Los Angeles", "Death Row Records",
        "The National Football League", "NFL", "The Lord of the Rings"]
    assert all(text[a:b] == s for s, a, b in spans)
    assert alias_pairs(text, spans) == [("Bad Boy Records", "Bad Boy Entertainment"),
                                        ("The National Football League", "NFL"),
                                        ("Sean Combs", "Diddy")]


@pytest.mark.parametrize("a, b, score", [
    ("manchester united", "manchester city", 0.0),
    ("manchester united", "manchester united fc", 0.9),
    ("jonatan johansson", "jonathan johansson", 0.9714),
    ("harry wilson", "larry wilson", 0.0),
    ("cattle creek", "castle creek", 0.0),
    ("latin america", "latin american", 0.0),
    ("james h harrison", "james harrison", 0.9),
    ("george h w bush", "george w bush", 0.0),
    ("apollo 11", "apollo 12", 0.0),
    ("jack black", "black jack", 0.0),
    ("german", "germany", 0.0)])
def test_similarity_guards(a, b, score):
    assert similarity(a, b) == pytest.approx(score, abs=1e-4)


def test_types_are_compatible_within_families():
    assert compatible("country", "place") and compatible("team", "organization")
    assert compatible("thing", "person") and not compatible("person", "country")
    assert entity_id("country", "United States") == "country:united states"


def _resolve(mentions, declared=()):
    r = EntityResolver(load_aliases())
    idx = [r.mention(text, type_, f"d:1:s{i}") for i, (text, type_) in enumerate(mentions)]
    for name, alias in declared:
        r.declare_alias(name, alias)
    entities = {e.entity_id: e for e in r.resolve()}
    return entities, [r.mention_entity[i] if i is not None else None for i in idx]


def test_resolver_clusters_mentions_of_one_entity():
    entities, ids = _resolve([
        ("USA", "thing"), ("United States", "country"), ("U.S.", "place"),
        ("Barack Obama", "person"), ("Obama", "thing"),
        ("National Football League", "organization"), ("NFL", "thing"),
        ("Jonatan Johansson", "person"), ("Jonathan Johansson", "thing"),
        ("Manchester United", "team"), ("Manchester City", "team"),
        ("Jordan", "person"), ("Jordan", "country"),
        ("Bad Boy Records", "organization"), ("Bad Boy Entertainment", "thing"),
        ("1993", "thing")],
        declared=[("Bad Boy Records", "Bad Boy Entertainment")])
    assert ids[:3] == ["country:united states"] * 3
    assert entities["country:united states"].aliases == ("U.S.", "USA")
    assert entities["country:united states"].mentions == ("d:1:s0", "d:1:s1", "d:1:s2")
    assert ids[3] == ids[4] == "person:barack obama"
    assert ids[5] == ids[6] == "organization:national football league"
    assert ids[7] == ids[8] == "person:jonatan johansson"  # a tie: the first seen
    assert ids[9] != ids[10]
    assert (ids[11], ids[12]) == ("person:jordan", "country:jordan")
    assert ids[13] == ids[14] == "organization:bad boy records"
    assert ids[15] is None
    assert len(entities) == 9


def test_alias_table_is_configurable(tmp_path):
    table = tmp_path / "aliases.tsv"
    table.write_text("# test\nAcme Corporation\torganization\tACME|Acme Corp.\n")
    r = EntityResolver(load_aliases(table))
    r.mention("Acme Corp.", "thing", "d:1:s0")
    assert [(e.entity_id, e.name) for e in r.resolve()] == [
        ("organization:acme corporation", "Acme Corporation")]
    bad = tmp_path / "bad.tsv"
    bad.write_text("Acme\tcompany\tACME\n")
    with pytest.raises(ConfigError, match="expected name<TAB>type<TAB>aliases"):
        load_aliases(bad)


def test_page_entities_and_mentions_on_a_real_page(wtq_pages):
    parsed = parse(wtq_pages / "200-14.html")
    entities = {e.entity_id: e for e in parsed.entities}
    label = entities["organization:bad boy records"]
    assert label.name == "Bad Boy Records" and label.aliases == ("Bad Boy Entertainment",)
    supports = {s.support_id: s for s in parsed.supports}
    kinds = {supports[sid].kind for sid in label.mentions}
    assert {"row", "paragraph"} <= kinds
    combs = entities["person:sean diddy combs"]
    assert combs.aliases == ("Combs",) and len(combs.mentions) >= 5
    assert entities["country:united states"].aliases == ("U.S.",)
    # every mention is a support of the document; ids are unique
    assert all(sid in supports for e in parsed.entities for sid in e.mentions)
    assert len(entities) == len(parsed.entities)
    # subjects and entity objects point at entities of the document
    for a in parsed.assertions:
        for eid in (a.subject_entity, a.object_entity):
            assert eid is None or eid in entities


def test_entities_are_shared_across_documents(wtq_pages):
    ids = [{e.entity_id for e in parse(wtq_pages / name).entities}
           for name in ("200-14.html", "204-15.html")]
    assert "country:united states" in ids[0] & ids[1]


def test_within_document_threshold_is_a_setting():
    strict = EntityResolver(load_aliases(), threshold=0.99)
    for i, name in enumerate(("Jonatan Johansson", "Jonathan Johansson")):
        strict.mention(name, "person", f"d:1:s{i}")
    assert len(strict.resolve()) == 2
    assert Settings().link_threshold_doc == 0.75 and Settings().link_threshold_cross == 0.8
