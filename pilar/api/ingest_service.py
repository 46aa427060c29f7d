"""The ingest worker: a process beside the API (``pilar worker``; ``pilar
serve`` starts one) that runs the queued ingest jobs of the job store
(:class:`pilar.api.jobs.JobStore`) through the pipeline of ``pilar
ingest`` (:meth:`pilar.Pilar.ingest_job`: parses in worker processes within
the parse budgets, several documents per embedding call, this process the
one writer), so the API's process never parses nor embeds documents and
searches keep their cores.

Scheduling is fair between callers (their API keys): the worker takes a
*slice* of a job, its next files, from the caller after the last one served
(round-robin, :meth:`JobStore.claim`). While another caller has work
waiting a slice is :data:`FAIR_FILES` files; otherwise it is the job's
next :data:`MAX_SLICE` files, and it stops taking new files as soon as
another caller's job arrives (the files begun are finished, the others go
back to the queue). A caller's own jobs run oldest first.

The worker holds the job it runs with a lease it renews every third of
``PILAR_JOB_LEASE_SECONDS``; when it dies any worker on the same job store
resumes the job once the lease has run out (:meth:`JobStore.claim`), and a
worker whose lease was taken stops at once, writing nothing more to the
job. A cancel (:meth:`JobStore.cancel`) of the job running is seen within
:data:`WATCH_SECONDS`: the parses in progress are stopped and nothing of
their files is written; the files stored before stay whole (each document
is written as one unit, :mod:`pilar.writes`). The worker runs at the
niceness ``PILAR_INGEST_NICE`` (its parse processes inherit it), so the
API's searches are served first when both want the CPU. Started by a
server it dies with it (``PR_SET_PDEATHSIG``), and on SIGTERM it stops the
slice in progress and puts the job back in the queue.
"""

from __future__ import annotations

import logging
import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

from pilar import Pilar
from pilar.api.job_stores import open_job_store
from pilar.api.jobs import (CANCELLED, STORED, JobStore, LeaseLost, counts, discard_unstored,
                            ended, now)
from pilar.api.models import ENDED, Job
from pilar.api.paths import ServerPaths
from pilar.errors import IngestCancelled, PilarError
from pilar.model import IngestResult
from pilar.writes import discard_upload

log = logging.getLogger("pilar.worker")

FAIR_FILES = 4
"""Files of one slice while another caller has work waiting (two parse workers' worth in flight)."""
MAX_SLICE = 256
"""Files of one job taken in one slice at most (when nobody else waits)."""
POLL_SECONDS = 0.5
"""Seconds between two looks at the queue when it is empty."""
WATCH_SECONDS = 0.3
"""Seconds between two looks at the running job's state (a cancel)."""


