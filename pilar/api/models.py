"""Request and response models of the REST API, declared once.

The routes, the OpenAPI schema, the MCP tools, the CLI's ``--json`` output
and the tests all use these models. Response models are built from the
records of :mod:`pilar.model` (``Model.model_validate(record)``, attributes
read as is). Units as in :mod:`pilar.model`: bounding boxes in PDF points
(origin top-left), page numbers 1-based, budgets in reader tokens.
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import datetime, timezone
from typing import Annotated, Any, Literal

from pydantic import AfterValidator, BaseModel, ConfigDict, Field, model_validator

from pilar.config import Settings
from pilar.eval.run import EvalReport
from pilar.model import (COLLECTION_PATTERN, DEFAULT_COLLECTION, AnswerFlag, IngestStatus,
                         check_collection)
from pilar.query import MAX_IDS, WireRequest, request_model

CollectionName = Annotated[str, AfterValidator(check_collection), Field(
    json_schema_extra={"pattern": f"^{COLLECTION_PATTERN}$"})]
"""A collection name, checked by :func:`pilar.model.check_collection` (the
one check of every face)."""
Shown = Callable[[str], str]
"""How a response shows a stored source path to a client
(:meth:`pilar.api.paths.ServerPaths.shown`)."""


class Record(BaseModel):
    """Base of the response models: built from pilar's dataclass records."""

    model_config = ConfigDict(from_attributes=True)


# -- search (the agent tool) -------------------------------------------------

SEARCH_DOC = "``POST /v1/search``: the agent tool's arguments (PILAR §3.4-3.5)."
ANSWER_DOC = ("``POST /v1/answer``: a question answered by the reader from its packet "
              "(PILAR App. H.2-H.3).")


class _Streamed(WireRequest):
    stream: bool = Field(False, description=(
        "answer as server-sent events (also with Accept: text/event-stream): `delta` events "
        "with text, then `answer` with the whole answer"))


def search_request(settings: Settings) -> type[BaseModel]:
    """The ``SearchRequest`` model of ``settings`` (:func:`pilar.query.request_model`:
    ``query``, ``budget_tokens``, ``k``, ``profile``, ``doc_ids``, ``collections``,
    with the limits of ``settings``): the REST body and the MCP ``search`` tool's arguments."""
    return request_model(settings, "SearchRequest", question="query", budget="budget_tokens",
                         doc=SEARCH_DOC)


def answer_request(settings: Settings, streamed: bool = True) -> type[BaseModel]:
    """The ``AnswerRequest`` model of ``settings``: :func:`search_request`'s
    fields with ``question`` for ``query``, and ``stream`` when ``streamed``
    (REST; the MCP ``answer`` tool answers whole)."""
    return request_model(settings, "AnswerRequest", question="question",
                         budget="budget_tokens", doc=ANSWER_DOC,
                         base=_Streamed if streamed else WireRequest)


class CitationOut(Record):
    """Where one packet line comes from: document, page, section, bbox or table cell."""

    doc_id: str
    source: str
    page: int
    section_path: list[str] = []
    support_id: str | None = None
    bbox: tuple[float, float, float, float] | None = Field(
        None, description="(x0, y0, x1, y1) in PDF points, origin top-left")
    css_path: str | None = None
    table_index: int | None = None
    row: int | None = None
    col: int | None = None


class PacketItemOut(Record):
    text: str
    citation: CitationOut
    tokens: int
    page_id: str = ""


class PacketOut(Record):
    """The evidence packet: ``text`` holds at most ``budget`` tokens."""

    text: str
    items: list[PacketItemOut]
    budget: int
    tokens: int
    tokenizer: str = ""
    estimate: bool = True
    citations: list[CitationOut]


class RankedPageOut(Record):
    """A ranked page with its score parts and graph trace (PILAR §3.4)."""

    page_id: str
    doc_id: str
    number: int
    score: float
    source: str
    title: str = ""
    bm25: float = 0.0
    dense: float = 0.0
    trace: dict[str, Any] = {}


class SearchResponse(Record):
    """Ranked pages and the cited packet."""

    question: str
    pages: list[RankedPageOut]
    packet: PacketOut


class AnswerCitationOut(Record):
    """One ``[n]`` of an answer resolved to the packet item it names."""

    n: int = Field(description="the number as written (1-based packet item)")
    citation: CitationOut
    text: str = Field(description="the cited item's text")


class PacketImageOut(Record):
    """A table or figure crop sent to a VLM reader (without its PNG bytes)."""

    item: int = Field(description="0-based index of the packet item it illustrates")
    support_id: str
    width: int
    height: int
    tokens: int = Field(description="the reader's image-token cost")


