"""Parsing many files in worker processes, within budgets, results in input order.

:func:`parse_many` runs :func:`pilar.ingest.parse` (pages, supports,
tables, units, then assertions and entities) for a stream of jobs in a pool
of worker processes while the caller, the one writer, embeds and stores what
comes back. At most ``2 * workers`` jobs are in flight, or up to
``8 * workers`` while their files add up to less than :data:`AHEAD_BYTES`,
so a long file list never sits parsed in memory, yet workers go on with the
small files behind a long one (results come back in input order) and while
the caller embeds. A worker only parses: it never touches the
caller's stores, model or threads.

Budgets. Each file's parse may add at most ``settings.parse_memory_bytes``
to its worker and take at most ``settings.parse_seconds`` plus
``settings.parse_page_seconds`` per page of a PDF (a 1,600-page manual
is not a bomb); past either the file fails with one line (``over the 1 GiB
parse memory limit (PILAR_PARSE_MEMORY_BYTES)``, ``over the 120 s + 2 s per
PDF page parse deadline (PILAR_PARSE_SECONDS)``), its worker is replaced
and the batch goes on.

- Workers start small: they are forked from Python's *forkserver*, a
  process started once per run of pilar from a fresh interpreter that has
  imported only the parsers (:data:`PRELOAD`, about 170 MB resident), never
  from the caller, which may hold PyTorch and an
  embedding model (about 1 GB resident and 4.5 GB of address space) and
  threads whose locks a fork would copy held. A worker shares nothing with
  the caller but the pipes to it, so the sum of the resident sizes of the
  caller's process tree is honest (no pages of the model counted twice).
- Memory: a parse may add the budget to the worker's resident size. Two
  checks hold it there. Between the pages of a PDF the worker compares its
  resident size with the one it had at the parse's start; and before the
  parse and again at each page it caps its address space (soft
  ``RLIMIT_AS``) at what it has mapped at that moment plus the budget
  (:func:`_limit_memory`), so the kernel refuses a mapping past it in
  Python and in C (MuPDF, ONNX) alike: one page (or a whole HTML file)
  can never map more than the budget, however it runs away inside C code.
  The address space is re-capped at each page rather than held at the
  start's because it grows far faster than what is resident over a long
  PDF: glibc keeps the heap's high-water mark mapped after its freed pages
  are handed back (:mod:`pilar.ingest.heap`), so a 1,600-page PDF mapped
  1.65 GB more to end 300 MB more resident, and a cap held from the start
  refused it at 337 MB resident under a 1 GiB budget. So the worker's
  resident size stays within the budget at every page boundary and within
  twice the budget (plus what was mapped but untouched, about 0.5 GB in a
  worker: library text, reserved arenas) inside a page. A parse that meets
  either check (``MemoryError``, MuPDF's failed ``malloc``,
  :func:`~pilar.ingest.limits.out_of_memory`) makes the worker exit with
  :data:`OVER_MEMORY`, which the parent reports as the memory line; pebble
  starts a fresh worker in its place; the limit is lifted again before a
  result is sent back. A C library that aborts instead of failing an
  allocation kills its worker: that file fails as ``parser process died
  (SIGABRT)``.
- Time: the worker arms ``alarm(2)`` for the deadline with SIGALRM's
  default action (no Python handler runs, so the kernel ends the process
  even while a parse is stuck inside PyMuPDF's C code) and re-arms it once
  a PDF is open and its page count known (``on_page(0, total)``); the pool
  (pebble) reports the job's process ended by SIGALRM and starts another.

Workers die with their parent: the forkserver asks the kernel for SIGKILL
when the process that started it dies, and each worker when the forkserver
dies (``PR_SET_PDEATHSIG`` both, :func:`die_with_parent`;
:mod:`pilar.ingest.forkserver_init`), so a SIGKILL of the caller (an OOM
killer, a container runtime) takes the workers with it at once, even one
busy inside C code. The thread that starts the first worker counts as the
forkserver's parent (Linux ties the signal to it): the caller's main
thread, the server's ingest thread, a Ray worker's task thread, all of
which live as long as their process. pebble's locks are taken with
timeouts, so a worker killed while holding one blocks no other.

The caller's script must guard its entry point (``if __name__ ==
"__main__":``), as with any spawning start method: the forkserver imports
the main module of the caller in each new worker.
"""

