"""The reader's own logic, without a model server (PILAR App. G.1, H.2-H.3):
numbering and re-fitting the packet, reading replies into answers with
resolved citations and flags, and costing table/figure crops for a VLM.
Failures the real server cannot be made to give are injected with the stub
(tests/stub_openai.py); end-to-end runs against the real model server are in
tests/test_llm_server.py."""

from __future__ import annotations

import math
import os
import subprocess
import sys

import pytest

from pilar.config import Settings
from pilar.errors import (LLMReplyError, LLMRequestError, LLMTimeoutError, LLMUnavailableError,
                          ReaderNotConfiguredError)
from pilar.ingest import parse
from pilar.llm import Endpoint
from pilar.model import Citation, Document, Packet, PacketItem
from pilar.packing.tokens import TokenCounter
from pilar.reader import Reader
from pilar.reader.citations import cited_numbers, read_answer, short_answer
from pilar.reader.images import crops, image_tokens, resize
from pilar.reader.prompt import NOT_IN_EVIDENCE, SYSTEM, marked, messages, numbered
from pilar.retrieval.embeddings import Embedder
from tests.conftest import FIXTURES, ROOT

EXAMPLE = FIXTURES / "corpus" / "204-541.html"
"""A small real page (Kanpur) to store before the CLI asks."""
from tests.stub_openai import StubOpenAI
from tests.test_llm import make_pdf


@pytest.fixture(scope="module")
def counter() -> TokenCounter:
    embedder = Embedder(Settings().embedding_model)
    return TokenCounter.for_reader(None, embedder.tokenizer, "minilm")


def _item(text: str, page: int, body_start: int = 0, support: str | None = None) -> PacketItem:
    return PacketItem(text=text, citation=Citation(doc_id="d1", source="/x/a.html", page=page,
                                                   section_path=("A", "B"),
                                                   support_id=support or f"s{page}"),
                      tokens=0, page_id=f"d1:{page}", body_start=body_start)


def _packet() -> Packet:
    head = "## Kanpur (page 1)"
    return Packet(text="", budget=200, tokens=0, items=[
        _item(f"{head}\nThe tallest building is Ratan Tower.", 1, len(head) + 1),
        _item("It has 27 floors.", 1),
        _item("## Evidence units\n### Buildings\nName | Floors\nRatan Tower | 27", 2,
              len("## Evidence units\n### Buildings\nName | Floors\n"))])


def test_markers_go_before_the_evidence_line_and_the_packet_is_refitted(counter):
    pk = _packet()
    ctx = numbered(pk, counter)
    assert ctx.text.splitlines() == [
        "## Kanpur (page 1)", "[1] The tallest building is Ratan Tower.", "[2] It has 27 floors.",
        "## Evidence units", "### Buildings", "Name | Floors", "[3] Ratan Tower | 27"]
    assert ctx.tokens == counter.count(ctx.text) <= ctx.budget == 200
    # markers cost tokens: a budget that held the unnumbered text may drop the last item
    plain = "\n".join(i.text for i in pk.items)
    tight = numbered(pk, counter, budget=counter.count(plain))
    assert len(tight.items) == 2 and tight.tokens <= counter.count(plain)
    assert marked(7, _item("abc", 1, body_start=99)) == "abc[7] "


def test_prompt_is_the_generic_context_only_template(counter):
    ctx = numbered(_packet(), counter)
    msgs = messages("  what is the tallest building in kanpur? ", ctx)
    assert msgs[0] == {"role": "system", "content": SYSTEM}
    assert "only the evidence in [Context]" in SYSTEM and NOT_IN_EVIDENCE in SYSTEM
    assert msgs[1]["content"] == (f"[Context]\n{ctx.text}\n\n[Question]\n"
                                  "what is the tallest building in kanpur?\n\n[Answer]")


def test_citations_resolve_to_packet_items_in_order_of_mention(counter):
    ctx = numbered(_packet(), counter)
    ans = read_answer("q", "Ratan Tower [3][1, 2]\nIt is the tallest [1].", ctx, model="m")
    assert ans.short == "Ratan Tower" and ans.flags == [] and ans.unknown == []
    assert [(c.n, c.citation.support_id, c.citation.page) for c in ans.citations] == [
        (3, "s2", 2), (1, "s1", 1), (2, "s1", 1)]
    assert ans.citations[0].text.endswith("Ratan Tower | 27")
    assert ans.citations[1].citation.section_path == ("A", "B")