class AnswerResponse(Record):
    """The reader's answer (:class:`pilar.model.Answer`): the reply, its
    short answer, the ``[n]`` citations resolved to supports, flags, and
    the packet as the reader saw it (items numbered from 1). ``pilar ask
    --json`` prints the same."""

    question: str
    text: str = Field(description="the model's reply as given")
    short: str = Field(description="the short answer: the reply's first line, markers removed")
    citations: list[AnswerCitationOut]
    packet: PacketOut
    model: str = ""
    unknown: list[int] = Field([], description="cited numbers the packet lacks")
    flags: list[AnswerFlag] = Field(
        [], description="no_citation, unknown_citation, not_in_evidence, truncated")
    not_in_evidence: bool = False
    images: list[PacketImageOut] = []
    prompt_tokens: int | None = None
    completion_tokens: int | None = None


def _show_packet(packet: PacketOut, shown: Shown) -> None:
    for c in [*packet.citations, *(item.citation for item in packet.items)]:
        c.source = shown(c.source)


def answer_response(answer, shown: Shown | None = None) -> AnswerResponse:
    """The :class:`AnswerResponse` of a :class:`pilar.model.Answer`, its
    citations' sources passed through ``shown`` when given (a client's view)."""
    out = AnswerResponse.model_validate(answer)
    if shown is not None:
        _show_packet(out.packet, shown)
        for c in out.citations:
            c.citation.source = shown(c.citation.source)
    return out


# -- documents and jobs ------------------------------------------------------------

class DocumentOut(Record):
    """A stored document; over REST ``uri`` and ``sources`` are shown as a
    client may see them (:func:`document_out`)."""

    doc_id: str
    uri: str
    title: str
    media_type: str
    sha256: str
    n_pages: int
    ingested_at: str = ""
    collection: str = "default"
    sources: list[str] = Field(default_factory=list,
                               description="every path the bytes were found at, uri first")


class DocumentList(BaseModel):
    """One page of documents, oldest first."""

    items: list[DocumentOut]
    total: int
    offset: int
    limit: int


class CollectionList(BaseModel):
    """``GET /v1/collections``: the collections a key may use."""

    collections: list[str] = Field(description="sorted names")
    limited: bool = Field(description="the key is limited to these collections")


class UploadForm(BaseModel):
    """``POST /v1/documents``: a multipart/form-data body of ``files`` parts
    (each with its file name) and an optional ``collection`` field. The
    route streams it (:mod:`pilar.api.uploads`); this model is its schema."""

    files: list[bytes] = Field(description="PDF or HTML files, each a part with a file name")
    collection: CollectionName = DEFAULT_COLLECTION


class PathsRequest(BaseModel):
    """``POST /v1/documents`` with JSON: server-side files under ``PILAR_INGEST_ROOTS``."""

    model_config = ConfigDict(extra="forbid")

    paths: list[str] = Field(min_length=1, max_length=MAX_IDS,
                             description="files or folders on the server")
    collection: CollectionName = DEFAULT_COLLECTION


def now() -> str:
    """The time now, UTC, ISO 8601 to the millisecond (job records' clock)."""
    return datetime.now(timezone.utc).isoformat(timespec="milliseconds")


JobState = Literal["queued", "running", "cancelling", "done", "failed", "cancelled"]
"""``cancelling``: a cancel was asked of a running job, whose worker stops it."""
ENDED: tuple[JobState, ...] = ("done", "failed", "cancelled")
"""The states a job never leaves."""
FileState = Literal["queued", "running", "cancelled"] | IngestStatus
"""A file of a job: waiting, being ingested, not ingested because the job
was cancelled, or its :class:`~pilar.model.IngestResult` status."""


class JobFile(BaseModel):
    """One file of an ingest job and how it went."""

    name: str
    status: FileState = "queued"
    doc_id: str | None = None
    n_pages: int = 0
    reason: str | None = None
    warnings: list[str] = []
    seconds: float = 0.0
    finished_at: str | None = Field(None, description="when the file's outcome was recorded "
                                    "(UTC, ISO 8601)")


class JobStateChange(BaseModel):
    """One state a job entered, and when (UTC, ISO 8601)."""

    state: JobState
    at: str


class JobProgress(BaseModel):
    """How far an evaluation job is: questions answered of ``total``."""

    done: int = 0
    total: int = 0


