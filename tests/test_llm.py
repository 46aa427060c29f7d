"""Fault injection for LLM text extraction and VLM visual extraction (PILAR
§3.2, App. E.3-E.4): the local OpenAI-compatible STUB server of
tests/stub_openai.py plays recorded replies (tests/fixtures/llm/) - timeouts,
HTTP errors, refusals, malformed JSON - that a real model cannot be made to
give on demand. The real-server tests are in tests/test_llm_server.py."""

from __future__ import annotations

import importlib.util

import base64
from pathlib import Path

import pymupdf
import pytest

from pilar.config import Settings
from pilar.errors import ConfigError
from pilar.ingest import parse
from pilar.ingest.llm import Item, VisualContext, VisualItem, parse_reply, quality_control
from pilar.ingest.predicates import load_inventory
from tests.stub_openai import StubOpenAI

PAGE = b"""<html><head><title>Bad Boy Records</title></head><body>
<h1>Bad Boy Records</h1>
<p>Bad Boy Records is a record label founded in 1993 by Sean Combs in New York City.</p>
<p>The label signed The Notorious B.I.G. and Craig Mack in 1994, and both albums sold well.</p>
<p>Faith Evans released her debut album Faith in 1995 on the label.</p>
<p>Total Entertainment released a self-titled album in 1996 through the label.</p>
</body></html>"""


@pytest.fixture(scope="module")
def stub():
    with StubOpenAI() as server:
        yield server


def _settings(stub: StubOpenAI, tmp_path: Path, model: str, **kw) -> Settings:
    base = dict(home=tmp_path, llm_base_url=stub.base_url, llm_model=model, llm_timeout=2.0,
                llm_max_retries=0, llm_concurrency=1)
    return Settings(**{**base, **kw})


def _llm(parsed):
    return [a for a in parsed.assertions if a.extractor == "llm"]


def test_text_extraction_keeps_five_closed_predicates_and_links_entities(stub, tmp_path):
    before = len(stub.requests)
    parsed = parse(PAGE, uri="bad-boy.html", settings=_settings(stub, tmp_path, "text_ok"))
    got = _llm(parsed)
    first = [a for a in got if a.supports == (parsed.supports[1].support_id,)]
    assert [(a.subject, a.predicate, a.object) for a in first] == [
        ("Bad Boy Records", "founder", "Sean Combs"),
        ("Bad Boy Records", "founded", "1993"),
        ("Bad Boy Records", "related_to", "New York City"),
        ("Bad Boy Records", "is_a", "record label")]  # Universal Music Group: not in the text
    assert first[0].qualifiers["year"] == "1993" and first[0].modality == "text"
    assert first[2].qualifiers["predicate_text"] == "was started in"
    assert first[0].subject_entity == "organization:bad boy records"
    assert first[0].object_entity == "person:sean combs"
    # the second block's reply came in a code fence: still read
    second = [a for a in got if a.supports == (parsed.supports[2].support_id,)]
    assert [(a.subject, a.predicate, a.object) for a in second] == [
        ("The Notorious B.I.G.", "member_of", "Bad Boy Records")]
    assert any("1 item(s) not in the schema dropped" in w for w in parsed.warnings)
    assert f"text extraction {parsed.supports[1].support_id}: QC dropped 1 (unverified object)" \
        in parsed.warnings
    # what the client sent: a JSON-schema response format over the closed inventory
    sent = stub.requests[before]
    assert sent["model"] == "text_ok" and sent["temperature"] == 0
    schema = sent["response_format"]["json_schema"]["schema"]
    assert sent["response_format"]["type"] == "json_schema"
    item = schema["properties"]["assertions"]["items"]
    assert item["properties"]["predicate"]["enum"] == load_inventory().names
    assert schema["properties"]["assertions"]["maxItems"] == 5
    assert len(stub.requests) - before == 4  # one request per paragraph


@pytest.mark.parametrize("model, warning", [
    ("text_malformed", "malformed JSON"),
    ("text_refusal", "refused: I'm sorry, I can't help with that request."),
    ("text_http400", "refused 400"),
])
def test_bad_replies_become_warnings_not_errors(stub, tmp_path, model, warning):
    parsed = parse(PAGE, uri="bad-boy.html", settings=_settings(stub, tmp_path, model))
    assert _llm(parsed) == []
    notes = [w for w in parsed.warnings if w.startswith("text extraction")]
    assert len(notes) == 4 and all(warning in w for w in notes), notes
    # the rest of the graph is still built (entities from the text)
    assert any(e.name == "Sean Combs" for e in parsed.entities)


def test_each_block_is_on_its_own(stub, tmp_path):
    parsed = parse(PAGE, uri="bad-boy.html", settings=_settings(stub, tmp_path, "text_mixed"))
    assert [(a.subject, a.predicate, a.object) for a in _llm(parsed)] == [
        ("Bad Boy Records", "founder", "Sean Combs")]
    notes = sorted(w.split(": ", 1)[1] for w in parsed.warnings if "extraction" in w)
    assert notes[0].startswith("malformed JSON") and notes[1] == "refused: I can't do that."


