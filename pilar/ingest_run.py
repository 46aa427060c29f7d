"""One ingest run over a list of files (:class:`IngestRun`; :class:`Ingests`
gives :class:`pilar.Pilar` its ingest methods): read, parse (in worker processes or
on Ray), embed several documents per call, store each document as its own
unit of work, the documents of one embedding call written together
(:meth:`pilar.writes.DocumentWriter.store_many`, on one writer thread while
the next call embeds: the writes stay one at a time, in order); one
:class:`~pilar.model.IngestResult` per file, in input order.

A file's ``status``: ``ingested``; ``unchanged`` (its bytes are stored in
the collection from the same path); ``replaced`` (new bytes at a known path:
the old document removed); ``new_source`` (the same bytes from another path,
``reason`` naming the stored one); ``failed`` (with a one-line ``reason``).
Each file is parsed within the parse budgets (``PILAR_PARSE_MEMORY_BYTES``,
``PILAR_PARSE_SECONDS``; :mod:`pilar.ingest.parallel`); a document belongs
to one collection.

Bytes already stored in the run's collection are settled without a parse
(``unchanged`` or ``new_source``); the same bytes in another collection are
that collection's own document and change nothing here. A copy of a file
parsed earlier in the same run waits for that file and is settled as if
ingested after it. A file that fails gets
``status="failed"`` and a one-line reason; the rest go on. A
:class:`~pilar.errors.ConfigError` (every file would fail alike) stops the
run, and whatever was stored stays. A run may be told to stop taking new
files (``stop``: the files begun are finished, the rest get no result) or
to stop at once (``cancel``: :class:`~pilar.errors.IngestCancelled`, the
documents stored before stay whole, the ones being parsed or embedded are
not written).
"""

from __future__ import annotations

import sqlite3
import threading
import time
from collections.abc import Callable, Iterable, Iterator
from concurrent.futures import Future, ThreadPoolExecutor
from pathlib import Path

from pilar.config import Settings
from pilar.errors import ConfigError, IngestCancelled, IngestError
from pilar.ingest import PageProgress, document_id, new_document, read_source
from pilar.ingest.files import select_files
from pilar.ingest.parallel import failure_reason, parse_many
from pilar.model import (DEFAULT_COLLECTION, Document, IngestResult, ParsedDocument,
                         check_collection)
from pilar.parts import usable_cores
from pilar.retrieval.embeddings import Embedder, page_vectors
from pilar.writes import DocumentWriter

Progress = Callable[[IngestResult], None]
"""``progress(result)``: called with each file's result as it is settled."""
FilePageProgress = Callable[[str, int, int], None]
"""``on_page(path, done, total)``: pages parsed of one file."""
EMBED_BATCH_UNITS = 1024
"""Units of parsed documents gathered before one embedding call at ingest."""

Batch = list[tuple[int, ParsedDocument, dict[str, float], tuple | None]]
"""Parsed documents waiting for one embedding call and one write: ``(file
index, document, stages, vectors)``, ``vectors`` (as
:func:`~pilar.retrieval.embeddings.page_vectors` gives them) when embedded
with the parse (Ray), else None."""


def store_failure(exc: BaseException) -> str:
    """The one-line reason a file failed with ``exc`` while it was read or
    stored (a SQLite error is a failed store write)."""
    return f"store write failed: {exc}" if isinstance(exc, sqlite3.Error) \
        else failure_reason(exc)


