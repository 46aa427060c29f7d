"""Typed records shared by every layer of pilar.

Plain ``dataclasses`` with ``slots``: cheap to build by the thousand at parse
time (Tessera §3.6 parses a page in ~15 ms) and easy to turn into JSON with
:func:`to_jsonable`. The layers follow the four-layer graph of PILAR §3.3 and
DESIGN.md: documents and pages, supports with provenance, assertions and
entities, plus the query-time records (ranked pages, evidence units, packets;
defined in :mod:`pilar.answers` and re-exported here).

Units: bounding boxes are ``(x0, y0, x1, y1)`` in PDF points for PDFs (origin
top-left, as PyMuPDF reports them) and are absent for HTML, where provenance
is a CSS path instead. Page numbers are 1-based. Token counts are reader
tokens.
"""

from __future__ import annotations

import dataclasses
import re
from dataclasses import dataclass, field
from typing import Any, Literal

from pilar.answers import (  # noqa: F401 - re-exported: the query-time records
    Answer, AnswerCitation, AnswerFlag, BBox, Citation, Packet, PacketImage, PacketItem,
    RankedPage, SearchResult)

SupportKind = Literal[
    "paragraph",
    "heading",
    "list_item",
    "definition",
    "caption",
    "table",
    "row",
    "cell",
    "figure",
    "footnote",
]
SupportRole = Literal["primary", "contextual", "scope", "exception"]
DocumentStatus = Literal["pending", "ready", "deleting"]
UnitKind = Literal["paragraph", "list_item", "definition", "caption", "heading", "row"]


@dataclass(slots=True)
class Document:
    """One ingested file (DESIGN.md "Document").

    A document belongs to one ``collection`` (default ``"default"``): the
    same bytes in two collections are two documents. ``doc_id`` derives from
    the SHA-256 of the file's bytes and the collection
    (:func:`pilar.ingest.document_id`), so the same bytes in one collection
    always get the same id; ``uri`` is where it was first read from (an
    absolute path for local files) and ``sources`` every location it is
    known at in its collection, ``uri`` first (copies of the same bytes at
    other paths add theirs). ``status`` is the visibility
    switch of the two-store write protocol: ``pending`` while its index and
    graph rows are written, ``ready`` once both stores hold it (the only
    status reads see), ``deleting`` while it is being removed.
    """

    doc_id: str
    uri: str
    title: str
    media_type: str  # "text/html" | "application/pdf"
    sha256: str
    n_pages: int
    ingested_at: str = ""  # ISO-8601 UTC, set by the store
    collection: str = "default"
    status: DocumentStatus = "ready"
    sources: list[str] = field(default_factory=list)

    def __post_init__(self) -> None:
        if not self.sources and self.uri:
            self.sources = [self.uri]


DEFAULT_COLLECTION = "default"
COLLECTION_PATTERN = r"[A-Za-z0-9][A-Za-z0-9._-]{0,63}"
"""A whole collection name: 1 to 64 ASCII letters, digits, ``.``, ``_`` or
``-``, starting with a letter or digit (case counts). Every face checks names
with :func:`check_collection`."""
_COLLECTION = re.compile(COLLECTION_PATTERN)


def check_collection(name: str, field: str = "collection") -> str:
    """``name`` if it is a collection name (:data:`COLLECTION_PATTERN`).

    Raises ``ValueError`` naming ``field`` and the name as Python writes it
    (control and format characters escaped: ``'team-a\\u200b'``) for any
    other string, the empty one included, and ``TypeError`` for a non-string."""
    if not isinstance(name, str):
        raise TypeError(f"{field} must be a string, got {name!r}")
    if not _COLLECTION.fullmatch(name):
        what = "is empty" if not name else "is not a collection name"
        raise ValueError(f"{field} {name!r} {what}: a collection name is 1-64 letters, "
                         "digits, '.', '_' or '-', starting with a letter or digit")
    return name