class Job(BaseModel):
    """A job of the server's worker. An ``ingest`` job is ``done`` when every
    file was tried (each file has its own status and reason) and one went in,
    ``failed`` when none did (``reason``: the one file's, or how many
    failed); an ``eval`` job shows its ``progress`` and, when ``done``, its
    ``report``. ``failed`` also: the job itself could not finish (``reason``)."""

    job_id: str
    kind: Literal["ingest", "eval"] = "ingest"
    state: JobState
    collection: str = Field("default", description="ingest: the collection written to")
    collections: list[str] | None = Field(
        None, description="eval: the collections read (null: every collection)")
    created_at: str
    updated_at: str
    reason: str | None = None
    files: list[JobFile] = []
    counts: dict[str, int] = {}
    progress: JobProgress | None = None
    report: EvalReport | None = Field(
        None, description="eval: the report, as `pilar eval --json` writes it")
    history: list[JobStateChange] = Field(
        [], description="every state the job entered, in order (the SSE `state` events)")

    def enter(self, state: JobState, reason: str | None = None) -> None:
        """Move to ``state`` (with ``reason``), recorded in :attr:`history`."""
        self.state = state
        if reason is not None:
            self.reason = reason
        self.history.append(JobStateChange(state=state, at=now()))


class JobSummary(BaseModel):
    """A job as ``GET /v1/jobs`` lists it: its record without the files and report."""

    job_id: str
    kind: Literal["ingest", "eval"]
    state: JobState
    collection: str
    created_at: str
    updated_at: str
    reason: str | None = None
    n_files: int = 0
    counts: dict[str, int] = {}
    progress: JobProgress | None = None

    @classmethod
    def of(cls, job: "Job") -> "JobSummary":
        return cls(**job.model_dump(include=set(cls.model_fields) - {"n_files"}),
                   n_files=len(job.files))


class JobList(BaseModel):
    """A page of the caller's jobs, newest first."""

    items: list[JobSummary]
    total: int
    offset: int
    limit: int


class JobAccepted(BaseModel):
    """202 answer to an upload: where to follow the job."""

    job_id: str
    state: JobState
    href: str
    events: str


class Deleted(BaseModel):
    doc_id: str
    deleted: bool


# -- evaluation ---------------------------------------------------------------------

class EvalQuestion(BaseModel):
    """One question of an inline evaluation (the columns of a questions TSV,
    :mod:`pilar.eval.questions`)."""

    model_config = ConfigDict(extra="forbid")

    id: str = Field(min_length=1, max_length=200)
    question: str = Field(min_length=1, description="checked as every question is "
                                                    "(pilar.query) when the job is queued")
    answers: list[str] = Field(min_length=1, max_length=100,
                               description="the gold answer's parts (a list answer needs all)")
    gold_doc: str | None = Field(None, max_length=500,
                                 description="gold document: doc id or source file stem")
    gold_page: str | None = Field(None, max_length=500,
                                  description="gold page id (doc_id:number); wins over gold_doc")


MAX_EVAL_QUESTIONS = 10_000
"""Most questions one inline evaluation may hold."""


class EvalSource(WireRequest):
    """The questions of ``POST /v1/eval`` (:func:`eval_request` adds the
    budget, k, profile and collections of every request)."""

    questions_path: str | None = Field(None, min_length=1, max_length=4096)
    questions: list[EvalQuestion] | None = Field(None, min_length=1,
                                                 max_length=MAX_EVAL_QUESTIONS)
    limit: int | None = Field(None, ge=1, le=MAX_EVAL_QUESTIONS,
                              description="a fixed-seed sample of this many questions "
                                          "(inline: the first ones); default all")
    reader: bool = Field(False, description="also answer each question and report EM, ANLS "
                                            "and citation support (needs a reader)")

    @model_validator(mode="after")
    def _one_source(self) -> "EvalSource":
        if (self.questions_path is None) == (self.questions is None):
            raise ValueError("give exactly one of questions_path and questions")
        return self


def eval_request(settings: Settings) -> type[BaseModel]:
    """``POST /v1/eval``'s body: evaluate search (and with ``reader`` the
    answers) on questions from a TSV on the server (``questions_path``,
    only under ``PILAR_INGEST_ROOTS``) or given inline (``questions``):
    exactly one; budget, k, profile and collections as every request has
    them (:func:`pilar.query.request_model`, limits of ``settings``)."""
    return request_model(settings, "EvalRequest", question=None, budget="budget_tokens",
                         doc=eval_request.__doc__, base=EvalSource)


# -- pages --------------------------------------------------------------------