from __future__ import annotations

import ctypes
import gc
import math
import multiprocessing
import os
import resource
import signal
import threading
import time
from collections import deque
from collections.abc import Callable, Iterable, Iterator
from concurrent.futures import Future
from concurrent.futures.process import BrokenProcessPool
from typing import Generic, TypeVar

from pebble import ProcessExpired, ProcessPool

from pilar.config import Settings
from pilar.errors import ConfigError, IngestCancelled, IngestError, PilarError
from pilar.ingest.heap import mapped, resident
from pilar.ingest.limits import human_bytes, out_of_memory
from pilar.model import ParsedDocument

T = TypeVar("T")


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


def parse_job(data: bytes, uri: str, doc_id: str | None, settings: Settings,
              on_page: Callable[[int, int], None] | None = None,
              strict_memory: bool = False
              ) -> tuple[ParsedDocument | None, str | None, dict[str, float]]:
    """Parse one file's bytes as document ``doc_id`` (None: its id in
    ``default``): ``(document, None, stages)`` or ``(None, reason, stages)``;
    ``on_page(done, total)`` as a PDF's pages are parsed. Raises only
    :class:`ConfigError` (a bad setting: every file would fail alike) and,
    with ``strict_memory`` (in a worker within its memory budget),
    ``MemoryError`` for an allocation refused, Python's or MuPDF's."""
    from pilar.ingest import parse

    stages: dict[str, float] = {}
    t = time.perf_counter()
    try:
        return parse(data, uri=uri, doc_id=doc_id, settings=settings, on_page=on_page,
                     timings=stages), None, stages
    except ConfigError:
        raise
    except Exception as exc:  # noqa: BLE001 - one bad file must not stop the batch
        if strict_memory and out_of_memory(exc):
            raise MemoryError from None
        stages.setdefault("parse", time.perf_counter() - t)
        return None, failure_reason(exc), stages


def parse_many(jobs: Iterable[tuple[T, bytes | None, str, str | None]], settings: Settings,
               workers: int, on_page: Callable[[T, int, int], None] | None = None,
               cancel: threading.Event | None = None) -> Iterator[Parsed[T]]:
    """Parse ``(tag, data, uri, doc_id)`` jobs (:func:`parse_job`), yielding
    one :class:`Parsed` per job in input order; a job with ``data=None`` is
    passed through unparsed (the caller settled it, e.g. unchanged bytes).
    ``workers < 1`` parses in this process, without budgets; otherwise in
    ``workers`` processes (see the module docstring) with at most
    ``2 * workers`` jobs submitted ahead of the one being yielded, or
    ``8 * workers`` while their bytes add up to less than :data:`AHEAD_BYTES`.
    ``on_page(tag, done, total)`` reports a PDF's pages as they are parsed,
    in this process or in a worker (whose reports come back over a pipe, at
    most every :data:`PAGE_REPORT_SECONDS` and on the last page, and are
    passed on while the caller waits for the next result). Raises
    :class:`ConfigError` (a bad setting) from a parse, or when no worker
    could start (:data:`WORKERS_BROKEN`), after which no further job is
    started and the workers are stopped. When ``cancel`` is set (checked
    before each job is taken and every :data:`PAGE_REPORT_SECONDS` while a
    result is awaited) raises :class:`~pilar.errors.IngestCancelled` and
    stops the workers, ending the parses in progress.
    """
    if workers < 1:
        for tag, data, uri, doc_id in jobs:
            _check(cancel)
            if data is None:
                yield Parsed(tag, None, None, {})
                continue
            pages = None if on_page is None else \
                (lambda done, total, tag=tag: on_page(tag, done, total))
            yield Parsed(tag, *parse_job(data, uri, doc_id, settings, pages))
        return
    ctx = worker_context()
    pages = _PageReports(ctx, on_page) if on_page is not None else None
    pending: deque[tuple[T, Future | None, int]] = deque()  # (tag, future, bytes)
    held = 0  # bytes of the files in ``pending``
    pool = ProcessPool(max_workers=workers, context=ctx, initializer=_start_worker,
                       initargs=(pages.queue if pages else None,))

    def full() -> bool:
        n = len(pending)
        return n > 2 * workers and (n > 8 * workers or held >= AHEAD_BYTES)

    def take() -> Parsed[T]:
        nonlocal held
        tag, future, size = pending.popleft()
        held -= size
        return _result(tag, future, settings, pages, cancel)

    try:
        for seq, (tag, data, uri, doc_id) in enumerate(jobs):
            _check(cancel)
            if pages:
                pages.tags[seq] = tag
            size = len(data) if data is not None else 0
            held += size
            pending.append((tag, pool.schedule(_worker_job, (seq, data, uri, doc_id, settings))
                            if data is not None else None, size))
            while full() or (pending and pending[0][1] is None):
                yield take()
        while pending:
            yield take()
    finally:  # done, a bad setting, Ctrl-C or the caller stopped early
        pool.stop()
        pool.join()