@dataclass(slots=True, frozen=True)
class Scope:
    """Which documents a read may see: those in ``collections`` and (when
    given) among ``doc_ids``; None means no limit on that field. Index
    backends apply it inside their BM25 and kNN queries."""

    collections: tuple[str, ...] | None = None
    doc_ids: tuple[str, ...] | None = None

    @classmethod
    def of(cls, collections=None, doc_ids=None) -> "Scope":
        """A scope from optional lists (or other iterables) of names and ids."""
        return cls(tuple(collections) if collections is not None else None,
                   tuple(doc_ids) if doc_ids is not None else None)

    @property
    def unlimited(self) -> bool:
        return self.collections is None and self.doc_ids is None

    def allows(self, doc: "Document") -> bool:
        """Whether ``doc`` is inside the scope (its status is not looked at)."""
        return ((self.collections is None or doc.collection in self.collections)
                and (self.doc_ids is None or doc.doc_id in self.doc_ids))


@dataclass(slots=True)
class Page:
    """A page of a document; HTML documents have exactly one page.

    ``width``/``height`` are PDF points (0 for HTML). ``text`` is the page's
    plain text as indexed for BM25 and dense retrieval.
    """

    doc_id: str
    number: int  # 1-based
    text: str
    width: float = 0.0
    height: float = 0.0

    @property
    def page_id(self) -> str:
        """``doc_id:number``, the page's key in every store."""
        return f"{self.doc_id}:{self.number}"


@dataclass(slots=True)
class Provenance:
    """Where a support comes from (PILAR §3.3, App. E.7).

    ``bbox`` in PDF points for PDFs; ``css_path`` for HTML. Table supports
    carry ``table_index`` (0-based, document order), ``row`` and ``col``
    (0-based grid coordinates) and ``cell_ids``.
    """

    provenance_id: str
    doc_id: str
    page: int
    section_path: tuple[str, ...] = ()
    bbox: BBox | None = None
    css_path: str | None = None
    table_index: int | None = None
    row: int | None = None
    col: int | None = None
    cell_ids: tuple[str, ...] = ()
    char_start: int | None = None
    char_end: int | None = None


@dataclass(slots=True)
class Support:
    """An evidence support: a text span, table row or cell, figure, caption
    (PILAR App. E.7). Every support has exactly one :class:`Provenance`."""

    support_id: str
    doc_id: str
    kind: SupportKind
    text: str
    provenance: Provenance
    role: SupportRole = "primary"


@dataclass(slots=True)
class GridCell:
    """One slot of a resolved :class:`TableGrid`.

    A source cell spanning several rows or columns fills several slots that
    share ``cell_id`` (``origin`` is the slot where it starts).
    """

    cell_id: str
    text: str
    is_header: bool = False
    origin: tuple[int, int] = (0, 0)  # (row, col) where the source cell starts
    bbox: BBox | None = None
    css_path: str | None = None  # HTML: the source cell's CSS path
    tables: tuple[int, ...] = ()  # table_index of the grids nested in this cell
    notes: tuple[str, ...] = ()  # footnotes of the marker split from text ("2: Estimated")


RowKind = Literal["header", "title", "group", "body", "keyvalue"]


@dataclass(slots=True)
class TableGrid:
    """A table resolved into a rectangular grid (Tessera §3.3 "faithful grid").

    ``cells[r][c]`` is a :class:`GridCell`; ``row_kinds[r]`` says what the
    row is; ``header_paths[c]`` is the combined multi-row header of column
    ``c`` (e.g. ``("Peak chart positions", "US")``); ``group_labels[r]`` is
    the label of the group row governing body row ``r`` (or ``None``).
    HTML and PDF tables share this model.
    """

    table_index: int
    doc_id: str
    page: int
    cells: list[list[GridCell]]
    row_kinds: list[RowKind]
    header_paths: list[tuple[str, ...]]
    group_labels: list[str | None]
    caption: str = ""
    title: str = ""
    section_path: tuple[str, ...] = ()
    kind: Literal["table", "infobox"] = "table"
    css_path: str | None = None
    bbox: BBox | None = None
    parent_index: int | None = None  # enclosing table for nested tables
    # HTML: 0-based position among the document's table.wikitable elements in
    # document order, nested included (how WikiTableQuestions numbers tables)
    wikitable_index: int | None = None
    # PDF: the page of each row when the table runs over several pages (rows
    # continued from the next page are appended); empty when all are on `page`
    row_pages: list[int] = field(default_factory=list)

    @property
    def n_rows(self) -> int:
        return len(self.cells)

    @property
    def n_cols(self) -> int:
        return len(self.cells[0]) if self.cells else 0


