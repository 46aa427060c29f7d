"""Table and figure crops for a VLM reader, costed in image tokens
(PILAR App. G.1: "optional visual crops for tables and figures").

A Qwen-VL reader resizes each image so both sides are multiples of
``2 * patch`` pixels (2x2 patches of ``patch`` px merge into one token) with
the pixel count between ``4`` and ``max_pixels / (2 * patch)^2`` tokens: the
resize rule of qwen-vl-utils' ``smart_resize``. Its cost in tokens is then
``(h / (2 * patch)) * (w / (2 * patch))`` plus 2 (the vision start and end
tokens). qwen-vl-utils (extra ``gpu``; it imports torch and torchvision) is
used when importable; otherwise :func:`resize` applies the same arithmetic,
so packets are costed alike on CPU machines and GPU servers.

Crops come from PDF pages only (HTML tables have no bbox to render): for a
packet item citing a table, row, cell or figure support, the enclosing
table or figure support's bbox is rendered from the document's file at
``Settings.vlm_dpi``; a crop is attached while its tokens fit the room left.
"""

from __future__ import annotations

import io
import math
from collections.abc import Mapping
from pathlib import Path

from pilar.config import Settings
from pilar.model import Document, Packet, PacketImage, Support

MIN_TOKENS = 4
"""Fewest image tokens of one image (qwen-vl-utils' IMAGE_MIN_TOKEN_NUM)."""
MAX_RATIO = 200
"""Longest side over shortest side at most (qwen-vl-utils' MAX_RATIO)."""
FRAME_TOKENS = 2
"""<|vision_start|> and <|vision_end|> around each image."""


def resize(height: int, width: int, factor: int, max_pixels: int) -> tuple[int, int]:
    """``(height, width)`` after Qwen-VL's resize rule (qwen-vl-utils'
    ``smart_resize``; this arithmetic is its fallback when the package is
    absent). Raises ``ValueError`` for an aspect ratio over :data:`MAX_RATIO`."""
    min_pixels = MIN_TOKENS * factor * factor
    try:
        from qwen_vl_utils import smart_resize
    except ImportError:
        pass
    else:
        return smart_resize(height, width, factor=factor, min_pixels=min_pixels,
                            max_pixels=max_pixels)
    if max(height, width) / max(1, min(height, width)) > MAX_RATIO:
        raise ValueError(f"aspect ratio over {MAX_RATIO}: {width}x{height}")
    h = max(factor, round(height / factor) * factor)
    w = max(factor, round(width / factor) * factor)
    if h * w > max_pixels:
        beta = math.sqrt(height * width / max_pixels)
        h = math.floor(height / beta / factor) * factor
        w = math.floor(width / beta / factor) * factor
    elif h * w < min_pixels:
        beta = math.sqrt(min_pixels / (height * width))
        h = math.ceil(height * beta / factor) * factor
        w = math.ceil(width * beta / factor) * factor
    return h, w


def image_tokens(width: int, height: int, settings: Settings) -> int:
    """Reader tokens of one ``width`` x ``height`` pixel image (see the
    module docstring; ``Settings.reader_image_patch``, ``reader_image_max_pixels``)."""
    factor = 2 * settings.reader_image_patch
    h, w = resize(height, width, factor, settings.reader_image_max_pixels)
    return (h // factor) * (w // factor) + FRAME_TOKENS


def _crop_support(s: Support, page_supports: list[Support]) -> Support | None:
    """The table or figure support whose crop shows ``s`` (itself for a
    table or figure; the enclosing table for a row or cell), with a bbox."""
    if s.kind in ("table", "figure"):
        return s if s.provenance.bbox is not None else None
    index = s.provenance.table_index
    if s.kind in ("row", "cell") and index is not None:
        return next((t for t in page_supports if t.kind == "table"
                     and t.provenance.table_index == index and t.provenance.bbox is not None),
                    None)
    return None


def crops(packet: Packet, supports: Mapping[str, list[Support]],
          documents: Mapping[str, Document], settings: Settings, room: int) -> list[PacketImage]:
    """Crops for the items of ``packet`` (numbered as the reader sees it),
    first cited first, one per table or figure, while their tokens fit
    ``room``. ``supports`` maps page ids to the page's supports,
    ``documents`` doc ids to documents (PDFs are read from their ``uri``).
    Items whose crop cannot be rendered get none."""
    from PIL import Image

    from pilar.ingest.llm import render_crops

    wanted: list[tuple[int, Support]] = []
    seen: set[str] = set()
    for i, item in enumerate(packet.items):
        doc = documents.get(item.citation.doc_id)
        if doc is None or doc.media_type != "application/pdf":
            continue
        on_page = supports.get(item.page_id, [])
        own = next((s for s in on_page if s.support_id == item.citation.support_id), None)
        crop = _crop_support(own, on_page) if own else None
        if crop and crop.support_id not in seen:
            seen.add(crop.support_id)
            wanted.append((i, crop))
    out: list[PacketImage] = []
    by_doc: dict[str, list[tuple[int, Support]]] = {}
    for i, crop in wanted:
        by_doc.setdefault(crop.doc_id, []).append((i, crop))
    rendered: dict[str, bytes] = {}
    for doc_id, todo in by_doc.items():
        path = Path(documents[doc_id].uri)
        if path.is_file():
            rendered |= render_crops(path.read_bytes(), [c for _, c in todo], settings)
    for i, crop in wanted:
        png = rendered.get(crop.support_id)
        if png is None:
            continue
        width, height = Image.open(io.BytesIO(png)).size
        try:
            cost = image_tokens(width, height, settings)
        except ValueError:
            continue
        if cost <= room:
            room -= cost
            out.append(PacketImage(item=i, support_id=crop.support_id, png=png, width=width,
                                   height=height, tokens=cost))
    return out
