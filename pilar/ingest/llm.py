"""LLM text extraction and VLM visual extraction with quality control
(PILAR §3.2; App. E.3 structured visual assertion extraction, App. E.4
quality control).

Both talk to any OpenAI-compatible chat endpoint (vLLM in production)
through the shared transport :mod:`pilar.llm`, asking for JSON that follows
a schema (structured output); this module keeps the prompts, the schemas,
reply validation and quality control:

- :class:`TextExtractor` — per text block: ``{"assertions": [{subject,
  predicate, object, qualifiers}]}``, at most ``Settings.assertions_per_block``
  (5) kept per block; predicates normalised to the closed inventory
  (unknown ones read ``related_to``, the phrase kept as ``predicate_text``);
  subject and object must be found in the passage (or be the page's
  entity, the first section path entry): :func:`quality_control` stage 2.
- :class:`VisualExtractor` — per PDF table or figure crop: the crop as a
  PNG data URL, its OCR text and caption; items add ``grounded`` (bool) and
  ``evidence`` (what in the crop shows it). :func:`quality_control` then
  drops items not marked grounded (stage 1) and items whose subject or
  object cannot be found in the OCR text, caption or nearby section text
  (stage 2; numbers must match exactly, names after normalisation or with
  rapidfuzz ``partial_ratio`` >= 90). With no text to check against an item
  is kept at confidence 0.5. HTML pages have no crops: no visual assertions.
  With ``Settings.vlm_batch`` the VLM runs in process with vllm and
  qwen-vl-utils (extra ``gpu``, imported only then).

Failures never stop ingestion: timeouts, connection errors, HTTP errors
(4xx, 5xx), refusals (a ``refusal`` in the message), malformed JSON and
schema violations each become one warning in ``ParsedDocument.warnings``;
after ``Settings.llm_max_failures`` consecutive transport failures the
document makes no further calls. Timeouts and retries are the transport's
(``Settings.llm_timeout`` seconds, ``Settings.llm_max_retries`` retries).
"""

from __future__ import annotations

import base64
import json
import re
import threading
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field

from pydantic import BaseModel, Field, ValidationError
from rapidfuzz import fuzz

from pilar.config import Settings
from pilar.errors import ConfigError, LLMError
from pilar.ingest.assertions import AssertionBuilder, object_mention
from pilar.ingest.names import normalise
from pilar.ingest.predicates import PredicateInventory
from pilar.llm import Endpoint, LLMClient, is_transport_failure
from pilar.model import Modality, ParsedDocument, Support

__all__ = ["TextExtractor", "VisualExtractor", "Reply", "Item", "VisualItem",
           "text_schema", "visual_schema", "parse_reply", "quality_control", "VisualContext"]

TEXT_PROMPT = (
    "Extract at most {limit} factual assertions from the passage as JSON. Each has a "
    "subject (a named entity in the passage), a predicate (one of: {predicates}), an "
    "object (entity or value, as written in the passage) and qualifiers (e.g. date, "
    "place). Only facts stated in the passage; none if there are none.")
VISUAL_PROMPT = (
    "The image is a {what} cropped from a document page. Its OCR text and caption follow. "
    "Extract at most {limit} factual assertions it shows as JSON: subject, predicate (one "
    "of: {predicates}), object, qualifiers, grounded (true only if the assertion is "
    "visible in the image) and evidence (the label, cell or mark that shows it).")
_FENCE = re.compile(r"^\s*```(?:json)?\s*|\s*```\s*$")
_NUMBER = re.compile(r"\d+(?:[.,]\d+)*")


class Item(BaseModel):
    """One extracted assertion as the model returns it."""

    subject: str = Field(min_length=1, max_length=300)
    predicate: str = Field(min_length=1, max_length=100)
    object: str = Field(min_length=1, max_length=500)
    qualifiers: dict[str, str] = Field(default_factory=dict)


class VisualItem(Item):
    """A visual assertion: ``grounded`` in the crop, with its ``evidence``."""

    grounded: bool
    evidence: str = ""


