"""The query-time records of pilar (PILAR §3.4-3.5, Tessera §3.5): ranked
pages with their score parts, the evidence packet with its citations, and a
reader's answer. Re-exported by :mod:`pilar.model`, which holds the records
of ingest; conventions (PDF points, 1-based pages, reader tokens) are its."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Literal

__all__ = ["Answer", "AnswerCitation", "AnswerFlag", "BBox", "Citation", "Packet", "PacketImage",
           "PacketItem", "RankedPage", "SearchResult"]

BBox = tuple[float, float, float, float]
"""``(x0, y0, x1, y1)`` in PDF points, origin top-left (PyMuPDF's)."""


@dataclass(slots=True)
class RankedPage:
    """A page returned by retrieval with its score parts (PILAR §3.4).

    ``score`` = 0.4 * ``bm25`` (min-max normalised over the candidates)
    + 0.6 * ``dense`` (cosine), plus any graph bonuses in ``trace``;
    ``bridging`` names the units of the page a multi-hop chain runs through.
    """

    page_id: str
    doc_id: str
    number: int
    score: float
    source: str  # the document's uri
    title: str = ""
    bm25: float = 0.0
    dense: float = 0.0
    trace: dict[str, Any] = field(default_factory=dict)
    bridging: tuple[str, ...] = ()
    """Support ids of the units a chain of the ranking passes through on this
    page (the row or sentence naming the next hop, or the one the previous
    hop named): packing carries them (PILAR §3.4 multi-hop)."""


@dataclass(slots=True)
class Citation:
    """Where one packet line comes from: document, page, section, bbox/cell."""

    doc_id: str
    source: str
    page: int
    section_path: tuple[str, ...] = ()
    support_id: str | None = None
    bbox: BBox | None = None
    css_path: str | None = None
    table_index: int | None = None
    row: int | None = None  # grid row of a table row or cell
    col: int | None = None  # grid column of a table cell


@dataclass(slots=True)
class PacketItem:
    """One excerpt of a packet with its citation and token cost.

    ``text`` may open with header lines (the page header, a unit group's
    context and table header); the evidence line itself starts at character
    ``body_start``, where a reader's ``[n]`` marker goes."""

    text: str
    citation: Citation
    tokens: int
    page_id: str = ""
    body_start: int = 0


@dataclass(slots=True)
class Packet:
    """The evidence packet handed to a reader (PILAR §3.5, App. G.1).

    ``text`` never exceeds ``budget`` tokens as counted by ``tokenizer``;
    ``estimate`` is true when that tokenizer is not the reader's own.
    """

    text: str
    items: list[PacketItem]
    budget: int
    tokens: int
    tokenizer: str = ""
    estimate: bool = True

    @property
    def citations(self) -> list[Citation]:
        return [item.citation for item in self.items]


@dataclass(slots=True)
class PacketImage:
    """A table or figure crop sent to a VLM reader with the packet item it
    illustrates (``item``: 0-based index into ``Packet.items``). ``png`` is
    the rendered crop; ``width``/``height`` its pixels; ``tokens`` the
    reader's image-token cost (PILAR App. G.1 "optional visual crops")."""

    item: int
    support_id: str
    png: bytes
    width: int
    height: int
    tokens: int


@dataclass(slots=True)
class AnswerCitation:
    """One ``[n]`` of an answer resolved to the packet item it names:
    ``n`` as written (1-based), the item's ``citation`` (document, page,
    section path, support id, bbox or table cell) and the item's ``text``."""

    n: int
    citation: Citation
    text: str


AnswerFlag = Literal["no_citation", "unknown_citation", "not_in_evidence", "truncated"]


@dataclass(slots=True)
class Answer:
    """What the reader returns (PILAR App. H.2-H.3).

    ``text`` is the model's reply as given; ``short`` its first line without
    citation markers (the short answer); ``citations`` the valid ``[n]`` in
    order of first mention; ``unknown`` the cited numbers the packet lacks.
    ``flags``: ``not_in_evidence`` (the reader said the packet does not hold
    the answer), ``no_citation`` (an answer citing no packet item),
    ``unknown_citation`` (a number outside 1..len(packet.items)),
    ``truncated`` (the reply hit the new-token limit). ``packet`` is the
    packet as the reader saw it (items numbered from 1), ``images`` the crops
    sent with it. Token counts are the server's when it reports them."""

    question: str
    text: str
    short: str
    citations: list[AnswerCitation]
    packet: Packet
    model: str = ""
    unknown: list[int] = field(default_factory=list)
    flags: list[AnswerFlag] = field(default_factory=list)
    images: list[PacketImage] = field(default_factory=list)
    prompt_tokens: int | None = None
    completion_tokens: int | None = None

    @property
    def not_in_evidence(self) -> bool:
        return "not_in_evidence" in self.flags


@dataclass(slots=True)
class SearchResult:
    """What :meth:`pilar.Pilar.search` returns: ranked pages and the packet."""

    question: str
    pages: list[RankedPage]
    packet: Packet