def test_timeouts_stop_calling_after_repeated_failures(stub, tmp_path):
    settings = _settings(stub, tmp_path, "text_timeout", llm_timeout=0.3, llm_max_failures=2)
    before = len(stub.requests)
    parsed = parse(PAGE, uri="bad-boy.html", settings=settings)
    assert _llm(parsed) == []
    notes = [w.split(": ", 1)[1] for w in parsed.warnings if w.startswith("text extraction")]
    timed_out = f"timed out after 0.3 s ({stub.base_url})"
    assert notes == [timed_out, timed_out, "skipped after repeated failures",
                     "skipped after repeated failures"]
    assert len(stub.requests) - before == 2  # two timeouts, then no further calls


def test_the_client_retries_server_errors(stub, tmp_path):
    settings = _settings(stub, tmp_path, "text_http500", llm_max_retries=1, llm_max_failures=1)
    before = len(stub.requests)
    parsed = parse(PAGE, uri="bad-boy.html", settings=settings)
    notes = [w.split(": ", 1)[1] for w in parsed.warnings if w.startswith("text extraction")]
    assert notes[0].startswith("HTTP error 500") and notes[1:] == [
        "skipped after repeated failures"] * 3
    assert len(stub.requests) - before == 2  # the first try and one retry


def test_parse_reply_reads_lists_fences_and_drops_bad_items():
    reply = parse_reply('[{"subject": "A", "predicate": "p", "object": "B"}, {"subject": ""}]',
                        None, Item)
    assert [(i.subject, i.object) for i in reply.items] == [("A", "B")] and reply.dropped == 1
    assert parse_reply('{"items": []}', None, Item).error == "reply has no assertions list"
    assert parse_reply("", None, Item).error == "empty reply"
    assert parse_reply(None, "no", Item).error == "refused: no"


# -- visual ----------------------------------------------------------------

def make_pdf(path: Path) -> Path:
    """A one-page report with a heading, a paragraph, a ruled table and a bar
    chart image with captions (what tests/fixtures/llm/visual_ok.json answers)."""
    doc = pymupdf.open()
    page = doc.new_page(width=595, height=842)
    page.insert_text((72, 72), "Acme Corporation annual report", fontsize=18, fontname="hebo")
    page.insert_text((72, 110), "Results", fontsize=14, fontname="hebo")
    page.insert_textbox(pymupdf.Rect(72, 120, 520, 170),
                        "Acme Corporation is a maker of anvils. Revenue reached 4,200 million "
                        "dollars in 2020 and the company employs 12,000 people.", fontsize=10)
    rows = [["Year", "Revenue", "Employees"], ["2019", "3,900", "11,500"],
            ["2020", "4,200", "12,000"]]
    x0, y0, cw, rh = 72, 200, 120, 20
    for r, row in enumerate(rows):
        for c, text in enumerate(row):
            page.insert_text((x0 + c * cw + 4, y0 + r * rh + 14), text, fontsize=10,
                             fontname="hebo" if r == 0 else "helv")
    for r in range(len(rows) + 1):
        page.draw_line((x0, y0 + r * rh), (x0 + 3 * cw, y0 + r * rh))
    for c in range(4):
        page.draw_line((x0 + c * cw, y0), (x0 + c * cw, y0 + len(rows) * rh))
    page.insert_text((72, 190), "Table 1: Acme revenue and staff", fontsize=10)
    pix = pymupdf.Pixmap(pymupdf.csRGB, pymupdf.IRect(0, 0, 200, 120), 0)
    pix.clear_with(230)
    for x0_, x1_, top in ((20, 60, 40), (100, 140, 20)):
        for x in range(x0_, x1_):
            for y in range(top, 120):
                pix.set_pixel(x, y, (30, 60, 200))
    page.insert_image(pymupdf.Rect(72, 320, 312, 464), stream=pix.tobytes("png"))
    page.insert_text((72, 480), "Figure 1: Acme revenue by year, 2019 and 2020", fontsize=10)
    doc.save(path)
    return path