def _schema(inventory: PredicateInventory, limit: int, visual: bool) -> dict:
    props = {"subject": {"type": "string"},
             "predicate": {"type": "string", "enum": inventory.names},
             "object": {"type": "string"},
             "qualifiers": {"type": "object", "additionalProperties": {"type": "string"}}}
    required = ["subject", "predicate", "object", "qualifiers"]
    if visual:
        props |= {"grounded": {"type": "boolean"}, "evidence": {"type": "string"}}
        required += ["grounded", "evidence"]
    item = {"type": "object", "properties": props, "required": required,
            "additionalProperties": False}
    return {"type": "object", "additionalProperties": False, "required": ["assertions"],
            "properties": {"assertions": {"type": "array", "items": item, "maxItems": limit}}}


def text_schema(inventory: PredicateInventory, limit: int = 5) -> dict:
    """JSON schema of a text extraction reply."""
    return _schema(inventory, limit, visual=False)


def visual_schema(inventory: PredicateInventory, limit: int = 5) -> dict:
    """JSON schema of a visual extraction reply (App. E.3)."""
    return _schema(inventory, limit, visual=True)


@dataclass(slots=True)
class Reply:
    """A parsed reply: the valid items, or ``error`` (one line) and whether
    it was a transport failure (timeout, connection, HTTP 5xx)."""

    items: list = field(default_factory=list)
    error: str | None = None
    transport: bool = False
    dropped: int = 0


def parse_reply(content: str | None, refusal: str | None, model: type[Item]) -> Reply:
    """Read a message's content as ``{"assertions": [...]}`` (a bare list is
    accepted, code fences are stripped); invalid items are dropped and counted."""
    if refusal:
        return Reply(error=f"refused: {' '.join(refusal.split())[:120]}")
    if not content or not content.strip():
        return Reply(error="empty reply")
    try:
        data = json.loads(_FENCE.sub("", content))
    except json.JSONDecodeError as exc:
        return Reply(error=f"malformed JSON ({exc.msg} at {exc.pos})")
    raw = data.get("assertions") if isinstance(data, dict) else data
    if not isinstance(raw, list):
        return Reply(error="reply has no assertions list")
    items, dropped = [], 0
    for obj in raw:
        try:
            items.append(model.model_validate(obj))
        except ValidationError:
            dropped += 1
    return Reply(items=items, dropped=dropped)


class _OpenAIBackend:
    """Structured chat completions through the shared transport
    (:class:`pilar.llm.LLMClient`), ``concurrency`` requests at a time."""

    def __init__(self, settings: Settings, endpoint: Endpoint):
        self.llm = LLMClient(endpoint)
        self.concurrency = max(1, settings.llm_concurrency)
        self.max_failures = max(1, settings.llm_max_failures)

    def complete(self, requests: Sequence[list[dict]], schema: dict, model: type[Item]
                 ) -> list[Reply]:
        """One :class:`Reply` per request (list of chat messages), in order.
        Stops calling after ``max_failures`` consecutive transport failures."""
        lock = threading.Lock()
        state = {"failures": 0}

        def one(messages: list[dict]) -> Reply:
            with lock:
                if state["failures"] >= self.max_failures:
                    return Reply(error="skipped after repeated failures", transport=True)
            reply = self._call(messages, schema, model)
            with lock:
                state["failures"] = state["failures"] + 1 if reply.transport else 0
            return reply

        with ThreadPoolExecutor(self.concurrency) as pool:
            return list(pool.map(one, requests))

    def _call(self, messages: list[dict], schema: dict, model: type[Item]) -> Reply:
        try:
            done = self.llm.chat(messages, schema=schema, schema_name="assertions")
        except LLMError as exc:
            return Reply(error=str(exc), transport=is_transport_failure(exc))
        return parse_reply(done.text, None, model)