class IngestService:
    """Runs the ingest jobs of ``store`` on ``pilar`` (see the module
    docstring); :meth:`serve` until ``stopped`` is set, :meth:`step` one slice."""

    def __init__(self, pilar: Pilar, store: JobStore):
        self.pilar = pilar
        self.store = store
        paths = ServerPaths.of(pilar.settings)
        self.uploads, self.shown = paths.uploads, paths.shown
        self.stopped = threading.Event()
        self._last: str | None = None  # the owner served last

    def serve(self) -> None:
        """Run slices until :attr:`stopped` is set (idle: a look at the queue
        every :data:`POLL_SECONDS`). Documents a dead worker left half-written
        are removed when their file is taken up again (another worker may be
        writing now: there is no sweep of the stores here)."""
        while not self.stopped.is_set():
            if not self.step():
                self.stopped.wait(POLL_SECONDS)

    def step(self) -> bool:
        """Run one slice of the next job; False when no job waits."""
        claimed = self.store.claim(self._last)
        if claimed is None:
            return False
        job, owner, paths = claimed
        self._last = owner
        try:
            self._slice(job, owner, paths)
        except LeaseLost:  # another worker resumed it: it is theirs now
            log.warning("ingest job %s: lease lost to another worker", job.job_id)
        except PilarError as exc:  # a bad setting: every file would fail alike
            self._fail(job.job_id, str(exc).splitlines()[0])
        except Exception as exc:  # noqa: BLE001 - the worker must outlive any job
            log.exception("ingest job %s failed", job.job_id)
            self._fail(job.job_id, f"unexpected {type(exc).__name__}")
        return True

    def _slice(self, job: Job, owner: str, paths: list[Path]) -> None:
        others = self.store.waiting(besides=owner)
        todo = [i for i, f in enumerate(job.files) if f.status in ("queued", "running")]
        todo = todo[:FAIR_FILES if others else MAX_SLICE]

        def begin(j: Job) -> None:
            for i in todo:
                j.files[i].status = "running"
            j.counts = counts(j.files)

        if self.store.update(job.job_id, begin, hold=True).state == "cancelling":
            self._finish(job.job_id, todo, cancelled=True)
            return
        stop, cancel, done = threading.Event(), threading.Event(), threading.Event()
        stored = 0

        def progress(result: IngestResult) -> None:
            nonlocal stored
            i = todo[stored]
            stored += 1
            record = self.store.update(job.job_id, lambda j: self._record(j, i, result, paths[i]),
                                       hold=True)
            if result.status not in STORED and paths[i].is_relative_to(self.uploads):
                discard_upload(paths[i].parent, self.uploads)
            if record.state == "cancelling":
                cancel.set()

        lost = threading.Event()

        def watch() -> None:  # a cancel or a shutdown; the lease; another caller's job
            renewed = time.monotonic()
            while not done.wait(WATCH_SECONDS):
                if time.monotonic() - renewed >= self.store.lease_seconds / 3:
                    renewed = time.monotonic()
                    if not self.store.renew(job.job_id):
                        lost.set()
                if lost.is_set() or self.stopped.is_set() or \
                        self.store.state(job.job_id) == "cancelling":
                    cancel.set()
                    return
                if not others and not stop.is_set() and self.store.waiting(besides=owner):
                    stop.set()

        watcher = threading.Thread(target=watch, name="pilar-job-watch", daemon=True)
        watcher.start()
        try:
            self.pilar.ingest_job([paths[i] for i in todo], job.collection, progress,
                                  stop=stop, cancel=cancel)
        except IngestCancelled:
            pass
        finally:
            done.set()
            watcher.join()
        if lost.is_set():
            raise LeaseLost(job.job_id)
        self._finish(job.job_id, todo, cancelled=cancel.is_set() and not self.stopped.is_set())

    def _record(self, job: Job, i: int, result: IngestResult, path: Path) -> None:
        """File ``i``'s ``result`` into ``job``; its reason as the client may
        read it: for ``new_source`` the stored document's path as shown,
        otherwise with the server ``path`` replaced by the file's name."""
        entry = job.files[i]
        entry.status, entry.doc_id = result.status, result.doc_id
        entry.reason = result.reason
        if result.reason is not None:
            entry.reason = self.shown(result.reason) if result.status == "new_source" else \
                result.reason.replace(str(path.resolve()), entry.name).replace(str(path),
                                                                               entry.name)
        entry.n_pages, entry.warnings = result.n_pages, list(result.warnings)
        entry.seconds, entry.finished_at = round(result.seconds, 3), now()
        job.counts = counts(job.files)

    def _finish(self, job_id: str, todo: list[int], cancelled: bool) -> None:
        """End a slice: files of it not reached go back to the queue (or are
        ``cancelled`` with the job); a job with no file left ends."""

        def change(job: Job) -> None:
            for i in todo:
                if job.files[i].status == "running":
                    job.files[i].status = "queued"
            if cancelled or job.state == "cancelling":
                for f in job.files:
                    if f.status == "queued":
                        f.status, f.reason, f.finished_at = "cancelled", CANCELLED, now()
                job.enter("cancelled")
            elif not any(f.status == "queued" for f in job.files):
                job.enter(*ended(job.files))
            elif self.stopped.is_set():
                job.enter("queued")  # shut down: another start of a worker goes on
            job.counts = counts(job.files)

        job = self.store.update(job_id, change, hold=True)
        if job.state in ENDED:
            discard_unstored(job, self.uploads)

    def _fail(self, job_id: str, reason: str) -> None:
        def change(job: Job) -> None:
            for f in job.files:
                if f.status in ("queued", "running"):
                    f.status, f.reason = "failed", reason
            job.counts = counts(job.files)
            job.enter("failed", reason)

        try:
            discard_unstored(self.store.update(job_id, change, hold=True), self.uploads)
        except LeaseLost:  # another worker took it up meanwhile: theirs to end
            log.warning("ingest job %s: lease lost to another worker", job_id)


def run_worker(parent: int | None = None) -> None:
    """The ``pilar worker`` process: settings from the environment, jobs
    from the configured stack's job store (:func:`~pilar.api.job_stores.open_job_store`:
    Neo4j's ``Job`` nodes, or ``PILAR_HOME/jobs.sqlite``), until SIGTERM or SIGINT. With
    ``parent`` (the pid of the server that started it) it dies with that
    process. Raises :class:`~pilar.errors.ConfigError` for a bad setting."""
    if parent is not None:
        from pilar.ingest.parallel import die_with_parent

        die_with_parent()
        if os.getppid() != parent:  # the server died before the line above
            return
    pilar = Pilar()
    nice = pilar.settings.ingest_nice
    if nice:
        os.nice(nice)
    store = open_job_store(pilar.settings)
    service = IngestService(pilar, store)
    for sig in (signal.SIGTERM, signal.SIGINT):
        signal.signal(sig, lambda *_: service.stopped.set())
    try:
        service.serve()
    finally:
        store.close()
        pilar.close()


def start_worker(home: Path) -> subprocess.Popen:
    """Start ``pilar worker`` for the store in ``home`` as a child of this
    process (which it dies with; other settings from this environment).
    Call from a thread that lives as long as the process (Linux ties the
    parent-death signal to it): the server's main thread."""
    env = {**os.environ, "PILAR_HOME": str(home)}
    return subprocess.Popen([sys.executable, "-m", "pilar", "worker", "--parent",
                             str(os.getpid())], env=env)


def stop_worker(proc: subprocess.Popen, timeout: float = 30.0) -> None:
    """SIGTERM the worker ``proc`` (it puts its job back in the queue), then
    SIGKILL it if it has not ended within ``timeout`` seconds."""
    if proc.poll() is not None:
        return
    proc.terminate()
    try:
        proc.wait(timeout)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()