def test_visual_assertions_pass_two_stage_qc(stub, tmp_path):
    pdf = make_pdf(tmp_path / "acme.pdf")
    settings = Settings(home=tmp_path, vlm_model="visual_ok", vlm_base_url=stub.base_url,
                        llm_timeout=5.0, llm_max_retries=0)
    before = len(stub.requests)
    parsed = parse(pdf, settings=settings)
    vlm = [a for a in parsed.assertions if a.extractor == "vlm"]
    by_kind = {s.support_id: s.kind for s in parsed.supports}
    assert sorted((by_kind[a.supports[0]], a.modality, a.subject, a.predicate, a.object)
                  for a in vlm) == [
        ("figure", "figure", "Acme Corporation", "related_to", "4,200 million dollars"),
        ("table", "table", "Acme Corporation", "price", "4,200")]
    table = next(a for a in vlm if a.modality == "table")
    assert table.qualifiers["evidence"] == "row 2020, column Revenue"
    assert table.qualifiers["verified_by"] == "section+ocr" and table.confidence == 0.8
    assert table.subject_entity and table.subject_entity.endswith(":acme corporation")
    figure = next(a for a in vlm if a.modality == "figure")
    assert figure.qualifiers["predicate_text"] == "revenue in 2020"
    qc = sorted(w.split(": ", 1)[1] for w in parsed.warnings if "QC dropped" in w)
    assert qc == ["QC dropped 1 (unverified object)",
                  "QC dropped 3 (not grounded, unverified object, unverified subject)"]
    # each request: the crop as a PNG data URL, the OCR text and the caption
    sent = stub.requests[before:]
    assert len(sent) == 2
    for body in sent:
        parts = body["messages"][1]["content"]
        url = parts[0]["image_url"]["url"]
        assert url.startswith("data:image/png;base64,")
        assert base64.b64decode(url.split(",", 1)[1])[:8] == b"\x89PNG\r\n\x1a\n"
        assert "grounded" in body["response_format"]["json_schema"]["schema"][
            "properties"]["assertions"]["items"]["required"]
    texts = sorted(body["messages"][1]["content"][1]["text"] for body in sent)
    assert texts[0] == ("OCR text:\nFigure 1: Acme revenue by year, 2019 and 2020\n\n"
                        "Caption: Figure 1: Acme revenue by year, 2019 and 2020")
    assert texts[1].endswith("2020 | 4,200 | 12,000\n\nCaption: Table 1: Acme revenue and staff")


def test_no_vlm_means_no_visual_assertions(tmp_path):
    parsed = parse(make_pdf(tmp_path / "acme.pdf"), settings=Settings(home=tmp_path))
    assert parsed.assertions and {a.extractor for a in parsed.assertions} == {"table", "rules"}
    assert not any(a.modality == "figure" for a in parsed.assertions)


def test_html_has_no_crops_for_the_vlm(stub, tmp_path):
    settings = Settings(home=tmp_path, vlm_model="visual_ok", vlm_base_url=stub.base_url)
    before = len(stub.requests)
    parsed = parse(PAGE, uri="bad-boy.html", settings=settings)
    assert not any(a.extractor == "vlm" for a in parsed.assertions)
    assert len(stub.requests) == before


@pytest.mark.skipif(importlib.util.find_spec("vllm") is not None,
                    reason="the gpu extra (vllm) is installed here")
def test_batch_mode_needs_the_gpu_extra(tmp_path):
    settings = Settings(home=tmp_path, vlm_model="Qwen/Qwen2.5-VL-3B-Instruct", vlm_batch=True)
    with pytest.raises(ConfigError, match="gpu extra"):
        parse(make_pdf(tmp_path / "acme.pdf"), settings=settings)


def test_quality_control_stages():
    ctx = VisualContext(ocr="Year | Revenue\n2020 | 4,200", caption="Table 1: Acme revenue",
                        section="Acme Corporation makes anvils.", page_entity="Acme")

    def item(subject, obj, grounded=True):
        return VisualItem(subject=subject, predicate="price", object=obj, grounded=grounded)

    accepted, rejected = quality_control(
        [item("Acme Corporation", "4200"), item("Acme", "4,200 USD", grounded=False),
         item("Acme Corporation", "4,300"), item("Initech", "4,200"),
         item("Acme", "Revenue 4,200")], ctx)
    assert [(i.object, v, c) for i, v, c in accepted] == [
        ("4200", "section+ocr", 0.8), ("Revenue 4,200", "caption+section+ocr", 0.8)]
    assert [(i.subject, r) for i, r in rejected] == [
        ("Acme", "not grounded"), ("Acme Corporation", "unverified object"),
        ("Initech", "unverified subject")]
    # nothing to check against: kept, at lower confidence
    kept, dropped = quality_control([item("Acme", "7")], VisualContext())
    assert [(v, c) for _, v, c in kept] == [("none", 0.5)] and dropped == []


def test_text_items_are_checked_against_their_passage():
    ctx = VisualContext(section="The label signed Craig Mack in 1994.", page_entity="Bad Boy Records")

    def item(subject, obj):
        return Item(subject=subject, predicate="member_of", object=obj)

    accepted, rejected = quality_control(
        [item("Craig Mack", "Bad Boy Records"), item("Craig Mack", "Arista Records"),
         item("Craig Mack", "1995")], ctx)
    assert [(i.object, v) for i, v, _ in accepted] == [("Bad Boy Records", "section+page")]
    assert [(i.object, r) for i, r in rejected] == [("Arista Records", "unverified object"),
                                                    ("1995", "unverified object")]