class _VllmBackend:
    """In-process batch VLM with vllm + qwen-vl-utils (extra ``gpu``): the
    whole document's crops in one ``generate`` call, JSON-guided decoding."""

    def __init__(self, settings: Settings, model: str):
        try:
            from qwen_vl_utils import process_vision_info
            from transformers import AutoProcessor
            from vllm import LLM, SamplingParams
            from vllm.sampling_params import GuidedDecodingParams
        except ImportError as exc:
            raise ConfigError("PILAR_VLM_BATCH needs the gpu extra: "
                              "pip install 'pilar[gpu]' (vllm, qwen-vl-utils)") from exc
        self._vision = process_vision_info
        self._params = (SamplingParams, GuidedDecodingParams)
        self.processor = AutoProcessor.from_pretrained(model)
        self.llm = LLM(model=model, limit_mm_per_prompt={"image": 1})

    def complete(self, requests: Sequence[list[dict]], schema: dict, model: type[Item]
                 ) -> list[Reply]:
        sampling_params, guided = self._params
        params = sampling_params(temperature=0, max_tokens=1024,
                                 guided_decoding=guided(json=schema))
        inputs = []
        for messages in requests:
            qwen = [{"role": m["role"], "content": [
                {"type": "image", "image": part["image_url"]["url"]}
                if part.get("type") == "image_url" else part
                for part in (m["content"] if isinstance(m["content"], list)
                             else [{"type": "text", "text": m["content"]}])]} for m in messages]
            prompt = self.processor.apply_chat_template(qwen, tokenize=False,
                                                        add_generation_prompt=True)
            images, _ = self._vision(qwen)
            inputs.append({"prompt": prompt, "multi_modal_data": {"image": images}})
        outputs = self.llm.generate(inputs, params)
        return [parse_reply(out.outputs[0].text if out.outputs else "", None, model)
                for out in outputs]


def _warn(warnings: list[str], what: str, support_id: str, reply: Reply) -> None:
    if reply.error:
        warnings.append(f"{what} {support_id}: {reply.error}")
    elif reply.dropped:
        warnings.append(f"{what} {support_id}: {reply.dropped} item(s) not in the schema dropped")


def add_items(b: AssertionBuilder, items: Sequence[Item], support_id: str,
              modality: Modality, extractor: str, confidence: float,
              extra: Callable[[Item], dict[str, str]] | None = None) -> int:
    """Add extracted items as assertions of ``support_id`` with closed
    predicates and entity mentions; returns the number added."""
    inv = b.inventory
    for item in items:
        pred, known = inv.closed(item.predicate)
        quals = {k: str(v) for k, v in item.qualifiers.items()}
        if not known:
            quals["predicate_text"] = item.predicate
        quals.update(extra(item) if extra else {})
        sm = b.resolver.mention(item.subject, inv.subject_types.get(pred, "thing"), support_id)
        om = object_mention(b, item.object, inv.object_type(pred), support_id)
        b.add(item.subject, pred, item.object, modality, (support_id,), quals,
              extractor=extractor, subject_mention=sm, object_mention=om, confidence=confidence)
    return len(items)


class TextExtractor:
    """Text assertions through the LLM endpoint (see the module docstring)."""

    def __init__(self, settings: Settings, inventory: PredicateInventory, backend=None):
        self.settings = settings
        self.inventory = inventory
        self.limit = settings.assertions_per_block
        self.backend = backend or _OpenAIBackend(settings, Endpoint.extraction(settings))
        self.system = TEXT_PROMPT.format(limit=self.limit,
                                         predicates=", ".join(inventory.names))

    def extract(self, b: AssertionBuilder, blocks: Sequence[Support], warnings: list[str]
                ) -> int:
        """Add the assertions of ``blocks``; returns how many were added."""
        todo = [s for s in blocks if len(s.text) >= 20]
        if not todo:
            return 0
        requests = [[{"role": "system", "content": self.system},
                     {"role": "user", "content": s.text}] for s in todo]
        replies = self.backend.complete(requests, text_schema(self.inventory, self.limit), Item)
        added = 0
        for s, reply in zip(todo, replies):
            _warn(warnings, "text extraction", s.support_id, reply)
            path = s.provenance.section_path
            accepted, rejected = quality_control(
                reply.items[:self.limit], VisualContext(section=s.text,
                                                        page_entity=path[0] if path else ""))
            if rejected:
                warnings.append(f"text extraction {s.support_id}: QC dropped {len(rejected)} "
                                f"({', '.join(sorted({r for _, r in rejected}))})")
            added += add_items(b, [item for item, _, _ in accepted], s.support_id, "text",
                               "llm", 0.8, lambda _: {"section": " > ".join(path)})
        return added


