"""The :class:`Pilar` facade: one object with the reach of the CLI.

It writes what ingestion returns to the graph store and the page index as
one unit of work per document, and serves queries by calling retrieval, then
packing, then the reader. Backends come from config (:func:`pilar.stores.open_stores`).

Writes follow DESIGN.md's protocol for two separate stores: the graph
records the document ``pending``, the index is written, then the graph's
layers with status ``ready`` in one transaction (the visibility switch every
read honours); a failed write removes what it wrote, and documents left
``pending`` or ``deleting`` by a crash are removed by the next ingest (one
writer at a time), after which that file ingests afresh. On the embedded
store the whole unit is also one SQLite transaction.
"""

from __future__ import annotations

import glob
import sqlite3
import threading
import time
from collections import OrderedDict
from collections.abc import Callable, Iterable
from functools import cached_property
from pathlib import Path
from typing import TYPE_CHECKING, NamedTuple

import numpy as np

from pilar.config import MIN_BUDGET, PROFILES, Settings, home_problem
from pilar.errors import ConfigError, EmptyStoreError, LLMError
from pilar.eval.questions import Question, load_questions
from pilar.eval.run import RANK_DEPTH, EvalReport, Retrieved, evaluate
from pilar.graph.linking import link_across
from pilar.ingest import PageProgress, new_document, read_source
from pilar.ingest.parallel import default_workers, failure_reason, parse_many
from pilar.model import (DEFAULT_COLLECTION, Answer, Document, Entity, IngestResult,
                         Neighborhood, Packet, Page, ParsedDocument, RankedPage, Scope, SearchResult,
                         Support, Unit)
from pilar.packing.packet import PageEvidence, assemble, tables_of
from pilar.packing.selection import UnitSelector
from pilar.packing.tokens import TokenCounter
from pilar.retrieval.embeddings import (QUERY_CACHE, Embedder, VectorCache, load_cross_encoder,
                                        page_vectors)
from pilar.retrieval.expansion import GraphRetriever
from pilar.retrieval.hybrid import HybridRetriever

if TYPE_CHECKING:
    from pilar.reader import AnswerStream, Reader

Progress = Callable[[IngestResult], None]
FilePageProgress = Callable[[str, int, int], None]
"""``on_page(path, done, total)`` of :meth:`Pilar.ingest`: pages parsed of one file."""
EMBED_BATCH_UNITS = 1024
"""Units of parsed documents gathered before one embedding call at ingest."""
PAGE_CACHE = 1024
"""Pages whose supports and units a :class:`Pilar` keeps in memory for packing."""


NOT_DOCUMENTS = frozenset({".md", ".txt", ".rst", ".json", ".jsonl", ".csv", ".tsv", ".py",
                           ".toml", ".yml", ".yaml", ".cfg", ".ini", ".log"})
"""Suffixes skipped when walking a folder (notes and data beside documents);
files named explicitly are always tried, their type sniffed from content."""


class Selection(NamedTuple):
    """What :func:`select_files` found: ``files`` to ingest, and ``skipped``
    ``(path, reason)`` pairs for files in folders that are not documents."""

    files: list[Path]
    skipped: list[tuple[Path, str]]


def select_files(paths: Iterable[str | Path]) -> Selection:
    """Files named by ``paths``: files as given, folders walked recursively
    (hidden files and :data:`NOT_DOCUMENTS` suffixes skipped, each with its
    reason), glob patterns expanded; sorted within each argument, duplicates
    dropped. A path that matches nothing is kept so that ingestion reports
    it as missing."""
    out: list[Path] = []
    skipped: list[tuple[Path, str]] = []
    for p in paths:
        p = Path(p)
        if p.is_dir():
            for f in sorted(f for f in p.rglob("*") if f.is_file()):
                if any(part.startswith(".") for part in f.relative_to(p).parts):
                    skipped.append((f, "hidden"))
                elif f.suffix.lower() in NOT_DOCUMENTS:
                    skipped.append((f, f"not a document ({f.suffix.lower()})"))
                else:
                    out.append(f)
        elif p.exists():
            out.append(p)
        elif glob.has_magic(str(p)):
            out.extend(sorted(Path(m) for m in glob.glob(str(p), recursive=True)
                              if Path(m).is_file()))
        else:
            out.append(p)
    files = list(dict.fromkeys(out))
    known = set(files)
    return Selection(files, list(dict.fromkeys((f, r) for f, r in skipped if f not in known)))