def test_flags_for_citing_nothing_unknown_numbers_and_not_in_the_evidence(counter):
    ctx = numbered(_packet(), counter)
    none = read_answer("q", "Ratan Tower.", ctx)
    assert none.flags == ["no_citation"] and none.citations == [] and none.short == "Ratan Tower"
    bad = read_answer("q", "Ratan Tower [9] [2]", ctx)
    assert bad.flags == ["unknown_citation"] and bad.unknown == [9]
    assert [c.n for c in bad.citations] == [2]
    only_bad = read_answer("q", "Ratan Tower [0][4]", ctx, finish_reason="length")
    assert only_bad.flags == ["no_citation", "unknown_citation", "truncated"]
    assert only_bad.unknown == [0, 4]
    missing = read_answer("q", "Not in the evidence.", ctx)
    assert missing.flags == ["not_in_evidence"] and missing.not_in_evidence
    assert missing.short == NOT_IN_EVIDENCE
    # an answer that cites items is not "not in the evidence" for mentioning the phrase
    cited = read_answer("q", "27 [2]\nThe year is not in the evidence.", ctx)
    assert cited.flags == [] and cited.short == "27"


def test_cited_numbers_and_short_answer_forms():
    assert cited_numbers("a [2-4] b [ 7 ; 1 ] c [2]") == [2, 3, 4, 7, 1]
    assert cited_numbers("[1-900]") == [1, 900]
    assert cited_numbers("no [x] brackets [1a]") == []
    assert short_answer("\n\n  1998 [3].  \nmore") == "1998"


def test_reader_endpoint_needs_a_server_and_takes_overrides(tmp_path):
    with pytest.raises(ReaderNotConfiguredError, match="PILAR_LLM_BASE_URL"):
        Endpoint.reader(Settings(home=tmp_path))
    shared = Endpoint.reader(Settings(home=tmp_path, llm_base_url="http://h:1/v1",
                                      llm_model="m1", llm_api_key="k", llm_timeout=7))
    assert (shared.base_url, shared.model, shared.api_key, shared.timeout) == (
        "http://h:1/v1", "m1", "k", 7)
    own = Endpoint.reader(Settings(home=tmp_path, llm_base_url="http://h:1/v1", llm_model="m1",
                                   reader_base_url="http://r:2/v1", reader_timeout=3))
    assert (own.base_url, own.model, own.timeout) == ("http://r:2/v1", None, 3)
    named = Endpoint.reader(Settings(home=tmp_path, llm_base_url="http://h:1/v1",
                                     reader_model="qwen"))
    assert named.model == "qwen"


def test_the_packet_gets_the_budget_less_the_crops_share(tmp_path, counter):
    server = {"home": tmp_path, "llm_base_url": "http://h:1/v1", "llm_model": "m1"}
    text_only = Reader(Settings(**server), counter)
    assert text_only.text_budget(4000) == 4000
    vlm = Reader(Settings(**server, reader_images=True, reader_image_share=0.25), counter)
    assert vlm.text_budget(4000) == 3000
    assert vlm.text_budget(40) == 32  # never below MIN_BUDGET


def test_ask_without_a_reader_says_so_before_retrieving(tmp_path):
    from pilar import Pilar

    p = Pilar(settings=Settings(home=tmp_path))
    with pytest.raises(ReaderNotConfiguredError):
        p.ask("what is the tallest building in kanpur?")


# -- images for a VLM reader ---------------------------------------------------

@pytest.mark.parametrize("h, w, factor, max_pixels, expect", [
    (100, 200, 28, 16384 * 28 * 28, (112, 196)),        # rounded to multiples of 28
    (10, 10, 28, 16384 * 28 * 28, (56, 56)),            # raised to 4 tokens
    (2000, 3000, 32, 1280 * 32 * 32, (928, 1376)),      # scaled down under the cap
])
def test_resize_follows_qwen_vl_rule(h, w, factor, max_pixels, expect):
    rh, rw = resize(h, w, factor, max_pixels)
    assert (rh, rw) == expect
    assert rh % factor == 0 and rw % factor == 0 and rh * rw <= max_pixels
    with pytest.raises(ValueError):
        resize(1, 300, factor, max_pixels)


def test_resize_matches_qwen_vl_utils_when_installed():
    qwen = pytest.importorskip("qwen_vl_utils", reason="qwen-vl-utils is in the gpu extra")
    for h, w in [(100, 200), (10, 10), (2000, 3000), (333, 4444), (57, 1203)]:
        assert resize(h, w, 32, 1280 * 1024) == qwen.smart_resize(
            h, w, factor=32, min_pixels=4 * 1024, max_pixels=1280 * 1024)


