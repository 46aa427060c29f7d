"""The :class:`Pilar` facade: one object with the reach of the CLI.

It wires the layers and delegates: ingest runs (:mod:`pilar.ingest_run`)
store each parsed document as one unit of work in the page index and the
graph (:mod:`pilar.writes`, DESIGN.md's protocol for two stores); queries
call retrieval, then packing, then the reader; evaluation runs
:func:`pilar.eval.run.evaluate` over this object's search. Backends come
from config (:func:`pilar.stores.open_stores`).
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Callable, Iterable
from functools import cached_property
from pathlib import Path
from typing import TYPE_CHECKING

from pilar.config import MIN_BUDGET, Settings, home_problem
from pilar.errors import ConfigError, EmptyStoreError, LLMError, UnknownScopeError
from pilar.eval.questions import Question, load_questions
from pilar.eval.run import RANK_DEPTH, EvalReport, Retrieved, evaluate
from pilar.ingest import PageProgress
from pilar.ingest.files import select_files
from pilar.ingest_run import FilePageProgress, IngestRun, Progress
from pilar.model import (DEFAULT_COLLECTION, Answer, Document, Entity, IngestResult,
                         Neighborhood, Packet, Page, RankedPage, Scope, SearchResult, Support,
                         Unit, check_collection)
from pilar.query import Query, check_profile, check_scope, options, unknown_scope
from pilar.packing.packet import PageEvidence, assemble
from pilar.packing.selection import UnitSelector
from pilar.packing.statistics import fill_stats, refresh_stats
from pilar.packing.tokens import TokenCounter
from pilar.retrieval.embeddings import QUERY_CACHE, Embedder, VectorCache, load_cross_encoder
from pilar.retrieval.expansion import GraphRetriever
from pilar.retrieval.hybrid import HybridRetriever
from pilar.writes import DocumentWriter

if TYPE_CHECKING:
    from pilar.reader import AnswerStream, Reader

PAGE_CACHE = 1024
"""Pages whose supports and units a :class:`Pilar` keeps in memory for packing."""


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
        from pilar.stores import open_stores

        self.graph, self.index = open_stores(settings, create=create)
        self.embedder = Embedder(
            settings.embedding_model, settings.embedding_batch_size,
            device=settings.embedding_device,
            cache=VectorCache(settings.home / "vector-cache.sqlite")
            if settings.embedding_cache else None,
            onnx_dir=(settings.models_dir or settings.home / "models")
            if settings.query_encoder == "onnx" else None)
        self._pages: OrderedDict[str, tuple[list[Support], list[Unit]]] = OrderedDict()
        self._pages_lock = threading.Lock()
        self._retrievers: dict[str, GraphRetriever] = {}
        self._retrievers_lock = threading.Lock()
        self._held_pages = False  # the store was seen holding pages (see search)
        self.writer = DocumentWriter(self.graph, self.index, settings, self._drop_page_cache,
                                     lambda units: fill_stats(units, self.tokens))

    @cached_property
    def tokens(self) -> TokenCounter:
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
    def selector(self) -> UnitSelector:
        cross = load_cross_encoder(self.settings.reranker_model) \
            if self.settings.reranker_model else None
        s = self.settings
        return UnitSelector(self.embedder, self.index.unit_vectors, cross, s.prefilter,
                            s.unit_page_weight, s.unit_cues)

    # -- ingestion -----------------------------------------------------------
    def ingest(self, paths: Iterable[str | Path] | str | Path,
               progress: Progress | None = None,
               collection: str = DEFAULT_COLLECTION, workers: int | None = None,
               ray: str | None = None,
               on_page: FilePageProgress | None = None) -> list[IngestResult]:
        """Ingest files, folders or globs into ``collection``; one
        :class:`IngestResult` per file, in input order (``progress`` is
        called with each as it is stored).

        Files are parsed in ``workers`` processes (default
        ``settings.workers``, else the CPU cores; 0 = in this process), each
        file within the parse budgets (``PILAR_PARSE_MEMORY_BYTES``,
        ``PILAR_PARSE_SECONDS``; :mod:`pilar.ingest.parallel`), while
        this process, the one writer, embeds several documents' texts per
        call (:func:`pilar.retrieval.embeddings.page_vectors`) and stores
        each document as one unit (:mod:`pilar.writes`). A file that
        fails gets ``status="failed"`` and a one-line ``reason``; the rest go
        on. A document belongs to one collection: bytes stored in another
        collection are a document of their own here. Bytes already in
        ``collection`` from the same path are a no-op (``"unchanged"``); new
        bytes at a known path of the collection replace the old document
        (``"replaced"``). Bytes already stored in it from another path get
        ``"new_source"`` (the path is recorded as another source of that
        document, ``reason`` names the stored one); files in folders that
        are not documents get ``"skipped"`` (see :func:`~pilar.ingest.files.select_files`; they
        come first in the list and are not passed to ``progress``).
        Documents a crash left unfinished are removed first (:meth:`recover`).
        With ``ray`` (a Ray cluster address or ``auto``; extra ``pilar[ray]``)
        parse and embed run as Ray tasks
        (:func:`pilar.scale_out.ray_parse_many`) and this process only stores.

        ``on_page(path, done, total)`` is called as a PDF's pages are parsed,
        in this process (``workers=0``) or in a worker process; on Ray,
        progress is per file only (``progress``).

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
        run = IngestRun(self.writer, self.embedder, self.settings, files, collection)
        return results + run.run(progress, workers, ray, on_page)

    def recover(self) -> list[str]:
        """Remove the documents a crashed write left ``pending`` or
        ``deleting`` (index first, then graph); returns their ids. Assumes
        no other process is writing to the same stores."""
        return self.writer.recover()

    def ingest_file(self, path: Path, collection: str = DEFAULT_COLLECTION,
                    on_page: PageProgress | None = None) -> IngestResult:
        """Ingest one file into ``collection``, parsed in one worker process
        within the parse budgets (``PILAR_PARSE_MEMORY_BYTES``,
        ``PILAR_PARSE_SECONDS``; :mod:`pilar.ingest.parallel`), never in this
        process, whatever ``PILAR_WORKERS`` says: the server's ingest jobs
        call this, and a hostile file must not take the server down. Never
        raises for bad input (see :meth:`ingest`). A document of the same
        bytes that a crash left unfinished is removed and written afresh.
        ``on_page(done, total)`` is called as a PDF's pages are parsed.

        Raises ``ValueError`` for a ``collection`` that is no collection
        name and :class:`~pilar.errors.ConfigError` for a bad setting."""
        check_collection(collection)
        pages = None if on_page is None else (lambda _path, done, total: on_page(done, total))
        run = IngestRun(self.writer, self.embedder, self.settings, [Path(path)], collection)
        return run.run(None, 1, on_page=pages)[0]

    def ingest_job(self, files: list[Path], collection: str, progress: Progress | None = None,
                   stop: threading.Event | None = None,
                   cancel: threading.Event | None = None) -> list[IngestResult]:
        """Ingest ``files`` (exactly as listed: no folder walked, none
        dropped) into ``collection`` as :meth:`ingest` does, for the
        server's ingest worker (:mod:`pilar.api.ingest_service`): always in
        worker processes within the parse budgets (at least one, whatever
        ``PILAR_WORKERS`` says), embedding several documents per call,
        this process the one writer; with ``PILAR_RAY_ADDRESS`` set, parse
        and embed run as Ray tasks on that cluster instead
        (:func:`pilar.scale_out.ray_parse_many`, as ``pilar ingest --ray``),
        within the parse budgets on each Ray worker. Results come in input order, each
        passed to ``progress`` as it is stored; once ``stop`` is set no
        further file is begun (the results are a prefix of ``files``); once
        ``cancel`` is set :class:`~pilar.errors.IngestCancelled` is raised
        (what ``progress`` was given is stored whole, nothing else written).

        Raises ``ValueError`` for a ``collection`` that is no collection
        name and :class:`~pilar.errors.ConfigError` for a bad setting."""
        check_collection(collection)
        workers = self.settings.workers or None
        run = IngestRun(self.writer, self.embedder, self.settings, list(files), collection)
        return run.run(progress, workers, self.settings.ray_address or None, stop=stop,
                       cancel=cancel)

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
        within the rest of it."""
        if scope.unlimited:
            return
        names = list(scope.collections) if scope.collections is not None else None
        stored = self.graph.documents(list(scope.doc_ids) if scope.doc_ids else None,
                                      collections=names)
        if scope.collections and (absent := [c for c in scope.collections
                                             if c not in {d.collection for d in stored}]):
            raise UnknownScopeError(unknown_scope(absent, [], True))
        if scope.doc_ids is not None and (absent := [
                d for d in scope.doc_ids if d not in {doc.doc_id for doc in stored}]):
            raise UnknownScopeError(unknown_scope([], absent, scope.collections is not None))

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
        hit = self.search(question, budget=self._text_budget(budget), k=k, profile=profile,
                          collections=collections, doc_ids=doc_ids)
        return self._read(question, hit.packet, budget, stream)

    def _text_budget(self, budget: int) -> int:
        """The packet's share of ``budget`` (tokens): all of it, or without
        ``PILAR_READER_IMAGE_SHARE`` when crops go to a VLM reader."""
        s = self.settings
        if s.reader_images:
            return max(MIN_BUDGET, budget - int(budget * s.reader_image_share))
        return budget

    def _read(self, question: str, packet: Packet, budget: int,
              stream: bool = False) -> "Answer | AnswerStream":
        """The reader's answer from ``packet`` (built within
        :meth:`_text_budget` of ``budget``), with crops in the rest of the
        budget when ``PILAR_READER_IMAGES`` is on (see :meth:`ask`)."""
        reader = self.reader
        s = self.settings
        text_budget = self._text_budget(budget)
        context = reader.context(packet, text_budget)
        images = []
        if s.reader_images:
            from pilar.reader.images import crops

            page_ids = list(dict.fromkeys(item.page_id for item in context.items))
            material = self._page_material(page_ids)
            docs = {d.doc_id: d for d in self.graph.documents(
                list(dict.fromkeys(item.citation.doc_id for item in context.items)))}
            images = crops(context, {pid: m[0] for pid, m in material.items()}, docs, s,
                           budget - context.tokens)
        return reader.stream(question, context, images) if stream else reader.answer(
            question, context, images)

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
        notes = []
        source = "questions"
        if isinstance(questions, (str, Path)):
            source = str(questions)
            questions, notes = load_questions(questions, limit)
        elif limit is not None:
            questions = questions[:limit]
        if not reader:
            notes.append("EM, ANLS and citation support need answers: evaluate with a reader "
                         "(reader=True, `pilar eval --reader`)")
        failures: list[str] = []
        text_budget = self._text_budget(budget) if reader else budget

        def method(q: Question) -> Retrieved:
            pages = retriever.search(q.question, max(k, RANK_DEPTH),
                                     None if scope.unlimited else scope)
            packet = self.pack(q.question, pages[:k], text_budget)
            got = Retrieved(pages, packet.text)
            if reader:
                try:
                    answer = self._read(q.question, packet, budget)
                except LLMError as exc:
                    failures.append(f"{q.qid}: {exc}")
                else:
                    got.prediction = answer.short
                    got.cited = [c.text for c in answer.citations]
            return got

        report = evaluate(questions, method, name="pilar", source=source, budget=budget, k=k,
                          profile=profile, progress=progress,
                          notes=notes,
                          prepare=lambda batch: self.embedder.prime([q.question for q in batch]),
                          batch=QUERY_CACHE // 2)
        if failures:
            report.notes.append(f"the reader failed on {len(failures)} question(s), left out "
                                f"of EM, ANLS and citation support; first: {failures[0]}")
        return report

    def pack(self, question: str, pages: list[RankedPage], budget: int,
             use_units: bool = True) -> Packet:
        """The packet for already ranked ``pages`` (see :func:`pilar.packing.packet.assemble`)."""
        ids = [p.page_id for p in pages]
        material = self._page_material(ids)
        evidence = {p.page_id: PageEvidence(p, material[p.page_id][0]) for p in pages}
        selected, tables = [], {}
        if use_units:
            anchors = [(rank, u) for rank, pid in enumerate(ids) for u in material[pid][1]]
            selected = self.selector.select(question, anchors, [p.score for p in pages], budget,
                                            frozenset(s for p in pages for s in p.bridging))
            tables = self.selector.tables([u for _, u in anchors])
        s = self.settings
        return assemble(question, pages, evidence, selected, self.tokens, budget,
                        base_share=s.base_share, max_expanded=s.max_expanded_pages,
                        item_tokens=s.item_tokens, block_tokens=s.block_tokens,
                        use_units=use_units, tables=tables,
                        whole_table_share=s.whole_table_share, neighbours=s.neighbour_rows)

    def _page_material(self, page_ids: list[str]) -> dict[str, tuple[list[Support], list[Unit]]]:
        """``{page_id: (supports, units)}`` in document order, from an LRU of
        :data:`PAGE_CACHE` pages (the rest read in one query, units with their
        ingest-time statistics, filled now when missing,
        :func:`~pilar.packing.statistics.refresh_stats`): units are
        query-independent and may be cached per page (Tessera §3.2), and pages are content-addressed (a
        doc_id derives from the SHA-256 of the bytes and the collection), so a cached page stays valid.
        Ingesting or deleting through this object empties the cache. Safe
        under threads (the store reads run outside the cache's lock)."""
        cache = self._pages
        with self._pages_lock:
            out = {pid: cache[pid] for pid in page_ids if pid in cache}
        missing = [pid for pid in dict.fromkeys(page_ids) if pid not in out]
        if missing:
            read = self.graph.page_material(missing)
            refresh_stats([u for pid in missing for u in read[pid][1]], self.tokens,
                          self.graph.set_unit_stats)
            out.update(read)
        with self._pages_lock:
            for pid in page_ids:
                cache[pid] = out[pid]
                cache.move_to_end(pid)
            while len(cache) > PAGE_CACHE:
                cache.popitem(last=False)
        return {pid: out[pid] for pid in page_ids}

    def _drop_page_cache(self) -> None:
        with self._pages_lock:
            self._pages.clear()

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
        units = self._page_material([page_id])[page_id][1]
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
