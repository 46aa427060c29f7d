"""Parsing many files in worker processes, results in input order.

:func:`parse_many` runs :func:`pilar.ingest.parse` (pages, supports,
tables, units, then assertions and entities) for a stream of jobs in a pool
of worker processes while the caller, the one writer, embeds and stores what
comes back. At most ``2 * workers`` jobs are in flight, so a long file list
never sits parsed in memory. Workers are forked (POSIX), so they start in
milliseconds with the parsers already imported and the caller's script needs
no ``__main__`` guard; a worker only parses: it never touches the caller's
stores, model or threads. A worker freezes what it inherits (``gc.freeze``)
before its first job: its cycle collector never finalises the caller's
objects, such as an SQLite connection of another thread, whose finaliser
would wait on a lock that thread held at the fork.
"""

from __future__ import annotations

import gc
import multiprocessing
import os
import signal
import time
from collections import deque
from collections.abc import Callable, Iterable, Iterator
from concurrent.futures import Future, ProcessPoolExecutor
from typing import Generic, TypeVar

from pilar.config import Settings
from pilar.errors import ConfigError, IngestError, PilarError
from pilar.model import ParsedDocument

T = TypeVar("T")


def default_workers() -> int:
    """The CPU cores this process may use."""
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # not on Linux
        return os.cpu_count() or 1


def failure_reason(exc: BaseException) -> str:
    """The one-line reason an ingest failed with ``exc`` (no stack trace)."""
    if isinstance(exc, IngestError):
        return exc.reason
    if isinstance(exc, PilarError):
        return str(exc)
    if isinstance(exc, (MemoryError, RecursionError)):
        return f"too large or deep to parse ({type(exc).__name__})"
    first = str(exc).splitlines()[0] if str(exc) else ""
    return f"unexpected {type(exc).__name__}: {first}".strip(": ")


class Parsed(Generic[T]):
    """What :func:`parse_many` yields per job: the caller's ``tag``, the
    ``document`` (None when it failed or was not parsed), the failure
    ``reason``, ``stages`` (seconds: ``parse``, ``graph``) and, when the
    embed stage ran with the parse (on Ray), the page ``vectors`` (as
    :func:`pilar.retrieval.embeddings.page_vectors` returns for one document)."""

    __slots__ = ("tag", "document", "reason", "stages", "vectors")

    def __init__(self, tag: T, document: ParsedDocument | None, reason: str | None,
                 stages: dict[str, float], vectors=None):
        self.tag, self.document, self.reason, self.stages = tag, document, reason, stages
        self.vectors = vectors


def parse_job(data: bytes, uri: str, settings: Settings,
              on_page: Callable[[int, int], None] | None = None
              ) -> tuple[ParsedDocument | None, str | None, dict[str, float]]:
    """Parse one file's bytes: ``(document, None, stages)`` or ``(None,
    reason, stages)``. Runs in a worker process (or in process; ``on_page``
    only then). Raises only :class:`ConfigError` (a bad setting: every file
    would fail alike)."""
    from pilar.ingest import parse

    stages: dict[str, float] = {}
    t = time.perf_counter()
    try:
        return parse(data, uri=uri, settings=settings, on_page=on_page,
                     timings=stages), None, stages
    except ConfigError:
        raise
    except Exception as exc:  # noqa: BLE001 - one bad file must not stop the batch
        stages.setdefault("parse", time.perf_counter() - t)
        return None, failure_reason(exc), stages