@dataclass(slots=True)
class VisualContext:
    """What a visual assertion is checked against (App. E.4 stage 2): the
    crop's OCR text, its caption, nearby section text and the page's entity."""

    ocr: str = ""
    caption: str = ""
    section: str = ""
    page_entity: str = ""

    def haystacks(self) -> list[tuple[str, str]]:
        return [(name, text) for name, text in (("ocr", self.ocr), ("caption", self.caption),
                                                ("section", self.section)) if text.strip()]


def _found(value: str, hay_norm: str, hay_numbers: set[str]) -> bool:
    numbers = {n.replace(",", "") for n in _NUMBER.findall(value)}
    if numbers and not numbers <= hay_numbers:
        return False
    key = normalise(value)
    words = " ".join(w for w in key.split() if not w.isdigit())
    if not words:
        return bool(numbers)
    return words in hay_norm or fuzz.partial_ratio(words, hay_norm) >= 90


def quality_control(items: Sequence[Item], ctx: VisualContext
                    ) -> tuple[list[tuple[Item, str, float]], list[tuple[Item, str]]]:
    """Two-stage QC of visual assertions (PILAR App. E.4), stage 2 also for
    text assertions (checked against their passage as ``section``).

    Returns ``(accepted, rejected)``: accepted as ``(item, verified_by,
    confidence)`` where ``verified_by`` names the texts that hold the
    subject and object (``"ocr"``, ``"caption"``, ``"section"``, ``"page"``
    for the page's own entity, ``"none"`` when there was no text: confidence
    0.5, else 0.8); rejected as ``(item, reason)`` with reason ``"not
    grounded"`` (stage 1, a :class:`VisualItem` not marked grounded) or
    ``"unverified subject"`` / ``"unverified object"`` (stage 2). The page's
    entity stands for the subject of a visual item and for either side of a
    text item (a passage says "the label" for its page's subject)."""
    accepted, rejected = [], []
    hays = ctx.haystacks()
    norm = [(name, normalise(text), {n.replace(",", "") for n in _NUMBER.findall(text)})
            for name, text in hays]
    page = normalise(ctx.page_entity) if ctx.page_entity else ""
    for item in items:
        visual = isinstance(item, VisualItem)
        if visual and not item.grounded:
            rejected.append((item, "not grounded"))
            continue
        if not norm:
            accepted.append((item, "none", 0.5))
            continue
        found_in = []
        ok = True
        for role, value in (("subject", item.subject), ("object", item.object)):
            where = [name for name, h, nums in norm if _found(value, h, nums)]
            if not where and (role == "subject" or not visual) and page and \
                    normalise(value) == page:
                where = ["page"]
            if not where:
                rejected.append((item, f"unverified {role}"))
                ok = False
                break
            found_in.extend(where)
        if ok:
            accepted.append((item, "+".join(dict.fromkeys(found_in)), 0.8))
    return accepted, rejected


