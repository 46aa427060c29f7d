"""The :class:`Pilar` facade: one object with the reach of the CLI.

It wires the layers and delegates, owning no layer's logic: ingest runs
(:mod:`pilar.ingest_run`) store each parsed document as one unit of work in
the page index and the graph (:mod:`pilar.writes`, DESIGN.md's protocol for
two stores); requests are checked by :mod:`pilar.query`; queries call
retrieval, then packing (:class:`~pilar.packing.packer.Packer` on the page
material of :class:`~pilar.stores.PageCache`), then the reader
(:meth:`pilar.reader.Reader.reply`); evaluation runs
:func:`pilar.eval.run.evaluate_search` over this object's search. Backends
come from config (:func:`pilar.stores.open_stores`).
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterable
from functools import cached_property
from pathlib import Path
from typing import TYPE_CHECKING

from pilar.config import Settings, home_problem
from pilar.errors import ConfigError, EmptyStoreError
from pilar.eval.questions import Question
from pilar.eval.run import EvalReport, SearchMethod, evaluate_search
from pilar.ingest import PageProgress
from pilar.ingest.files import select_files
from pilar.ingest_run import FilePageProgress, IngestRun, Progress
from pilar.model import (DEFAULT_COLLECTION, Answer, Document, Entity, IngestResult,
                         Neighborhood, Packet, Page, RankedPage, Scope, SearchResult, Support,
                         check_collection)
from pilar.packing.packer import Packer
from pilar.packing.statistics import fill_stats
from pilar.packing.tokens import TokenCounter
from pilar.query import Query, check_profile, check_scope, options, require_scope
from pilar.retrieval.embeddings import QUERY_CACHE, Embedder
from pilar.retrieval.expansion import GraphRetriever
from pilar.retrieval.hybrid import HybridRetriever
from pilar.stores import PageCache, open_stores
from pilar.writes import DocumentWriter

if TYPE_CHECKING:
    from pilar.reader import AnswerStream, Reader

EMPTY_STORE = "the store holds no documents: add some with `pilar ingest PATH`"
"""What a query on a store without documents says (EmptyStoreError, the CLI)."""


class Pilar:
    """pilar's Python API.

    ``Pilar(home=...)`` opens (creating if needed, unless ``create`` is
    False) the store under ``home`` (default ``PILAR_HOME``); other settings
    come from the environment unless ``settings`` is given.

    Raises :class:`~pilar.errors.ConfigError` when ``home`` is (or lies
    below) a file, :class:`~pilar.errors.EmptyStoreError` when ``create``
    is False and there is no embedded store, and
    :class:`~pilar.errors.StoreError` when a store cannot be opened.
    """

    def __init__(self, home: str | Path | None = None, settings: Settings | None = None,
                 create: bool = True):
        settings = settings or Settings()
        if home is not None:
            problem = home_problem(Path(home))
            if problem:
                raise ConfigError(f"PILAR_HOME={str(home)!r}: {problem}")
            settings = settings.model_copy(update={"home": Path(home)})
        self.settings = settings
        self.graph, self.index = open_stores(settings, create=create)
        self.embedder = Embedder.of(settings)
        self.pages = PageCache(self.graph, lambda: self.tokens)
        self._retrievers: dict[str, GraphRetriever] = {}
        self._retrievers_lock = threading.Lock()
        self._held_pages = False  # the store was seen holding pages (see search)
        self.writer = DocumentWriter(self.graph, self.index, settings, self.pages.clear,
                                     lambda units: fill_stats(units, self.tokens))

    @cached_property
    def tokens(self) -> TokenCounter:
        """The reader's token counter (``PILAR_READER_TOKENIZER``, else the
        reader's or the embedder's tokenizer)."""
        s = self.settings
        return TokenCounter.for_reader(s.reader_tokenizer or s.reader_model or s.llm_model,
                                       self.embedder.tokenizer, s.embedding_model,
                                       self.embedder.lock)

    @cached_property
    def reader(self) -> "Reader":
        """The reader (:class:`pilar.reader.Reader`) on the configured model
        server; raises :class:`~pilar.errors.ReaderNotConfiguredError` without one."""
        from pilar.llm import Endpoint
        from pilar.reader import Reader

        Endpoint.reader(self.settings)  # no server configured: say so before loading a tokenizer
        return Reader(self.settings, self.tokens)

    @cached_property
    def hybrid(self) -> HybridRetriever:
        """The base hybrid retriever (BM25 + dense, PILAR §3.3)."""
        return HybridRetriever(self.graph, self.index, self.embedder, self.settings)

    def retriever(self, profile: str | None = None) -> GraphRetriever:
        """The graph-linking retriever for ``profile`` (default: settings'),
        one per profile (its bridge expansion keeps per-page caches).

        Raises ``ValueError`` for a profile not in :data:`pilar.config.PROFILES`."""
        profile = check_profile(self.settings.profile if profile is None else profile)
        with self._retrievers_lock:
            found = self._retrievers.get(profile)
            if found is None:
                settings = self.settings.model_copy(update={"profile": profile}) \
                    if profile != self.settings.profile else self.settings
                found = self._retrievers[profile] = GraphRetriever(
                    self.graph, self.index, self.hybrid, settings.profiled())
        return found

    @cached_property
    def packer(self) -> Packer:
        """The packer of these settings (:meth:`pilar.packing.packer.Packer.of`)."""
        return Packer.of(self.settings, self.embedder, self.index.unit_vectors, self.tokens)

    # -- ingestion -----------------------------------------------------------
    def ingest(self, paths: Iterable[str | Path] | str | Path,
               progress: Progress | None = None,
               collection: str = DEFAULT_COLLECTION, workers: int | None = None,
               ray: str | None = None,
               on_page: FilePageProgress | None = None) -> list[IngestResult]:
        """Ingest files, folders or globs into ``collection``; one
        :class:`IngestResult` per file, in input order (``progress`` is
        called with each as it is stored; ``on_page(path, done, total)`` as a
        PDF's pages are parsed, per file only on Ray).

        Files are parsed in ``workers`` processes (default
        ``settings.workers``, else the CPU cores; 0 = in this process), each
        within the parse budgets (``PILAR_PARSE_MEMORY_BYTES``,
        ``PILAR_PARSE_SECONDS``; :mod:`pilar.ingest.parallel`); this process,
        the one writer, embeds several documents per call and stores each
        document as one unit (:mod:`pilar.writes`); with ``ray`` (a cluster
        address or ``auto``; extra ``pilar[ray]``) parse and embed run as Ray
        tasks (:func:`pilar.scale_out.ray_parse_many`). A file that fails
        gets ``status="failed"`` and a one-line ``reason``; the rest go on.
        A document belongs to one collection. Bytes already in
        ``collection`` from the same path are ``"unchanged"``; new bytes at a
        known path ``"replaced"`` (the old document removed); the same bytes
        from another path ``"new_source"`` (``reason`` names the stored
        one); files in folders that are not documents ``"skipped"``
        (:func:`~pilar.ingest.files.select_files`; listed first, not passed
        to ``progress``). Documents a crash left unfinished are removed
        first (:meth:`recover`).

        Raises ``ValueError`` for a ``collection`` that is no collection name
        (:func:`~pilar.model.check_collection`; the empty one included),
        :class:`~pilar.errors.ConfigError` for a bad setting (every file would
        fail alike: the ingest stops, whatever was stored stays), when no
        parse worker can start (a calling script without an ``if __name__ ==
        "__main__":`` guard) and when the Ray cluster cannot be reached.
        """
        check_collection(collection)
        if isinstance(paths, (str, Path)):
            paths = [paths]
        self.recover()
        files, skipped = select_files(paths)
        results = [IngestResult(str(f), "skipped", reason=why) for f, why in skipped]
        return results + self._run(files, collection).run(progress, workers, ray, on_page)

    def recover(self) -> list[str]:
        """Remove the documents a crashed write left ``pending`` or
        ``deleting`` (index first, then graph); returns their ids. Assumes
        no other process is writing to the same stores."""
        return self.writer.recover()

    def ingest_file(self, path: Path, collection: str = DEFAULT_COLLECTION,
                    on_page: PageProgress | None = None) -> IngestResult:
        """Ingest one file into ``collection`` as :meth:`ingest` does, always
        parsed in one worker process within the parse budgets, whatever
        ``PILAR_WORKERS`` says (a hostile file must not take a server down);
        never raises for bad input. A document of the same bytes that a crash
        left unfinished is removed and written afresh. ``on_page(done,
        total)`` as a PDF's pages are parsed. Raises ``ValueError`` for a ``collection`` that is no
        collection name and :class:`~pilar.errors.ConfigError` for a bad setting."""
        pages = None if on_page is None else (lambda _path, done, total: on_page(done, total))
        return self._run([Path(path)], collection).run(None, 1, on_page=pages)[0]

    def ingest_job(self, files: list[Path], collection: str, progress: Progress | None = None,
                   stop: threading.Event | None = None,
                   cancel: threading.Event | None = None) -> list[IngestResult]:
        """Ingest ``files`` (exactly as listed: no folder walked, none
        dropped) into ``collection`` as :meth:`ingest` does, for the
        server's ingest worker (:mod:`pilar.api.ingest_service`): always in
        worker processes (at least one), or with ``PILAR_RAY_ADDRESS`` set as
        Ray tasks on that cluster (:func:`pilar.scale_out.ray_parse_many`, as
        ``pilar ingest --ray``). Once ``stop`` is set no further file
        is begun (the results are a prefix of ``files``); once ``cancel`` is
        set :class:`~pilar.errors.IngestCancelled` is raised (what
        ``progress`` was given is stored whole, nothing else written).
        Raises as :meth:`ingest_file` does."""
        return self._run(list(files), collection).run(
            progress, self.settings.workers or None, self.settings.ray_address or None,
            stop=stop, cancel=cancel)

    def _run(self, files: list[Path], collection: str) -> IngestRun:
        check_collection(collection)
        return IngestRun(self.writer, self.embedder, self.settings, files, collection)

    # -- queries ---------------------------------------------------------------
    def search(self, question: str, budget: int | None = None, k: int | None = None,
               profile: str | None = None, collections: list[str] | None = None,
               doc_ids: list[str] | None = None) -> SearchResult:
        """Ranked pages (best first, at most ``k``, each with a ``trace`` of
        its score parts and graph path) and an evidence packet of at most
        ``budget`` tokens (PILAR §3.4-3.5, Tessera §3.4-3.5). ``profile`` is
        ``single-shot`` or ``multi-hop`` (default: ``PILAR_PROFILE``).
        ``collections`` and ``doc_ids`` (None = all) limit the pages, inside
        the index's BM25 and kNN queries and for expanded pages alike.

        Raises what :meth:`query` raises for the request (the limits and
        messages of :mod:`pilar.query`: ``ValueError``, ``TypeError``,
        :class:`~pilar.errors.UnknownScopeError` for named collections or
        ids holding no document, the same on every face);
        :class:`~pilar.errors.EmptyStoreError` (before loading any model)
        when the store holds no pages and the search is not limited;
        :class:`~pilar.errors.ConfigError` when the embedding or reranker
        model cannot be loaded."""
        q = self.query(question, budget, k, profile, collections, doc_ids)
        retriever = self.retriever(q.profile)
        scope = q.scope
        # the page count is read until the store is seen holding pages, and
        # again only when a search finds nothing (one round trip less per search)
        if scope.unlimited:
            if not self._held_pages and self.index.count() == 0:
                raise EmptyStoreError(EMPTY_STORE)
            self._held_pages = True
        pages = retriever.search(q.question, q.k, None if scope.unlimited else scope)
        if not pages and scope.unlimited and self.index.count() == 0:
            self._held_pages = False
            raise EmptyStoreError(EMPTY_STORE)
        return SearchResult(question=question, pages=pages,
                            packet=self.pack(question, pages, q.budget))

    def query(self, question, budget=None, k=None, profile=None, collections=None,
              doc_ids=None) -> Query:
        """The checked request of a read (:meth:`pilar.query.Query.of`, this
        object's settings giving defaults and limits); raises what it raises,
        and :class:`~pilar.errors.UnknownScopeError` when ``collections`` or
        ``doc_ids`` name any that hold no stored document (read before any
        model loads)."""
        q = Query.of(self.settings, question, budget, k, profile, collections, doc_ids)
        self.require_scope(q.scope)
        return q

    def require_scope(self, scope: Scope) -> None:
        """Raise :class:`~pilar.errors.UnknownScopeError` unless every
        collection and document id of ``scope`` holds a stored document
        within the rest of it (:func:`pilar.query.require_scope`)."""
        require_scope(scope, self.graph.documents)

    def ask(self, question: str, budget: int | None = None, k: int | None = None,
            profile: str | None = None, collections: list[str] | None = None,
            doc_ids: list[str] | None = None, stream: bool = False) -> "Answer | AnswerStream":
        """An answer to ``question`` from the packet of :meth:`search` (PILAR
        App. H.2-H.3): the reader sees only the numbered packet (at most
        ``budget`` reader tokens, markers included) and cites its items as
        ``[n]``; the :class:`~pilar.model.Answer` holds the citations resolved
        to supports, flags, and the packet. With ``PILAR_READER_IMAGES`` a
        share of the budget (``PILAR_READER_IMAGE_SHARE``) holds table and
        figure crops of PDF pages, costed in image tokens
        (:mod:`pilar.reader.images`). ``stream=True`` returns an
        :class:`~pilar.reader.AnswerStream` of text deltas. ``collections``
        and ``doc_ids`` limit the pages as in :meth:`search`.

        Raises what :meth:`query` raises for a bad request (checked first,
        as every face checks it), then
        :class:`~pilar.errors.ReaderNotConfiguredError` when no model
        server is configured, :class:`~pilar.errors.LLMError` kinds when the
        server fails (timeout, 5xx, refusal, empty reply), and what
        :meth:`search` raises."""
        budget = self.query(question, budget, k, profile, collections, doc_ids).budget
        self.reader  # noqa: B018 - no reader: say so before retrieving
        hit = self.search(question, budget=self.reader.text_budget(budget), k=k,
                          profile=profile, collections=collections, doc_ids=doc_ids)
        return self._reply(question, hit.packet, budget, stream)

    def _reply(self, question: str, packet: Packet, budget: int,
               stream: bool = False) -> "Answer | AnswerStream":
        def supports(ids: list[str]) -> dict[str, list[Support]]:
            return {pid: m[0] for pid, m in self.pages.material(ids).items()}

        return self.reader.reply(question, packet, budget, supports, self.graph.documents,
                                 stream)

    def evaluate(self, questions: str | Path | list[Question], budget: int | None = None,
                 k: int | None = None, profile: str | None = None, limit: int | None = None,
                 progress: Callable[[int, int], None] | None = None, reader: bool = False,
                 collections: list[str] | None = None) -> EvalReport:
        """Evaluate search over a questions file (format in
        :mod:`pilar.eval.questions`; ``limit``: a fixed-seed sample) or a list
        of :class:`~pilar.eval.questions.Question`: per question the first
        10 ranked pages give recall@1/5/10, recall@1-10 and MRR@10, the first
        ``k`` give support-chain coverage and the packet of at most ``budget``
        tokens whose evidence delivery is checked (:mod:`pilar.eval.run`).
        With ``reader`` each question is also answered from its packet (as
        :meth:`ask` does) and scored with EM, ANLS (threshold 0.5) and
        citation support (:func:`pilar.eval.metrics.answer_figures`); an
        answer the model server fails on gets no answer figures and is
        counted in the report's ``notes``. ``collections`` (None = all)
        limits the pages as in :meth:`search`. ``progress(done, total)``
        after each question.

        Raises :class:`~pilar.errors.QuestionsError` for an unreadable file
        (bad rows are skipped and listed in the report's ``notes``),
        :class:`~pilar.errors.ReaderNotConfiguredError` with ``reader`` and
        no model server, and the errors of :meth:`search` for bad ``budget``,
        ``k``, ``profile`` or ``collections``."""
        budget, k, profile, scope = options(self.settings, budget, k, profile, collections)
        self.require_scope(scope)
        if reader:
            self.reader  # noqa: B018 - no reader: say so before the first question
        retriever = self.retriever(profile)
        method = SearchMethod(
            lambda q, depth: retriever.search(q, depth, None if scope.unlimited else scope),
            self.pack, k, self.reader.text_budget(budget) if reader else budget,
            (lambda q, packet: self._reply(q, packet, budget)) if reader else None)
        return evaluate_search(
            questions, method, budget=budget, k=k, profile=profile, limit=limit,
            progress=progress, batch=QUERY_CACHE // 2,
            prepare=lambda batch: self.embedder.prime([q.question for q in batch]))

    def pack(self, question: str, pages: list[RankedPage], budget: int,
             use_units: bool = True) -> Packet:
        """The packet for already ranked ``pages`` (:meth:`pilar.packing.packer.Packer.pack`)."""
        material = self.pages.material([p.page_id for p in pages])
        return self.packer.pack(question, pages, material, budget, use_units)

    # -- exploration -----------------------------------------------------------
    def page(self, page_id: str) -> tuple[Page, list[Support]] | None:
        """A stored page and its supports (document order, with provenance), or None."""
        page = self.graph.pages([page_id]).get(page_id)
        if page is None:
            return None
        return page, self.graph.supports_on_pages([page_id])[page_id]

    def row_headers(self, page_id: str) -> dict[str, tuple[str, ...]]:
        """``{support_id: column headers}`` of the table rows on page
        ``page_id``: the header path of each cell, as the row's evidence unit
        carries them (Tessera §3.3; a key-value row's key); empty without rows."""
        units = self.pages.material([page_id])[page_id][1]
        return {u.support_id: u.headers for u in units if u.kind == "row"}

    def entities(self, query: str, limit: int = 20,
                 collections: list[str] | None = None) -> list[Entity]:
        """Entities (of ``collections`` when given) whose name or aliases
        share words with ``query`` (full-text, best first, at most ``limit``).
        Raises ``ValueError`` for a name that is no collection name."""
        scope = check_scope(collections, None)
        return self.graph.entity_candidates(query, limit, None if scope.collections is None
                                            else list(scope.collections))

    def entity(self, entity_id: str) -> Entity | None:
        return self.graph.get_entities([entity_id]).get(entity_id)

    def entity_documents(self, entity_ids: list[str]) -> dict[str, list[str]]:
        """``{entity_id: [doc_id, ...]}``: the documents that use each entity."""
        return self.graph.entity_documents(entity_ids)

    def neighborhood(self, entity_id: str, depth: int = 1, doc_ids: set[str] | None = None,
                     limit: int = 50) -> Neighborhood | None:
        """Entities, assertions, supports and pages within ``depth`` hops of
        ``entity_id`` (:func:`pilar.graph.explore.neighborhood`), only of
        ``doc_ids`` when given; None for an unknown entity."""
        from pilar.graph.explore import neighborhood

        return neighborhood(self.graph, entity_id, depth, doc_ids, limit)

    def docs(self, collections: list[str] | None = None) -> list[Document]:
        """Stored (``ready``) documents, oldest first; only those in
        ``collections`` when given. Raises ``ValueError`` for a name that is
        no collection name."""
        check_scope(collections, None)
        return self.graph.documents(collections=collections)

    def delete(self, doc_id: str) -> bool:
        """Delete a document from index and graph, and the uploaded files
        (under ``PILAR_HOME/uploads``) that were its sources and no other
        document's; False if it was not stored."""
        return self.writer.delete(doc_id)

    def stats(self) -> dict[str, int]:
        """Counts of documents, pages, supports, provenance, units, tables,
        assertions, entities and each edge type; the same keys on every backend."""
        return self.graph.stats()

    def migrate(self) -> dict[str, list[int]]:
        """Apply pending schema migrations to every store (idempotent; the
        stores also migrate on open). Returns the versions applied per store."""
        return {f"graph:{self.graph.name}": self.graph.migrate(),
                f"index:{self.index.name}": self.index.migrate()}

    def close(self) -> None:
        """Close both stores (the object is unusable afterwards); the index
        first, as it may persist derived data read from a store file it
        shares with the graph."""
        self.index.close()
        self.graph.close()

    def cypher(self, query: str, params: dict | None = None, *, timeout: float = 30.0,
               row_cap: int = 1000):
        """Run a read-only Cypher query on the graph
        (:meth:`pilar.graph.GraphStore.cypher`), its rows cut at ``row_cap``
        and at ``PILAR_CYPHER_MAX_BYTES``; raises
        :class:`~pilar.graph.explore.CypherError` for a refused, failed or
        timed-out query and :class:`~pilar.errors.ConfigError` when the
        graph is not on Neo4j."""
        return self.graph.cypher(query, params, timeout=timeout, row_cap=row_cap,
                                 byte_cap=self.settings.cypher_max_bytes)