def parse_many(jobs: Iterable[tuple[T, bytes | None, str]], settings: Settings,
               workers: int, on_page: Callable[[T, int, int], None] | None = None
               ) -> Iterator[Parsed[T]]:
    """Parse ``(tag, data, uri)`` jobs, yielding one :class:`Parsed` per job
    in input order; a job with ``data=None`` is passed through unparsed
    (the caller settled it, e.g. unchanged bytes). ``workers < 1`` parses
    in this process; otherwise in ``workers`` processes with at most
    ``2 * workers`` jobs submitted ahead of the one being yielded.
    ``on_page(tag, done, total)`` reports a PDF's pages as they are parsed,
    in this process or in a worker (whose reports come back over a pipe,
    at most every :data:`PAGE_REPORT_SECONDS` and on the last page, and
    are passed on while the caller waits for the next result). Raises
    :class:`ConfigError` (a bad setting) from a parse, after which no
    further job is started.
    """
    if workers < 1:
        for tag, data, uri in jobs:
            if data is None:
                yield Parsed(tag, None, None, {})
                continue
            pages = None if on_page is None else \
                (lambda done, total, tag=tag: on_page(tag, done, total))
            yield Parsed(tag, *parse_job(data, uri, settings, pages))
        return
    import pilar.ingest.html  # noqa: F401 - imported once, before the fork
    import pilar.ingest.pdf  # noqa: F401

    ctx = multiprocessing.get_context("fork")
    pages = _PageReports(ctx, on_page) if on_page is not None else None
    pending: deque[tuple[T, Future | None]] = deque()
    with ProcessPoolExecutor(max_workers=workers, mp_context=ctx, initializer=_start_worker,
                             initargs=(pages.queue if pages else None,)) as pool:
        for seq, (tag, data, uri) in enumerate(jobs):
            if pages:
                pages.tags[seq] = tag
            pending.append((tag, pool.submit(_worker_job, seq, data, uri, settings)
                            if data is not None else None))
            while len(pending) > 2 * workers or (pending and pending[0][1] is None):
                yield _result(*pending.popleft(), pages)
        while pending:
            yield _result(*pending.popleft(), pages)


PAGE_REPORT_SECONDS = 0.2
"""Least time between two page reports of one worker (its last page is always sent)."""

_page_queue = None
"""In a worker process: where its page reports go (None: nobody listens)."""


def _start_worker(queue) -> None:
    """Worker initializer: freeze what the fork inherited (see the module
    docstring), keep the page-report queue and leave Ctrl-C (SIGINT, sent to
    the whole process group) to the writing process, which stops the run."""
    global _page_queue
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    gc.freeze()
    _page_queue = queue


def _worker_job(seq: int, data: bytes, uri: str, settings: Settings):
    """:func:`parse_job` in a worker, its pages reported as ``(seq, done, total)``."""
    queue = _page_queue
    if queue is None:
        return parse_job(data, uri, settings)
    last = 0.0

    def report(done: int, total: int) -> None:
        nonlocal last
        now = time.monotonic()
        if done >= total or now - last >= PAGE_REPORT_SECONDS:
            last = now
            queue.put((seq, done, total))

    return parse_job(data, uri, settings, report)


class _PageReports:
    """The parent's end of the workers' page reports: ``tags`` maps a job's
    sequence number to the caller's tag; :meth:`wait` passes reports on to
    ``on_page`` until a job's future is done."""

    def __init__(self, ctx, on_page: Callable):
        self.queue = ctx.SimpleQueue()
        self.on_page = on_page
        self.tags: dict[int, object] = {}

    def drain(self) -> None:
        while not self.queue.empty():
            seq, done, total = self.queue.get()
            if seq in self.tags:
                self.on_page(self.tags[seq], done, total)

    def wait(self, future: Future) -> None:
        from concurrent.futures import wait

        while True:
            finished = future.done()  # a job's reports are all sent before its result
            self.drain()
            if finished:
                return
            wait([future], timeout=PAGE_REPORT_SECONDS)


def _result(tag, future: Future | None, pages: _PageReports | None = None) -> Parsed:
    if future is None:
        return Parsed(tag, None, None, {})
    if pages is not None:
        pages.wait(future)
    try:
        return Parsed(tag, *future.result())
    except ConfigError:
        raise
    except Exception as exc:  # noqa: BLE001 - a worker died (e.g. killed for memory)
        return Parsed(tag, None, f"parser process failed: {failure_reason(exc)}", {})