def test_image_tokens_count_merged_patches_plus_frame(tmp_path):
    s = Settings(home=tmp_path, reader_image_patch=14, reader_image_max_pixels=16384 * 28 * 28)
    assert image_tokens(200, 100, s) == (112 // 28) * (196 // 28) + 2 == 30
    big = Settings(home=tmp_path)  # Qwen3-VL: 32 px per token side, 1280 tokens at most
    assert image_tokens(3000, 2000, big) == (928 // 32) * (1376 // 32) + 2 == 1249


def test_crops_of_cited_tables_and_figures_fit_the_room(tmp_path):
    pdf = make_pdf(tmp_path / "acme.pdf")
    settings = Settings(home=tmp_path)
    parsed = parse(pdf, settings=settings)
    doc = parsed.document
    doc.uri = str(pdf)
    by_kind = {}
    for s in parsed.supports:
        by_kind.setdefault(s.kind, []).append(s)
    row, figure, para = by_kind["row"][0], by_kind["figure"][0], by_kind["paragraph"][0]
    table = next(t for t in by_kind["table"]
                 if t.provenance.table_index == row.provenance.table_index)

    def item(s):
        return PacketItem(text=s.text, tokens=1, page_id=f"{doc.doc_id}:1", citation=Citation(
            doc_id=doc.doc_id, source=doc.uri, page=1, support_id=s.support_id))

    other_row = by_kind["row"][1]
    packet = Packet(text="", budget=4500, tokens=0,
                    items=[item(para), item(row), item(other_row), item(figure)])
    supports = {f"{doc.doc_id}:1": parsed.supports}
    got = crops(packet, supports, {doc.doc_id: doc}, settings, room=10_000)
    # one crop per table (the rows share it) and one per figure, in item order
    assert [(g.item, g.support_id) for g in got] == [(1, table.support_id),
                                                     (3, figure.support_id)]
    for g in got:
        assert g.png[:8] == b"\x89PNG\r\n\x1a\n" and g.tokens == image_tokens(
            g.width, g.height, settings)
        x0, y0, x1, y1 = next(s for s in parsed.supports
                              if s.support_id == g.support_id).provenance.bbox
        assert abs(g.width - math.ceil((x1 - x0) * settings.vlm_dpi / 72)) <= 2
    # the room is a hard cap: only the crops that fit are attached
    first = got[0].tokens
    assert [g.item for g in crops(packet, supports, {doc.doc_id: doc}, settings,
                                  room=first)] == [1]
    # HTML documents have no crops
    html = Document(doc_id=doc.doc_id, uri=doc.uri, title="", media_type="text/html",
                    sha256="", n_pages=1)
    assert crops(packet, supports, {doc.doc_id: html}, settings, room=10_000) == []
    # image parts go before the text, each named by its item number
    ctx = numbered(packet, TokenCounter.for_reader(None, Embedder(
        settings.embedding_model).tokenizer, "minilm"))
    parts = messages("q", ctx, got)[1]["content"]
    assert [p["type"] for p in parts] == ["text", "image_url", "text", "image_url", "text"]
    assert parts[0]["text"] == "Image of [2]:" and parts[2]["text"] == "Image of [4]:"
    assert parts[1]["image_url"]["url"].startswith("data:image/png;base64,")


# -- reader failures (FAULT INJECTION with the stub of tests/stub_openai.py) ----

@pytest.mark.parametrize("scenario, kind, line", [
    ("text_http500", LLMUnavailableError, "HTTP error 500: Error code: 500"),
    ("text_refusal", LLMRequestError, "refused: I'm sorry, I can't help with that request."),
    ("reader_empty", LLMReplyError, "the reader's reply is empty (finish reason stop)"),
    ("text_timeout", LLMTimeoutError, "timed out after 0.5 s"),
])
def test_reader_failures_raise_one_kind(tmp_path, counter, scenario, kind, line):
    with StubOpenAI() as stub:
        settings = Settings(home=tmp_path, llm_base_url=stub.base_url, llm_model=scenario,
                            llm_max_retries=1, llm_timeout=0.5)
        reader = Reader(settings, counter)
        with pytest.raises(kind) as err:
            reader.answer("what is the tallest building?", reader.context(_packet()))
        assert str(err.value).startswith(line)
        assert err.value.status == (504 if kind is LLMTimeoutError else 502)
        if scenario in ("text_http500", "text_timeout"):
            assert len(stub.requests) == 2  # the client's retry, with backoff
        # streamed: the same kind, or an empty stream (the stub does not speak SSE)
        streamed = kind if scenario in ("text_http500", "text_timeout") else LLMReplyError
        with pytest.raises(streamed):
            list(reader.stream("what is the tallest building?", reader.context(_packet())))


def test_cli_reader_failure_is_one_line(tmp_path):
    with StubOpenAI() as stub:
        env = {**os.environ, "PILAR_HOME": str(tmp_path), "PILAR_LLM_BASE_URL": stub.base_url,
               "PILAR_LLM_MODEL": "text_http500", "PILAR_LLM_MAX_RETRIES": "0",
               "PYTHONPATH": str(ROOT)}
        # a stored document, so that the search succeeds and the reader is called
        subprocess.run([sys.executable, "-m", "pilar", "ingest", str(EXAMPLE)], env=env,
                       capture_output=True, text=True, timeout=600, check=True)
        done = subprocess.run([sys.executable, "-m", "pilar", "ask", "who?"], env=env,
                              capture_output=True, text=True, timeout=600)
    lines = [ln for ln in done.stderr.splitlines() if ln.strip() and "nanobind" not in ln
             and not ln.startswith(" - ") and "refleaks" not in ln]
    assert done.returncode == 1 and done.stdout == ""
    assert lines == ["reader failed: HTTP error 500: Error code: 500 - upstream model crashed"], \
        done.stderr