@dataclass(slots=True)
class Unit:
    """A structure-completed evidence unit (Tessera §3.3).

    ``text`` is the unit's own content; ``completed_text`` adds the page
    title, section path, table caption/title and, for rows, each cell paired
    with its header path ("Header > Sub: value"). ``context`` is the grouping
    key used by packing (title > section > table caption), ``headers`` the
    header paths of a row unit's columns.
    """

    unit_id: str
    doc_id: str
    page: int
    kind: UnitKind
    text: str
    completed_text: str
    support_id: str
    context: tuple[str, ...] = ()
    table_index: int | None = None
    row_index: int | None = None
    headers: tuple[str, ...] = ()
    cells: tuple[str, ...] = ()
    stats: UnitStats | None = field(default=None, compare=False, repr=False)  # None: not yet known


@dataclass(slots=True, frozen=True)
class UnitStats:
    """What selection and packing read of a :class:`Unit`, stored at ingest
    (filled on first read for older stores): ``terms`` maps each term of the
    completed text (:func:`pilar.retrieval.terms.tokens`) to its occurrences,
    ``length`` is their sum (BM25's document length), ``tokens`` the reader
    tokens of the unit's packed line (:func:`pilar.packing.statistics.unit_line`)
    under the tokenizer named ``tokenizer``."""

    terms: dict[str, int]
    length: int
    tokens: int
    tokenizer: str


Modality = Literal["text", "table", "figure"]


@dataclass(slots=True)
class Assertion:
    """A subject-predicate-object claim with qualifiers (PILAR §3.2, App. E.5).

    ``predicate`` is from the closed, normalised inventory; ``supports`` are
    the ids of the supports that license it (``SUPPORTED_BY`` edges, with
    ``role`` per support); ``subject_entity``/``object_entity`` are entity ids
    once linked (``SUBJECT_OF`` / ``OBJECT`` edges).
    """

    assertion_id: str
    doc_id: str
    subject: str
    predicate: str
    object: str
    modality: Modality
    supports: tuple[str, ...]
    qualifiers: dict[str, str] = field(default_factory=dict)
    confidence: float = 1.0
    grounded: bool = True
    extractor: str = ""
    subject_entity: str | None = None
    object_entity: str | None = None


@dataclass(slots=True)
class Entity:
    """A canonical entity (PILAR App. E.2). Entities are shared across the
    documents of one ``collection``, never across collections:
    ``entity_id`` derives from ``type`` and the normalised name, prefixed
    with ``"<collection>:"`` outside ``default``
    (:func:`pilar.graph.linking.in_collection`); ``mentions`` are support
    ids (``MENTIONED_IN`` edges)."""

    entity_id: str
    name: str
    type: str = "thing"
    aliases: tuple[str, ...] = ()
    mentions: tuple[str, ...] = ()
    collection: str = DEFAULT_COLLECTION


@dataclass(slots=True)
class SameAs:
    """A ``SAME_AS`` link between two entities, with its score in [0, 1] and
    the method that found it (``alias``, ``fuzzy``, ...)."""

    source: str
    target: str
    score: float
    method: str


@dataclass(slots=True)
class IndexedPages:
    """One document's pages as the page index takes them
    (:meth:`pilar.retrieval.PageIndex.add_documents`): ``vectors[i]`` is page
    ``i``'s ``(n_i, dim)`` float32 array, ``unit_ids[i]`` names the unit
    behind each row (None for a text window), ``sections[i]`` the page's
    section paths (``" > "``-joined)."""

    pages: list[Page]
    vectors: list[Any]
    unit_ids: list[list[str | None]] | None = None
    collection: str = DEFAULT_COLLECTION
    sections: list[list[str]] | None = None


@dataclass(slots=True)
class ParsedDocument:
    """What ingestion returns for one file: the document and its layers, not
    yet stored. ``warnings`` holds non-fatal notes (spans capped, pages
    skipped, ...)."""

    document: Document
    pages: list[Page]
    supports: list[Support] = field(default_factory=list)
    tables: list[TableGrid] = field(default_factory=list)
    units: list[Unit] = field(default_factory=list)
    assertions: list[Assertion] = field(default_factory=list)
    entities: list[Entity] = field(default_factory=list)
    same_as: list[SameAs] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)