class IngestRun:
    """Ingest ``files`` into ``collection`` through ``writer`` (see the
    module docstring); :meth:`run` does it once. Raises ``ValueError`` for
    a ``collection`` that is no collection name
    (:func:`~pilar.model.check_collection`; the empty one included)."""

    def __init__(self, writer: DocumentWriter, embedder: Embedder, settings: Settings,
                 files: list[Path], collection: str):
        check_collection(collection)
        self.writer = writer
        self.graph = writer.graph
        self.embedder = embedder
        self.settings = settings
        self.files = files
        self.collection = collection
        self.started: dict[int, tuple[float, float]] = {}  # file -> (start, read seconds)
        # files that need no parse: their result, or how to get it once the
        # files before them are stored
        self.settled: dict[int, IngestResult | Callable[[], IngestResult]] = {}
        # bytes parsed in this run -> the file: a later copy waits for it
        self.in_flight: dict[str, int] = {}
        self.stop: threading.Event | None = None

    def run(self, progress: Progress | None = None, workers: int | None = None,
            ray: str | None = None, on_page: FilePageProgress | None = None,
            stop: threading.Event | None = None, cancel: threading.Event | None = None
            ) -> list[IngestResult]:
        """Parse in ``workers`` processes (default ``settings.workers``, else
        the CPU cores; 0 = in this process) or, with ``ray`` (a cluster
        address or ``auto``), parse and embed as Ray tasks; embed batches of
        :data:`EMBED_BATCH_UNITS` units; store each document. ``progress``
        is called with each result; ``on_page(path, done, total)`` as a
        PDF's pages are parsed (in this process or a worker; not on Ray). Raises
        :class:`~pilar.errors.ConfigError` for a bad setting, when no parse
        worker can start (a calling script without an ``if __name__ ==
        "__main__":`` guard) and for an unreachable Ray cluster.

        Once ``stop`` is set no further file is read: the files begun are
        finished and the results cover only the files up to them (a prefix
        of :attr:`files`). Once ``cancel`` is set the run raises
        :class:`~pilar.errors.IngestCancelled` before the next embedding or
        store (and, in worker processes, while a parse is awaited, whose
        workers are stopped): what ``progress`` was given is stored whole,
        nothing else was written."""
        self.stop = stop
        if workers is None:
            workers = self.settings.workers if self.settings.workers is not None \
                else usable_cores()
        files = self.files
        results: list[IngestResult] = []

        def emit(done: list[IngestResult]) -> None:
            for r in done:
                results.append(r)
                if progress:
                    progress(r)

        if ray:
            from pilar.scale_out import ray_parse_many

            parsed = ray_parse_many(self._jobs(), self.settings, ray)
        else:
            pages = None if on_page is None else \
                (lambda i, done, total: on_page(str(files[i]), done, total))
            parsed = parse_many(self._jobs(), self.settings, workers, on_page=pages,
                                cancel=cancel)

        # a batch's write runs on one writer thread while the next batch is
        # embedded; the writes stay one at a time and in order
        writes = ThreadPoolExecutor(1, thread_name_prefix="pilar-write")
        pending: list[Future] = []

        def flush() -> None:
            while pending:
                emit(pending.pop().result())

        def store(batch: Batch) -> None:
            if batch and cancel is not None and cancel.is_set():
                raise IngestCancelled("the ingest was cancelled")
            if batch:
                embedded = self._embed_batch(batch)
                flush()
                pending.append(writes.submit(self._write_batch, embedded))

        try:
            batch: Batch = []
            for item in parsed:
                if item.document is not None:  # with its vectors when embedded with the parse
                    item.document.document.collection = self.collection
                    batch.append((item.tag, item.document, item.stages, item.vectors))
                    if sum(len(d.units) for _, d, _, _ in batch) >= EMBED_BATCH_UNITS:
                        store(batch)
                        batch = []
                    continue
                store(batch)  # keeps input order
                batch = []
                flush()
                if item.tag in self.settled:
                    r = self.settled.pop(item.tag)
                    emit([r() if callable(r) else r])
                else:
                    t0, read = self.started.pop(item.tag)
                    emit([IngestResult(str(files[item.tag]), "failed", reason=item.reason,
                                       seconds=time.perf_counter() - t0,
                                       stages={"read": read, **item.stages})])
            store(batch)
        finally:  # a write begun ends whole and is reported, also when the run stops
            try:
                flush()
            finally:
                writes.shutdown()
        return results

    def _jobs(self) -> Iterator[tuple[int, bytes | None, str, str | None]]:
        """``(file index, bytes, uri, doc_id)`` to parse; ``bytes`` is None
        for a file settled without a parse (its result in ``self.settled``)."""
        for i, path in enumerate(self.files):
            if self.stop is not None and self.stop.is_set():
                return
            t0 = time.perf_counter()
            try:
                data = read_source(path, self.settings)
                if not data:  # each empty file says so, not "same bytes as" the first one
                    raise IngestError("empty file", str(path))
                probe = new_document(data, "", "")
                if probe.sha256 in self.in_flight:
                    self.settled[i] = (lambda i=i, sha=probe.sha256, t0=t0:
                                       self._same_as_earlier(i, sha, self.in_flight[sha], t0))
                    yield i, None, "", None
                    continue
                existing = self.graph.find_by_sha256(probe.sha256, self.collection)
                if existing is not None and existing.status == "ready":
                    self.settled[i] = self._known(path, existing, t0)
                    yield i, None, "", None
                    continue
                if existing is not None:
                    self.writer.remove(existing.doc_id)
                doc_id = self._doc_id(probe.sha256)
            except ConfigError:
                raise
            except Exception as exc:  # noqa: BLE001 - one bad file must not stop the batch
                self.settled[i] = IngestResult(str(path), "failed", reason=store_failure(exc),
                                               seconds=time.perf_counter() - t0)
                yield i, None, "", None
                continue
            self.started[i] = (t0, time.perf_counter() - t0)
            self.in_flight[probe.sha256] = i
            yield i, data, str(path.resolve()), doc_id

    def _doc_id(self, sha256: str) -> str:
        """The id new bytes ``sha256`` get in this run's collection
        (:func:`~pilar.ingest.document_id`); the keyed form when a store
        written before documents were per collection holds the plain id in
        another collection."""
        doc_id = document_id(sha256, self.collection)
        held = self.graph.documents([doc_id], statuses=None)
        if held and held[0].collection != self.collection:
            return document_id(sha256, self.collection, keyed=True)
        return doc_id

    def _same_as_earlier(self, i: int, sha256: str, first: int, t0: float) -> IngestResult:
        """The result of file ``i``, a copy of file ``first`` of this run
        (settled once ``first`` is stored, as if ingested after it)."""
        path = self.files[i]
        existing = self.graph.find_by_sha256(sha256, self.collection)
        if existing is None or existing.status != "ready":
            return IngestResult(str(path), "failed",
                                reason=f"same bytes as {self.files[first]}, which failed",
                                seconds=time.perf_counter() - t0)
        return self._known(path, existing, t0)

    def _known(self, path: Path, existing: Document, t0: float) -> IngestResult:
        """File ``path`` holds the stored bytes of ``existing``: recorded as
        another source of it (``new_source``) unless it is one already."""
        status = "new_source" if self.graph.add_source(existing.doc_id, str(path.resolve())) \
            else "unchanged"
        return IngestResult(str(path), status, existing.doc_id, existing.n_pages,
                            reason=existing.uri if status == "new_source" else None,
                            seconds=time.perf_counter() - t0)

    def _embed_batch(self, batch: Batch) -> tuple:
        """Embed the documents of ``batch`` that come without vectors
        together: what :meth:`_write_batch` stores (the embedding's seconds
        shared among the documents by their units and pages). Raises
        :class:`~pilar.errors.ConfigError` when the embedding model cannot
        work; another failure fails the documents embedded."""
        docs = [d for _, d, _, _ in batch]
        vectors = [v for _, _, _, v in batch]
        todo_embed = [k for k, v in enumerate(vectors) if v is None]
        error, embed = None, 0.0
        if todo_embed:
            t = time.perf_counter()
            try:
                for k, v in zip(todo_embed, page_vectors(self.embedder,
                                                         [docs[k] for k in todo_embed])):
                    vectors[k] = v
            except ConfigError:  # the embedding model: every document would fail alike
                raise
            except Exception as exc:  # noqa: BLE001 - reported per document below
                error = failure_reason(exc)
            embed = time.perf_counter() - t
        weight = [len(d.units) + len(d.pages) for d in docs]
        out: list[IngestResult | None] = [None] * len(batch)
        todo = []  # (position in batch, stages) of the documents to store
        embedded = sum(weight[k] for k in todo_embed) or 1
        for k, ((i, parsed, stages, _), w) in enumerate(zip(batch, weight)):
            t0, read = self.started.pop(i)
            stages = {"read": read, **stages}
            if k in todo_embed:
                stages["embed"] = embed * w / embedded
            if error is not None and k in todo_embed:
                out[k] = IngestResult(str(self.files[i]), "failed", reason=error, stages=stages,
                                      seconds=time.perf_counter() - t0)
            else:
                todo.append((k, t0, stages))
        return batch, vectors, weight, out, todo

    def _write_batch(self, embedded: tuple) -> list[IngestResult]:
        """Store the documents :meth:`_embed_batch` embedded, all together,
        each as its own unit (:meth:`~pilar.writes.DocumentWriter.store_many`);
        one result per document, in batch order, the write's seconds shared
        among them by their units and pages."""
        batch, vectors, weight, out, todo = embedded
        t = time.perf_counter()
        outcomes = self.writer.store_many([(batch[k][1], *vectors[k]) for k, _, _ in todo])
        write = time.perf_counter() - t
        stored = sum(weight[k] for k, _, _ in todo)
        for (k, t0, stages), outcome in zip(todo, outcomes):
            shown, parsed = str(self.files[batch[k][0]]), batch[k][1]
            if isinstance(outcome, BaseException):
                out[k] = IngestResult(shown, "failed", reason=store_failure(outcome),
                                      stages=stages, seconds=time.perf_counter() - t0)
                continue
            stages["write"] = write * weight[k] / stored
            out[k] = IngestResult(
                shown, "replaced" if outcome else "ingested", parsed.document.doc_id,
                len(parsed.pages), len(parsed.supports), len(parsed.units),
                n_assertions=len(parsed.assertions), n_entities=len(parsed.entities),
                warnings=list(parsed.warnings), stages=stages,
                seconds=time.perf_counter() - t0)
        return out