PRELOAD = ["pilar.ingest.forkserver_init", "pilar.ingest", "pilar.ingest.html",
           "pilar.ingest.pdf", "pilar.ingest.parallel"]
"""Modules the forkserver imports once: the first makes it die with its
parent (:mod:`pilar.ingest.forkserver_init`), the others load the parsers
every worker starts with."""

WORKERS_BROKEN = ("parse worker processes could not start (a script that calls "
                  "Pilar.ingest needs an `if __name__ == \"__main__\":` guard: each "
                  "worker imports the script's module)")
"""The error of a run whose workers all died before taking a job."""

AHEAD_BYTES = 32 * 2**20
"""Bytes of files that may be in flight (parsing or parsed, waiting for the
caller) once more than ``2 * workers`` jobs are: up to ``8 * workers`` small
files keep the workers busy behind a long one and while the caller embeds
(in the born-digital PDF bench corpus, 29 files, a 23-page PDF in the middle
left one of two workers idle for about 2.5 s)."""

OVER_MEMORY = 86
"""Exit status of a worker whose parse met its memory budget."""

PAGE_REPORT_SECONDS = 0.2
"""Least time between two page reports of one worker (its last page is always sent)."""

GC_THRESHOLD = 10_000
"""Allocations between two young-generation collections in a worker (Python's
default is 700): on the PDF bench corpus 38 collections instead of 1,627,
0.1 s of collector time instead of 0.4 s (parse output the same)."""

PR_SET_PDEATHSIG = 1
"""prctl(2) option: the signal this process gets when its parent dies."""

_page_queue = None
"""In a worker process: where its page reports go (None: nobody listens)."""


def worker_context():
    """The multiprocessing context workers start from: the forkserver,
    preloading :data:`PRELOAD` (see the module docstring)."""
    ctx = multiprocessing.get_context("forkserver")
    ctx.set_forkserver_preload(PRELOAD)
    return ctx


def die_with_parent() -> None:
    """Ask Linux to SIGKILL this process when its parent (the thread that
    started it) dies (``PR_SET_PDEATHSIG``), and exit at once if a
    multiprocessing parent is gone already. Elsewhere than Linux only the
    second check is made."""
    try:
        ctypes.CDLL(None, use_errno=True).prctl(PR_SET_PDEATHSIG, signal.SIGKILL)
    except (OSError, AttributeError):  # not Linux
        pass
    parent = multiprocessing.parent_process()
    if parent is not None and not parent.is_alive():
        os._exit(1)


def _start_worker(queue) -> None:
    """Worker initializer: die with the parent, keep the page-report queue,
    collect young objects every :data:`GC_THRESHOLD` allocations and leave
    Ctrl-C (SIGINT, sent to the whole process group) to the writing process,
    which stops the run."""
    global _page_queue
    die_with_parent()
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    gc.freeze()  # what the forkserver imported is never collected: fewer pages touched
    gc.set_threshold(GC_THRESHOLD)  # a parse makes millions of short-lived dicts
    _page_queue = queue


def _limit_memory(budget: int | None) -> None:
    """Let this process map at most ``budget`` bytes more from now: its
    address space (soft ``RLIMIT_AS``) is capped at what it has mapped now
    plus ``budget``. ``None`` lifts the limit (back to the hard one)."""
    _, hard = resource.getrlimit(resource.RLIMIT_AS)
    soft = hard if budget is None else mapped() + budget
    if hard != resource.RLIM_INFINITY:
        soft = min(soft, hard)
    resource.setrlimit(resource.RLIMIT_AS, (soft, hard))