def page_sections(parsed: ParsedDocument) -> list[list[str]]:
    """Per page of ``parsed`` (in order), the distinct section paths of its
    supports, each ``" > "``-joined: what the index keeps as keywords."""
    by_page: dict[int, dict[str, None]] = {p.number: {} for p in parsed.pages}
    for s in parsed.supports:
        path = s.provenance.section_path
        if path and s.provenance.page in by_page:
            by_page[s.provenance.page][" > ".join(path)] = None
    return [list(by_page[p.number]) for p in parsed.pages]


def _scope(collections: list[str] | None, doc_ids: list[str] | None) -> Scope:
    """The :class:`~pilar.model.Scope` of a read; raises ``TypeError`` when
    ``collections`` or ``doc_ids`` is not None or a list of strings."""
    for name, value in (("collections", collections), ("doc_ids", doc_ids)):
        if value is not None and (isinstance(value, str)
                                  or not all(isinstance(v, str) for v in value)):
            raise TypeError(f"{name} must be a list of strings, got {value!r}")
    return Scope.of(collections, doc_ids)


_EMPTY = "the store holds no documents: add some with `pilar ingest PATH`"

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
            if settings.embedding_cache else None)
        self._pages: OrderedDict[str, tuple[list[Support], list[Unit]]] = OrderedDict()
        self._pages_lock = threading.Lock()
        self._held_pages = False  # the store was seen holding pages (see search)

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
        from pilar.reader import Reader

        return Reader(self.settings, self.tokens)

    @cached_property
    def hybrid(self) -> HybridRetriever:
        return HybridRetriever(self.graph, self.index, self.embedder, self.settings)

    def retriever(self, profile: str | None = None) -> GraphRetriever:
        """The graph-linking retriever for ``profile`` (default: settings').

        Raises ``ValueError`` for a profile not in :data:`pilar.config.PROFILES`."""
        if profile is not None and profile not in PROFILES:
            raise ValueError(f"profile must be one of {', '.join(PROFILES)}, got {profile!r}")
        settings = self.settings
        if profile and profile != settings.profile:
            settings = settings.model_copy(update={"profile": profile})
        return GraphRetriever(self.graph, self.index, self.hybrid, settings.profiled())

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
        ``settings.workers``, else the CPU cores; 0 = in this process) while
        this process, the one writer, embeds several documents' texts per
        call (:func:`pilar.retrieval.embeddings.page_vectors`) and stores
        each document as one unit (see the module docstring). A file that
        fails gets ``status="failed"`` and a one-line ``reason``; the rest go
        on. Unchanged bytes are a no-op (``"unchanged"``, in whatever
        collection they are); new bytes at a known path replace the old
        document (``"replaced"``). Bytes already stored from another path get
        ``"new_source"`` (the path is recorded as another source of that
        document, ``reason`` names the stored one); files in folders that
        are not documents get ``"skipped"`` (see :func:`select_files`; they
        come first in the list and are not passed to ``progress``).
        Documents a crash left unfinished are removed first (:meth:`recover`).
        With ``ray`` (a Ray cluster address or ``auto``; extra ``pilar[ray]``)
        parse and embed run as Ray tasks
        (:func:`pilar.scale_out.ray_parse_many`) and this process only stores.

        ``on_page(path, done, total)`` is called as a PDF's pages are parsed
        when parsing runs in this process (``workers=0``); with worker
        processes or Ray, progress is per file only (``progress``).

        Raises :class:`~pilar.errors.ConfigError` for a bad setting (every
        file would fail alike: the ingest stops, whatever was stored stays)
        and when the Ray cluster cannot be reached.
        """
        if isinstance(paths, (str, Path)):
            paths = [paths]
        self.recover()
        files, skipped = select_files(paths)
        results = [IngestResult(str(f), "skipped", reason=why) for f, why in skipped]
        return results + self._ingest_files(files, collection, progress, workers, ray, on_page)

    def recover(self) -> list[str]:
        """Remove the documents a crashed write left ``pending`` or
        ``deleting`` (index first, then graph); returns their ids. Assumes
        no other process is writing to the same stores."""
        stale = self.graph.documents(statuses=("pending", "deleting"))
        for doc in stale:
            self._remove(doc.doc_id)
        return [d.doc_id for d in stale]

    def ingest_file(self, path: Path, collection: str = DEFAULT_COLLECTION,
                    on_page: PageProgress | None = None) -> IngestResult:
        """Ingest one file into ``collection`` in this process; never raises
        for bad input (see :meth:`ingest`). A document of the same bytes that
        a crash left unfinished is removed and written afresh. ``on_page(done,
        total)`` is called as a PDF's pages are parsed.

        Raises :class:`~pilar.errors.ConfigError` for a bad setting."""
        pages = None if on_page is None else (lambda _path, done, total: on_page(done, total))
        return self._ingest_files([Path(path)], collection, None, 0, on_page=pages)[0]

    def _ingest_files(self, files: list[Path], collection: str, progress: Progress | None,
                      workers: int | None, ray: str | None = None,
                      on_page: FilePageProgress | None = None) -> list[IngestResult]:
        if workers is None:
            workers = self.settings.workers if self.settings.workers is not None \
                else default_workers()
        started: dict[int, tuple[float, float]] = {}  # file -> (start, read seconds)
        # files that need no parse: their result, or how to get it once the
        # files before them are stored
        settled: dict[int, IngestResult | Callable[[], IngestResult]] = {}

        # bytes parsed in this call -> the file: a later copy waits for it
        in_flight: dict[str, int] = {}

        def same_as_earlier(i: int, sha256: str, first: int, t0: float) -> IngestResult:
            """The result of file ``i``, a copy of file ``first`` of this call
            (settled once ``first`` is stored, as if ingested after it)."""
            path = files[i]
            existing = self.graph.find_by_sha256(sha256)
            if existing is None or existing.status != "ready":
                return IngestResult(str(path), "failed",
                                    reason=f"same bytes as {files[first]}, which failed",
                                    seconds=time.perf_counter() - t0)
            return known(path, existing, t0)

        def known(path: Path, existing, t0: float) -> IngestResult:
            # same bytes at a new path: recorded as another source
            status = "new_source" if self.graph.add_source(existing.doc_id,
                                                           str(path.resolve())) \
                else "unchanged"
            return IngestResult(str(path), status, existing.doc_id, existing.n_pages,
                                reason=existing.uri if status == "new_source" else None,
                                seconds=time.perf_counter() - t0)

        def jobs():
            for i, path in enumerate(files):
                t0 = time.perf_counter()
                try:
                    data = read_source(path, self.settings)
                    probe = new_document(data, "", "")
                    if probe.sha256 in in_flight:
                        settled[i] = (lambda i=i, sha=probe.sha256, t0=t0:
                                      same_as_earlier(i, sha, in_flight[sha], t0))
                        yield i, None, ""
                        continue
                    existing = self.graph.find_by_sha256(probe.sha256)
                    if existing is not None and existing.status == "ready":
                        settled[i] = known(path, existing, t0)
                        yield i, None, ""
                        continue
                    if existing is not None:
                        self._remove(existing.doc_id)
                except ConfigError:
                    raise
                except Exception as exc:  # noqa: BLE001 - one bad file must not stop the batch
                    reason = f"store write failed: {exc}" if isinstance(exc, sqlite3.Error) \
                        else failure_reason(exc)
                    settled[i] = IngestResult(str(path), "failed", reason=reason,
                                              seconds=time.perf_counter() - t0)
                    yield i, None, ""
                    continue
                started[i] = (t0, time.perf_counter() - t0)
                in_flight[probe.sha256] = i
                yield i, data, str(path.resolve())

        results: list[IngestResult] = []

        def emit(done: list[IngestResult]) -> None:
            for r in done:
                results.append(r)
                if progress:
                    progress(r)

        if ray:
            from pilar.scale_out import ray_parse_many

            parsed = ray_parse_many(jobs(), self.settings, ray)
        else:
            pages = None if on_page is None else \
                (lambda i, done, total: on_page(str(files[i]), done, total))
            parsed = parse_many(jobs(), self.settings, workers, on_page=pages)
        batch: list[tuple[int, ParsedDocument, dict[str, float]]] = []
        for item in parsed:
            if item.vectors is not None:  # embedded with the parse (Ray)
                item.document.document.collection = collection
                emit(self._store_batch([(item.tag, item.document, item.stages)], files,
                                       started, [item.vectors]))
                continue
            if item.document is not None:
                item.document.document.collection = collection
                batch.append((item.tag, item.document, item.stages))
                if sum(len(d.units) for _, d, _ in batch) >= EMBED_BATCH_UNITS:
                    emit(self._store_batch(batch, files, started))
                    batch = []
                continue
            emit(self._store_batch(batch, files, started))  # keeps input order
            batch = []
            if item.tag in settled:
                r = settled.pop(item.tag)
                emit([r() if callable(r) else r])
            else:
                t0, read = started.pop(item.tag)
                emit([IngestResult(str(files[item.tag]), "failed", reason=item.reason,
                                   seconds=time.perf_counter() - t0,
                                   stages={"read": read, **item.stages})])
        emit(self._store_batch(batch, files, started))
        return results

    def _store_batch(self, batch: list[tuple[int, ParsedDocument, dict[str, float]]],
                     files: list[Path], started: dict[int, tuple[float, float]],
                     vectors: list | None = None) -> list[IngestResult]:
        """Embed the documents of ``batch`` together (unless their
        ``vectors`` are given), then store each as its own unit; one result
        per document, in batch order."""
        if not batch:
            return []
        docs = [d for _, d, _ in batch]
        error, embed = None, 0.0
        if vectors is None:
            t = time.perf_counter()
            try:
                vectors = page_vectors(self.embedder, docs)
            except ConfigError:  # the embedding model: every document would fail alike
                raise
            except Exception as exc:  # noqa: BLE001 - reported per document below
                vectors, error = [None] * len(docs), failure_reason(exc)
            embed = time.perf_counter() - t
        weight = [len(d.units) + len(d.pages) for d in docs]
        out = []
        for (i, parsed, stages), vecs, w in zip(batch, vectors, weight):
            t0, read = started.pop(i)
            stages = {"read": read, "embed": embed * w / sum(weight), **stages}
            shown = str(files[i])
            if error is not None:
                out.append(IngestResult(shown, "failed", reason=error, stages=stages,
                                        seconds=time.perf_counter() - t0))
                continue
            t = time.perf_counter()
            try:
                replaced = self._store(parsed, *vecs)
            except ConfigError:
                raise
            except Exception as exc:  # noqa: BLE001 - one bad file must not stop the batch
                reason = f"store write failed: {exc}" if isinstance(exc, sqlite3.Error) \
                    else failure_reason(exc)
                out.append(IngestResult(shown, "failed", reason=reason, stages=stages,
                                        seconds=time.perf_counter() - t0))
                continue
            stages["write"] = time.perf_counter() - t
            out.append(IngestResult(
                shown, "replaced" if replaced else "ingested", parsed.document.doc_id,
                len(parsed.pages), len(parsed.supports), len(parsed.units),
                n_assertions=len(parsed.assertions), n_entities=len(parsed.entities),
                warnings=list(parsed.warnings), stages=stages,
                seconds=time.perf_counter() - t0))
        return out

    def _store(self, parsed: ParsedDocument, vectors: list[np.ndarray],
               unit_ids: list[list[str | None]]) -> bool:
        """Write one parsed document and its page vectors (see
        :func:`~pilar.retrieval.embeddings.page_vectors`) to index and graph
        as one unit (see the module docstring); returns True when it replaced
        an older version at the same uri. On failure what was written is
        removed and the error raised."""
        self._drop_page_cache()
        doc = parsed.document
        known = [d for d in self.graph.find_by_uri(doc.uri) if d.doc_id != doc.doc_id]
        # new bytes at a known path: a document also found elsewhere only
        # loses this path; one found nowhere else is replaced
        for d in known:
            if len(d.sources) > 1:
                self.graph.remove_source(d.doc_id, doc.uri)
        old = [d.doc_id for d in known if len(d.sources) <= 1]
        parsed.same_as = link_across(parsed, self.graph, self.settings)
        # on the embedded store the index transaction encloses everything
        # (one SQLite transaction); on servers each step commits on its own
        with self.index.transaction():
            self.graph.begin_document(doc)                       # 1. pending
            try:
                self.index.delete_document(doc.doc_id)           # leftovers of a crash
                self.index.add_pages(parsed.pages, vectors, unit_ids, collection=doc.collection,
                                     sections=page_sections(parsed))   # 2. index
                self.graph.write_document(parsed, replaces=old)  # 3. graph, ready
            except BaseException:
                self._remove(doc.doc_id, quiet=True)
                raise
            for doc_id in old:                                   # 4. old versions
                self._remove(doc_id)
        return bool(known)

    def _remove(self, doc_id: str, quiet: bool = False) -> bool:
        """Remove a document: hide it (``deleting``), drop its index pages,
        then its graph rows; False if the graph did not hold it. With
        ``quiet`` (cleaning up after a failed write) errors are swallowed:
        what is left stays hidden and the next ingest removes it."""
        try:
            self.graph.set_status(doc_id, "deleting")
            self.index.delete_document(doc_id)
            return self.graph.delete_document(doc_id)
        except Exception:  # noqa: BLE001 - only with quiet; the first error is the one to report
            if not quiet:
                raise
            return False

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

        Raises ``ValueError`` for an empty question, one longer than
        ``PILAR_MAX_QUERY_CHARS`` characters, a budget under
        :data:`~pilar.config.MIN_BUDGET` tokens, ``k < 1`` or an unknown
        profile; ``TypeError`` when ``budget`` or ``k`` is not an int (or the
        scopes not lists of strings); :class:`~pilar.errors.EmptyStoreError`
        (before loading any model) when the store holds no pages;
        :class:`~pilar.errors.ConfigError` when the embedding or reranker
        model cannot be loaded."""
        if not isinstance(question, str) or not question.strip():
            raise ValueError("the question is empty")
        limit = self.settings.max_query_chars
        if len(question) > limit:
            raise ValueError(f"the question is {len(question):,} characters, over the "
                             f"{limit:,}-character limit (PILAR_MAX_QUERY_CHARS)")
        budget, k = self._budget_k(budget, k)
        scope = _scope(collections, doc_ids)
        retriever = self.retriever(profile)
        # the page count is read until the store is seen holding pages, and
        # again only when a search finds nothing (one round trip less per search)
        if not self._held_pages and self.index.count() == 0:
            raise EmptyStoreError(_EMPTY)
        self._held_pages = True
        pages = retriever.search(question, k, None if scope.unlimited else scope)
        if not pages and self.index.count() == 0:
            self._held_pages = False
            raise EmptyStoreError(_EMPTY)
        return SearchResult(question=question, pages=pages, packet=self.pack(question, pages, budget))

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

        Raises :class:`~pilar.errors.ReaderNotConfiguredError` when no model
        server is configured, :class:`~pilar.errors.LLMError` kinds when the
        server fails (timeout, 5xx, refusal, empty reply), and what
        :meth:`search` raises for bad arguments."""
        self.reader  # noqa: B018 - no reader: say so before retrieving
        budget = self.settings.budget if budget is None else budget
        hit = self.search(question, budget=self._text_budget(budget), k=k, profile=profile,
                          collections=collections, doc_ids=doc_ids)
        return self._read(question, hit.packet, budget, stream)

    def _text_budget(self, budget: int) -> int:
        """The packet's share of ``budget`` (tokens): all of it, or without
        ``PILAR_READER_IMAGE_SHARE`` when crops go to a VLM reader."""
        s = self.settings
        if s.reader_images and isinstance(budget, int):
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

    def _budget_k(self, budget: int | None, k: int | None) -> tuple[int, int]:
        """``(budget, k)`` with settings' defaults, checked as :meth:`search` says."""
        budget = self.settings.budget if budget is None else budget
        k = self.settings.top_k if k is None else k
        for name, value in (("budget", budget), ("k", k)):
            if isinstance(value, bool) or not isinstance(value, int):
                raise TypeError(f"{name} must be an integer, got {value!r}")
        if budget < MIN_BUDGET:
            raise ValueError(f"budget must be at least {MIN_BUDGET} tokens, got {budget}")
        if k < 1:
            raise ValueError(f"k must be at least 1, got {k}")
        return budget, k

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
        budget, k = self._budget_k(budget, k)
        scope = _scope(collections, None)
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
                          profile=profile or self.settings.profile, progress=progress,
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
            selected = self.selector.select(question, anchors, [p.score for p in pages])
            tables = tables_of(u for _, u in anchors)
        s = self.settings
        return assemble(question, pages, evidence, selected, self.tokens, budget,
                        base_share=s.base_share, max_expanded=s.max_expanded_pages,
                        item_tokens=s.item_tokens, block_tokens=s.block_tokens,
                        use_units=use_units, tables=tables,
                        whole_table_share=s.whole_table_share, neighbours=s.neighbour_rows)

    def _page_material(self, page_ids: list[str]) -> dict[str, tuple[list[Support], list[Unit]]]:
        """``{page_id: (supports, units)}`` in document order, from an LRU of
        :data:`PAGE_CACHE` pages: units are query-independent and may be
        cached per page (Tessera §3.2), and pages are content-addressed (a
        doc_id is the SHA-256 of the bytes), so a cached page stays valid.
        Ingesting or deleting through this object empties the cache. Safe
        under threads (the store reads run outside the cache's lock)."""
        cache = self._pages
        with self._pages_lock:
            out = {pid: cache[pid] for pid in page_ids if pid in cache}
        missing = [pid for pid in dict.fromkeys(page_ids) if pid not in out]
        if missing:
            supports = self.graph.supports_on_pages(missing)
            units = self.graph.units_on_pages(missing)
            for pid in missing:
                out[pid] = (supports.get(pid, []), units.get(pid, []))
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

    def entities(self, query: str, limit: int = 20) -> list[Entity]:
        """Entities whose name or aliases share words with ``query`` (full-text,
        best first, at most ``limit``)."""
        return self.graph.entity_candidates(query, limit)

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
        ``collections`` when given."""
        return self.graph.documents(collections=collections)

    def delete(self, doc_id: str) -> bool:
        """Delete a document from index and graph; False if it was not stored."""
        self._drop_page_cache()
        with self.index.transaction():
            return self._remove(doc_id)

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
        (:meth:`pilar.graph.GraphStore.cypher`); raises
        :class:`~pilar.errors.ConfigError` when the graph is not on Neo4j."""
        return self.graph.cypher(query, params, timeout=timeout, row_cap=row_cap)