IngestStatus = Literal["ingested", "replaced", "unchanged", "new_source", "failed", "skipped"]
"""``new_source``: the bytes were stored already (from another path), and this
path was recorded as another source; ``skipped``: found in a folder but not
a document (``reason`` says why), never read."""


@dataclass(slots=True)
class IngestResult:
    """Outcome of ingesting one file. ``reason`` is set when ``failed`` or
    ``skipped`` (for ``new_source`` it names where the bytes were first seen);
    ``n_assertions``/``n_entities`` count what the document holds (its
    entities may be shared with documents stored earlier). ``stages``:
    seconds spent per ingest stage (``read``, ``parse``, ``graph``,
    ``embed``, ``write``; ``embed`` is this document's share of a batch)."""

    path: str
    status: IngestStatus
    doc_id: str | None = None
    n_pages: int = 0
    n_supports: int = 0
    n_units: int = 0
    reason: str | None = None
    seconds: float = 0.0
    n_assertions: int = 0
    n_entities: int = 0
    warnings: list[str] = field(default_factory=list)
    stages: dict[str, float] = field(default_factory=dict)


@dataclass(slots=True)
class EntityLinks:
    """One hop of the graph around some entities (read by
    :meth:`pilar.graph.GraphStore.entity_links`): the assertions they are
    subject or object of, their mentions as ``(entity_id, support_id)``
    pairs, and their ``SAME_AS`` links in either direction."""

    assertions: list[Assertion] = field(default_factory=list)
    mentions: list[tuple[str, str]] = field(default_factory=list)
    same_as: list[SameAs] = field(default_factory=list)


@dataclass(slots=True)
class Bridge:
    """An entity named on the units a bridge hop starts from, and the pages
    it leads to (read by :meth:`pilar.graph.GraphStore.bridges`; PILAR §3.4,
    multi-hop profile). ``supports``: the given supports that mention it;
    ``documents``: how many documents mention it (counted up to the hop's
    cap plus one, so a hub shows as just past the cap); ``pages``: ``(page_id,
    support_id, entity_id)`` of the pages that mention it (or an entity
    ``SAME_AS`` it, whose id is the third item), one support per page."""

    entity_id: str
    name: str
    supports: tuple[str, ...]
    documents: int
    pages: list[tuple[str, str, str]] = field(default_factory=list)


@dataclass(slots=True)
class Neighborhood:
    """What lies within some hops of an entity (PILAR §3.3 layers): entities,
    the assertions linking them, ``SAME_AS`` links, the supports of those
    assertions and mentions, and the pages those supports sit on
    (``page_id`` strings, document order); ``mentions`` are the
    ``MENTIONED_IN`` edges to those supports as ``(entity_id, support_id)``;
    ``truncated``: an entity's links reached the per-entity cap, more may exist."""

    entities: list[Entity]
    assertions: list[Assertion]
    same_as: list[SameAs]
    supports: list[Support]
    pages: list[str]
    mentions: list[tuple[str, str]] = field(default_factory=list)
    truncated: bool = False


_SCALARS = frozenset({str, int, float, bool, type(None)})
_FIELDS: dict[type, tuple[str, ...]] = {}
"""Field names per record class, looked up once (:func:`to_jsonable` runs
over every cell of every table a document write sends)."""


def to_jsonable(obj: Any) -> Any:
    """Turn records (and lists/dicts/tuples of them) into JSON-safe values.

    Properties that are part of a record's identity (``page_id``,
    ``citations``) are not included; callers add what they need.
    """
    cls = type(obj)
    if cls in _SCALARS:
        return obj
    names = _FIELDS.get(cls)
    if names is None and dataclasses.is_dataclass(cls):
        names = _FIELDS[cls] = tuple(f.name for f in dataclasses.fields(cls))
    if names is not None:
        return {name: to_jsonable(getattr(obj, name)) for name in names}
    if isinstance(obj, dict):
        return {str(k): to_jsonable(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return [to_jsonable(v) for v in obj]
    return obj