class VisualExtractor:
    """Visual assertions for PDF table and figure crops (App. E.3-E.4)."""

    def __init__(self, settings: Settings, inventory: PredicateInventory, backend=None):
        self.settings = settings
        self.inventory = inventory
        self.limit = settings.assertions_per_block
        model = settings.vlm_model or ""
        if backend is None:
            backend = _VllmBackend(settings, model) if settings.vlm_batch else _OpenAIBackend(
                settings, Endpoint.vlm(settings))
        self.backend = backend

    def extract(self, b: AssertionBuilder, parsed: ParsedDocument, source: bytes | None,
                page_entity: str | None, warnings: list[str]) -> int:
        """Render each table/figure crop of a PDF ``source``, ask the VLM,
        QC the items and add the accepted ones; returns how many were added.
        HTML documents (or no ``source``) have no crops: returns 0."""
        crops = [s for s in parsed.supports if s.kind in ("table", "figure")
                 and s.provenance.bbox is not None]
        if not crops or not source or parsed.document.media_type != "application/pdf":
            return 0
        images = render_crops(source, crops, self.settings)
        captions = {t.table_index: t.caption for t in parsed.tables}
        todo, contexts = [], []
        for s in crops:
            png = images.get(s.support_id)
            if png is None:
                warnings.append(f"visual extraction {s.support_id}: crop not rendered")
                continue
            ctx = VisualContext(ocr=s.text, page_entity=page_entity or "",
                                caption=captions.get(s.provenance.table_index, "")
                                if s.kind == "table" else s.text.split("\n", 1)[0],
                                section=_section_text(parsed.supports, s))
            todo.append((s, png))
            contexts.append(ctx)
        system = VISUAL_PROMPT.format(what="{what}", limit=self.limit,
                                      predicates=", ".join(self.inventory.names))
        requests = [[{"role": "system", "content": system.format(what=s.kind)},
                     {"role": "user", "content": [
                         {"type": "image_url", "image_url": {
                             "url": "data:image/png;base64," + base64.b64encode(png).decode()}},
                         {"type": "text", "text": f"OCR text:\n{ctx.ocr}\n\nCaption: "
                                                  f"{ctx.caption or '(none)'}"}]}]
                    for (s, png), ctx in zip(todo, contexts)]
        if not requests:
            return 0
        replies = self.backend.complete(requests, visual_schema(self.inventory, self.limit),
                                        VisualItem)
        added = 0
        for (s, _), ctx, reply in zip(todo, contexts, replies):
            _warn(warnings, "visual extraction", s.support_id, reply)
            accepted, rejected = quality_control(reply.items[:self.limit], ctx)
            if rejected:
                warnings.append(f"visual extraction {s.support_id}: QC dropped "
                                f"{len(rejected)} ({', '.join(sorted({r for _, r in rejected}))})")
            modality: Modality = "figure" if s.kind == "figure" else "table"
            for item, verified, conf in accepted:
                added += add_items(b, [item], s.support_id, modality, "vlm", conf,
                                   lambda it, v=verified: {"evidence": it.evidence,
                                                           "verified_by": v})
        return added


def _section_text(supports: Sequence[Support], crop: Support, limit: int = 2000) -> str:
    """Text of the blocks on the crop's page under the same section path."""
    p = crop.provenance
    parts, size = [], 0
    for s in supports:
        q = s.provenance
        if s.kind in ("paragraph", "caption", "list_item") and q.page == p.page and \
                q.section_path == p.section_path:
            parts.append(s.text)
            size += len(s.text)
            if size >= limit:
                break
    return "\n".join(parts)[:limit]


def render_crops(source: bytes, crops: Sequence[Support], settings: Settings) -> dict[str, bytes]:
    """PNG bytes per support id of each crop's bbox (PDF points) at
    ``Settings.vlm_dpi`` (capped by ``pdf_max_render_pixels``); supports
    that cannot be rendered are left out."""
    import pymupdf

    from pilar.ingest.pdf_figures import render_png

    out: dict[str, bytes] = {}
    try:
        pdf = pymupdf.open(stream=source, filetype="pdf")
    except Exception:  # noqa: BLE001 - the parser already opened it; be safe
        return out
    try:
        for s in crops:
            try:
                page = pdf.load_page(s.provenance.page - 1)
                png = render_png(page, s.provenance.bbox, settings.vlm_dpi,
                                 settings.pdf_max_render_pixels)
            except Exception:  # noqa: BLE001 - one bad crop must not stop the rest
                png = None
            if png:
                out[s.support_id] = png
    finally:
        pdf.close()
    return out