class ProvenanceOut(Record):
    provenance_id: str
    doc_id: str
    page: int
    section_path: list[str] = []
    bbox: tuple[float, float, float, float] | None = None
    css_path: str | None = None
    table_index: int | None = None
    row: int | None = None
    col: int | None = None
    cell_ids: list[str] = []
    char_start: int | None = None
    char_end: int | None = None


class SupportOut(Record):
    support_id: str
    doc_id: str
    kind: str
    text: str
    role: str = "primary"
    provenance: ProvenanceOut


class PageOut(BaseModel):
    """A page's text and its supports with provenance."""

    page_id: str
    doc_id: str
    number: int
    width: float
    height: float
    text: str
    title: str = ""
    media_type: str = ""
    n_pages: int = Field(0, description="pages of the document")
    supports: list[SupportOut] = Field(description="``limit`` supports from ``offset``, in page order")
    supports_total: int = Field(description="supports of the page in all")
    offset: int = Field(0, description="index of the first support returned")
    limit: int = Field(description="supports returned at most")
    next_offset: int | None = Field(None, description="``offset`` of the next slice of supports; "
                                                      "null when this slice is the last")
    headers: dict[str, list[str]] = Field(
        {}, description="column headers (header paths) of each table-row support returned: "
                        "{support_id: [...]}")


# -- graph exploration -------------------------------------------------------------

class CypherRequest(BaseModel):
    model_config = ConfigDict(extra="forbid")

    query: str = Field(min_length=1, max_length=20_000, description="read-only Cypher")
    params: dict[str, Any] = Field(default_factory=dict)
    limit: int = Field(1000, ge=1, le=10_000, description="row cap")
    timeout: float = Field(30.0, gt=0, le=300, description="seconds before the server aborts")


class CypherResponse(BaseModel):
    columns: list[str]
    rows: list[dict[str, Any]]
    truncated: bool = Field(description="a cap cut the rows (the request's limit or the "
                                        "server's byte cap, PILAR_CYPHER_MAX_BYTES)")
    message: str | None = Field(None, description="which cap cut the rows, when one did")


class EntityOut(Record):
    entity_id: str
    name: str
    type: str = "thing"
    aliases: list[str] = []


class EntityList(BaseModel):
    items: list[EntityOut]


class AssertionOut(Record):
    assertion_id: str
    doc_id: str
    subject: str
    predicate: str
    object: str
    modality: str
    supports: list[str]
    qualifiers: dict[str, str] = {}
    confidence: float = 1.0
    grounded: bool = True
    extractor: str = ""
    subject_entity: str | None = None
    object_entity: str | None = None


class SameAsOut(Record):
    source: str
    target: str
    score: float
    method: str


class PageRef(BaseModel):
    page_id: str
    doc_id: str
    number: int
    title: str = ""


class NeighborhoodOut(Record):
    """Entities, assertions, supports and pages within ``depth`` hops."""

    entities: list[EntityOut]
    assertions: list[AssertionOut]
    same_as: list[SameAsOut]
    supports: list[SupportOut]
    pages: list[PageRef]
    mentions: list[tuple[str, str]] = Field(
        [], description="MENTIONED_IN edges to the supports: (entity_id, support_id)")
    truncated: bool = Field(False, description="an entity's assertions or mentions reached "
                                               "the per-entity cap (50): more may exist")


# -- health and errors ---------------------------------------------------------

class Health(BaseModel):
    status: Literal["ok", "unavailable"]
    checks: dict[str, str] = {}


class Problem(BaseModel):
    """An error as ``application/problem+json`` (RFC 9457)."""

    type: str = "about:blank"
    title: str
    status: int
    detail: str | None = None
    errors: list[dict[str, Any]] | None = None


def search_response(result, shown: Shown | None = None) -> SearchResponse:
    """The :class:`SearchResponse` of a :class:`pilar.model.SearchResult`,
    its pages' and citations' sources passed through ``shown`` when given
    (a client's view)."""
    out = SearchResponse.model_validate(result)
    if shown is not None:
        _show_packet(out.packet, shown)
        for page in out.pages:
            page.source = shown(page.source)
    return out


def document_out(doc, shown: Shown | None = None) -> DocumentOut:
    """The :class:`DocumentOut` of a :class:`pilar.model.Document`, its
    ``uri`` and ``sources`` passed through ``shown`` when given."""
    out = DocumentOut.model_validate(doc)
    if shown is not None:
        out.uri, out.sources = shown(out.uri), [shown(u) for u in out.sources]
    return out


Job.model_rebuild()