def _worker_job(seq: int, data: bytes, uri: str, doc_id: str | None,
                settings: Settings):
    """:func:`parse_job` in a worker within its budgets (see the module
    docstring), its pages reported as ``(seq, done, total)``. A parse over the
    memory budget ends the worker with :data:`OVER_MEMORY`; past the
    deadline the kernel's SIGALRM ends it, in Python or C code alike."""
    queue = _page_queue
    last = 0.0
    budget = settings.parse_memory_bytes
    start = resident()

    def report(done: int, total: int) -> None:
        nonlocal last
        if done == 0:  # a PDF of ``total`` pages: its deadline grows by theirs
            _arm_deadline(settings.parse_seconds + total * settings.parse_page_seconds)
        elif resident() - start > budget:
            raise MemoryError
        _limit_memory(budget)  # the next page maps at most the budget more
        now = time.monotonic()
        if queue is not None and (done >= total or now - last >= PAGE_REPORT_SECONDS):
            last = now
            queue.put((seq, done, total))

    _arm_deadline(settings.parse_seconds)
    _limit_memory(budget)
    try:
        return parse_job(data, uri, doc_id, settings, report, strict_memory=True)
    except MemoryError:
        os._exit(OVER_MEMORY)  # the heap may be in any state: a fresh worker takes over
    finally:
        _limit_memory(None)
        signal.alarm(0)


def _arm_deadline(seconds: float) -> None:
    """Have the kernel end this process ``seconds`` from now (SIGALRM, its
    default action: no Python handler, so a parse inside C code ends too)."""
    signal.signal(signal.SIGALRM, signal.SIG_DFL)
    signal.alarm(max(1, math.ceil(seconds)))


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

    def wait(self, future: Future, cancel: threading.Event | None = None) -> None:
        from concurrent.futures import wait

        while True:
            finished = future.done()  # a job's reports are all sent before its result
            self.drain()
            if finished:
                return
            _check(cancel)
            wait([future], timeout=PAGE_REPORT_SECONDS)


def _check(cancel: threading.Event | None) -> None:
    """Raise :class:`IngestCancelled` when ``cancel`` is set."""
    if cancel is not None and cancel.is_set():
        raise IngestCancelled("the ingest was cancelled")


def _await(future: Future, cancel: threading.Event | None) -> None:
    """Wait for ``future``, raising :class:`IngestCancelled` once ``cancel`` is set."""
    from concurrent.futures import wait

    while cancel is not None and not future.done():
        _check(cancel)
        wait([future], timeout=PAGE_REPORT_SECONDS)


def budget_reason(exc: BaseException, settings: Settings) -> str:
    """The one-line reason of a job whose worker ended before answering
    (``exc`` from its future: pebble's ``ProcessExpired`` with the exit
    status: SIGALRM is the deadline, :data:`OVER_MEMORY` the memory budget)."""
    if isinstance(exc, ProcessExpired) and exc.exitcode == -signal.SIGALRM:
        per_page = f" + {settings.parse_page_seconds:g} s per PDF page" \
            if settings.parse_page_seconds else ""
        return (f"over the {settings.parse_seconds:g} s{per_page} parse deadline "
                "(PILAR_PARSE_SECONDS)")
    if isinstance(exc, ProcessExpired) and exc.exitcode == OVER_MEMORY:
        return (f"over the {human_bytes(settings.parse_memory_bytes)} parse memory limit "
                "(PILAR_PARSE_MEMORY_BYTES)")
    if isinstance(exc, ProcessExpired) and exc.exitcode is not None and exc.exitcode < 0:
        return f"parser process died ({signal.Signals(-exc.exitcode).name})"
    return f"parser process failed: {failure_reason(exc)}"


def _result(tag, future: Future | None, settings: Settings,
            pages: _PageReports | None = None, cancel: threading.Event | None = None) -> Parsed:
    if future is None:
        return Parsed(tag, None, None, {})
    if pages is not None:
        pages.wait(future, cancel)
    _await(future, cancel)
    try:
        return Parsed(tag, *future.result())
    except ConfigError:
        raise
    except BrokenProcessPool:  # no worker got as far as a job: every file would fail alike
        raise ConfigError(WORKERS_BROKEN) from None
    except Exception as exc:  # noqa: BLE001 - the worker was stopped or died
        return Parsed(tag, None, budget_reason(exc, settings), {})