class Ingests:
    """The ingest methods of :class:`pilar.Pilar` (a mixin over its
    ``writer``, ``embedder`` and ``settings``): runs of :class:`IngestRun`."""

    writer: DocumentWriter
    embedder: Embedder
    settings: Settings

    def ingest(self, paths: Iterable[str | Path] | str | Path,
               progress: Progress | None = None,
               collection: str = DEFAULT_COLLECTION, workers: int | None = None,
               ray: str | None = None,
               on_page: FilePageProgress | None = None) -> list[IngestResult]:
        """Ingest files, folders or globs into ``collection``: one
        :class:`IngestResult` per file, in input order (the statuses of the
        module docstring), ``progress(result)`` called as each is stored and
        ``on_page(path, done, total)`` as a PDF's pages are parsed. Files in
        folders that are not documents come first as ``"skipped"``
        (:func:`~pilar.ingest.files.select_files`; not passed to
        ``progress``); documents a crash left unfinished are removed first
        (:meth:`recover`). Parsed in ``workers`` processes (default
        ``settings.workers``, else the CPU cores; 0 = in this process) or,
        with ``ray`` (a cluster address or ``auto``; extra ``pilar[ray]``),
        parsed and embedded as Ray tasks (:func:`pilar.scale_out.ray_parse_many`).

        Raises ``ValueError`` for a ``collection`` that is no collection name
        (:func:`~pilar.model.check_collection`; the empty one included),
        before anything is read, and :class:`~pilar.errors.ConfigError` as
        :meth:`IngestRun.run` does (every file would fail alike: the ingest
        stops, whatever was stored stays)."""
        check_collection(collection)
        if isinstance(paths, (str, Path)):
            paths = [paths]
        self.recover()
        files, skipped = select_files(paths)
        results = [IngestResult(str(f), "skipped", reason=why) for f, why in skipped]
        return results + IngestRun(self.writer, self.embedder, self.settings, files,
                                   collection).run(progress, workers, ray, on_page)

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
        total)`` as a PDF's pages are parsed. Raises ``ValueError`` for a
        ``collection`` that is no collection name and
        :class:`~pilar.errors.ConfigError` for a bad setting."""
        pages = None if on_page is None else (lambda _path, done, total: on_page(done, total))
        return IngestRun(self.writer, self.embedder, self.settings, [Path(path)],
                         collection).run(None, 1, on_page=pages)[0]

    def ingest_job(self, files: list[Path], collection: str, progress: Progress | None = None,
                   stop: threading.Event | None = None,
                   cancel: threading.Event | None = None) -> list[IngestResult]:
        """Ingest ``files`` (exactly as listed: no folder walked, none
        dropped) into ``collection`` as :meth:`ingest` does, for the server's
        ingest worker (:mod:`pilar.api.ingest_service`): always in worker
        processes (at least one), or with ``PILAR_RAY_ADDRESS`` set as Ray
        tasks on that cluster. Once ``stop`` is set no further file is begun
        (the results are a prefix of ``files``); once ``cancel`` is set
        :class:`~pilar.errors.IngestCancelled` is raised (what ``progress``
        was given is stored whole, nothing else written). Raises as
        :meth:`ingest_file` does."""
        return IngestRun(self.writer, self.embedder, self.settings, list(files), collection).run(
            progress, self.settings.workers or None, self.settings.ray_address or None,
            stop=stop, cancel=cancel)
