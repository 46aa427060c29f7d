"""Job records and the queue they make, in a :class:`JobStore` shared by the
API's processes and the ingest workers: on the embedded default one SQLite
file (``PILAR_HOME/jobs.sqlite``, :mod:`pilar.api.job_store_sqlite`); with
the graph on Neo4j, ``Job`` nodes there (:mod:`pilar.api.job_store_neo4j`),
so replicas with homes of their own, on any host, share one queue
(:func:`pilar.api.job_stores.open_job_store` picks by ``PILAR_GRAPH``).

``POST /v1/documents`` streams the uploaded files into
``PILAR_UPLOAD_DIR/<job>/`` (:mod:`pilar.api.uploads`) or takes
server-side paths, and records a ``queued`` job (:meth:`JobStore.create`):
the API never parses. The ingest worker, a process beside the API
(:mod:`pilar.api.ingest_service`, ``pilar worker``), claims jobs from this
store fairly between callers (:meth:`JobStore.claim`: round-robin over
the callers with work waiting, a caller's jobs oldest first) and records
each file's outcome as it is stored, so a client may disconnect and come
back (``GET /v1/jobs/{id}``, SSE events). Every change of a record is one
transaction (:meth:`JobStore.update`), so the API's cancel
(:meth:`JobStore.cancel`) and the worker's progress never overwrite each
other.

A worker holds the job it runs with a lease (``PILAR_JOB_LEASE_SECONDS``)
that it renews while it works (:meth:`JobStore.renew`); a worker that dies
(a crash, a killed server, a lost host) stops renewing, and once the lease
has run out any worker of the same job store takes the job up from its
first file not done (:meth:`JobStore.claim`). Every file's outcome is
recorded by its lease holder only (:class:`LeaseLost` otherwise), and a
document is stored whole or not at all, so a resumed job ingests each file
once: a file the dead worker stored but had not recorded is found stored
(``unchanged``), one it left half-written on a two-store stack is removed
and written afresh (:class:`~pilar.ingest_run.IngestRun`).

An uploaded file that is not stored (it failed, or the job stopped before
it) is removed; a stored one stays as its document's source until the
document is deleted (:func:`discard_unstored`). A job's record names its
files as the client gave them and never shows a server path; the paths
are kept beside it for the worker. ``POST /v1/eval`` queues an
evaluation in a thread of the API process (:class:`EvalRunner`): it only
searches. When a server starts, the evaluations left unfinished by a
process that is gone are marked ``failed`` with a reason
(:meth:`JobStore.fail_orphans`); ingest jobs wait for a worker.
"""

from __future__ import annotations

import json
import logging
import os
import queue
import socket
import threading
import uuid
from abc import ABC, abstractmethod
from collections.abc import Callable
from pathlib import Path

from pilar.api.models import Job, JobFile, JobProgress, JobState, now
from pilar.errors import IngestCancelled, PilarError
from pilar.writes import discard_upload

log = logging.getLogger("pilar.api")

RESTARTED = "the server stopped before this evaluation finished"
CANCELLED = "the job was cancelled before this file was stored"
STORED = ("ingested", "replaced", "unchanged", "new_source")
"""File statuses of a job whose bytes are a stored document's source."""

def counts(files: list[JobFile]) -> dict[str, int]:
    """How many of ``files`` have each status."""
    out: dict[str, int] = {}
    for f in files:
        out[f.status] = out.get(f.status, 0) + 1
    return out


def ended(files: list[JobFile]) -> tuple[JobState, str | None]:
    """``(state, reason)`` of an ingest job whose files were all tried:
    ``failed`` when none of them went in (the reason is the one file's, or
    says how many failed), else ``done``."""
    if files and all(f.status == "failed" for f in files):
        return "failed", files[0].reason if len(files) == 1 else \
            f"none of the {len(files)} files was ingested"
    return "done", None


class LeaseLost(Exception):
    """This worker's lease on a job ran out and another worker holds it now."""


HOST = socket.gethostname()

Claimed = tuple[Job, str, list[Path]]
"""What :meth:`JobStore.claim` gives: ``(job, owner, its files' server paths)``."""


class JobStore(ABC):
    """Job records (:class:`~pilar.api.models.Job`) shared by the server's
    processes and its ingest workers, each change one transaction. Thread-safe.
    Beside each record: its ``owner`` (who submitted it:
    :func:`pilar.api.ratelimit.caller_id`, a digest, never shown), the server
    paths of its files, the process that runs it (an evaluation's) and the
    lease of the worker running it (``lease_seconds`` long, held by
    :attr:`holder`: host, process and a random part, so ids never collide
    across hosts). On SQLite (:class:`~pilar.api.job_store_sqlite.SqliteJobStore`)
    and on Neo4j (:class:`~pilar.api.job_store_neo4j.Neo4jJobStore`)."""

    def __init__(self, lease_seconds: float = 30.0):
        self.lease_seconds = lease_seconds
        self.holder = f"{HOST}:{os.getpid()}:{uuid.uuid4().hex[:8]}"

    @abstractmethod
    def create(self, job: Job, owner: str, paths: list[Path] = ()) -> Job:
        """Record the new ``job`` of ``owner`` (its files' server ``paths``,
        in order), entering its state (``queued``)."""

    @abstractmethod
    def get(self, job_id: str) -> Job | None:
        """The record of ``job_id``, None when there is none."""

    @abstractmethod
    def state(self, job_id: str) -> JobState | None:
        """The state of ``job_id`` (one small read), None when there is none."""

    @abstractmethod
    def update(self, job_id: str, change: Callable[[Job], None], claim: bool = False,
               hold: bool = False) -> Job:
        """Apply ``change`` to the stored record of ``job_id`` and save it,
        in one transaction; with ``claim`` this process becomes the job's
        runner (an evaluation's); with ``hold`` only while this worker holds
        the job's lease, which is renewed (:class:`LeaseLost` otherwise,
        nothing changed). ``change`` may be called again on a fresh copy when
        the store retries the transaction. Returns the saved record; raises
        ``KeyError`` for an unknown job."""

    @abstractmethod
    def renew(self, job_id: str) -> bool:
        """Extend this worker's lease on ``job_id`` by :attr:`lease_seconds`;
        False when it holds the lease no more (another worker took the job up)."""

    @abstractmethod
    def owned(self, owner: str, states: list[str] | None = None) -> list[Job]:
        """The jobs of ``owner`` (in ``states`` when given), newest first."""

    @abstractmethod
    def claim(self, after: str | None) -> Claimed | None:
        """The ingest job to work on next, for this worker: round-robin over
        the owners with runnable jobs (queued; running or cancelling held by
        this worker between two slices, or by a worker whose lease has run
        out: :func:`claimable`), taking the first owner after ``after`` in
        their order (wrapping round), and that owner's oldest such job
        (:func:`pick`), leased to this worker (:func:`take`). Atomic: two
        workers never hold one job. ``(job, owner, paths)``, or None when no
        job waits."""

    @abstractmethod
    def waiting(self, besides: str) -> bool:
        """Whether an owner other than ``besides`` has an ingest job queued or running."""

    @abstractmethod
    def unfinished(self, kind: str, states: tuple[str, ...]) -> list[tuple[str, str]]:
        """``(job_id, runner)`` of the ``kind`` jobs in ``states``; ``runner``
        is ``host:pid`` of the process that created or ran the job (:func:`runner`)."""

    @abstractmethod
    def close(self) -> None:
        """Release the store's connection."""

    def cancel(self, job_id: str) -> Job:
        """Cancel ``job_id``: a queued job is ``cancelled`` at once (its files
        ``cancelled``), a running one ``cancelling`` (its worker stops it
        and marks it ``cancelled``); an ended or cancelling job is left as
        it is. Returns the record; raises ``KeyError`` for an unknown job."""

        def change(job: Job) -> None:
            if job.state == "queued":
                for f in job.files:
                    f.status, f.reason, f.finished_at = "cancelled", CANCELLED, now()
                job.counts = counts(job.files)
                job.enter("cancelled")
            elif job.state == "running":
                job.enter("cancelling")

        return self.update(job_id, change)

    def fail_orphans(self, kind: str, states: tuple[str, ...]) -> list[Job]:
        """Mark ``failed`` the ``kind`` jobs in ``states`` run by processes of
        this host that no longer run (a restart or a crash: evaluations run in
        the server's process; another host's are left to it); returns them."""
        failed = []
        for job_id, ran_by in self.unfinished(kind, states):
            host, _, pid = ran_by.rpartition(":")
            if host != HOST or not pid.isdigit() or \
                    (int(pid) != os.getpid() and _alive(int(pid))):
                continue

            def change(job: Job) -> None:
                if job.state not in states:  # moved on meanwhile
                    return
                for f in job.files:
                    if f.status in ("queued", "running"):
                        f.status, f.reason = "failed", "not ingested: the server stopped"
                job.counts = counts(job.files)
                job.enter("failed", RESTARTED)

            job = self.update(job_id, change)
            if job.state == "failed":
                failed.append(job)
        return failed


def runner() -> str:
    """``host:pid`` of this process (a job's runner, :meth:`JobStore.unfinished`)."""
    return f"{HOST}:{os.getpid()}"


def claimable(state: str, holder: str, lease_until: float, me: str, at: float) -> bool:
    """Whether worker ``me`` may claim an ingest job in ``state`` leased by
    ``holder`` until ``lease_until`` (Unix seconds), at time ``at`` (the same clock)."""
    return state == "queued" or (state in ("running", "cancelling") and
                                 (holder == me or lease_until < at))


def pick(rows: list[tuple[str, str]], after: str | None) -> tuple[str, str]:
    """``(job_id, owner)`` to claim among the claimable ``rows`` (``(job_id,
    owner)``, oldest first, at least one): the oldest job of the first owner
    after ``after`` in the owners' order, wrapping round."""
    first: dict[str, str] = {}
    for job_id, owner in rows:
        first.setdefault(owner, job_id)
    owners = sorted(first)
    owner = next((o for o in owners if after is not None and o > after), owners[0])
    return first[owner], owner


def take(job: Job, holder: str, me: str) -> None:
    """Make ``job`` (leased by ``holder``) the claimed job of worker ``me``: a
    queued job enters ``running``; one taken from a worker whose lease ran
    out resumes: the files that worker had begun are queued again."""
    if job.state == "queued":
        job.enter("running")
    elif holder != me:  # its worker's lease ran out: resumed here
        log.warning("ingest job %s resumed: the lease of %s ran out", job.job_id, holder)
        for f in job.files:
            if f.status == "running":
                f.status = "queued"
        job.counts = counts(job.files)


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def new_job(collection: str, job_id: str | None = None, files: list[str] = ()) -> Job:
    """A fresh queued ingest job into ``collection`` of the files named
    ``files`` (as the client gave them); a new id unless given
    (:func:`upload_folder`'s)."""
    stamp = now()
    job = Job(job_id=job_id or uuid.uuid4().hex, state="queued", collection=collection,
              created_at=stamp, updated_at=stamp, files=[JobFile(name=n) for n in files])
    job.counts = counts(job.files)
    return job


def upload_folder(uploads: Path) -> tuple[str, Path]:
    """A fresh job id and the folder below ``uploads`` its files go to (not created)."""
    job_id = uuid.uuid4().hex
    return job_id, uploads / job_id


def discard_unstored(job: Job, uploads: Path) -> None:
    """Remove the uploaded bytes (below ``uploads``) of ``job``'s files that
    are not a stored document's source (:data:`STORED`); a job of server
    paths has none."""
    for i, f in enumerate(job.files):
        if f.status not in STORED:
            discard_upload(uploads / job.job_id / f"{i + 1:03d}", uploads)


class EvalRunner:
    """Runs queued evaluation jobs one after another in a daemon thread of
    the API process (an evaluation searches; it never parses)."""

    def __init__(self, store: JobStore):
        self.store = store
        self._queue: queue.Queue[tuple[Job, Callable] | None] = queue.Queue()
        self._thread = threading.Thread(target=self._run, name="pilar-eval", daemon=True)

    def start(self) -> None:
        self._thread.start()

    def stop(self, timeout: float = 5.0) -> None:
        """Ask the thread to stop after its current job; an unfinished job is
        marked failed at the next start."""
        self._queue.put(None)
        self._thread.join(timeout)

    def submit(self, owner: str, collections: list[str] | None, total: int,
               run: Callable[[Callable[[int, int], None]], object]) -> Job:
        """Queue an evaluation of ``owner`` reading ``collections`` (None =
        all) of ``total`` questions: ``run(progress)`` returns the
        :class:`~pilar.eval.run.EvalReport` and calls ``progress(done, total)``
        after each question; the job's record follows it, and a cancel
        stops it at the next question."""
        stamp = now()
        job = Job(job_id=uuid.uuid4().hex, kind="eval", state="queued", collection="",
                  collections=collections, created_at=stamp, updated_at=stamp,
                  progress=JobProgress(total=total))
        self.store.create(job, owner)
        self._queue.put((job, run))
        return job

    def _run(self) -> None:
        while True:
            item = self._queue.get()
            if item is None:
                return
            job, run = item
            try:
                self._evaluate(job.job_id, run)
            except IngestCancelled:
                self.store.update(job.job_id, lambda j: j.enter("cancelled"))
            except PilarError as exc:  # e.g. an evaluation on an emptied store
                reason = str(exc).splitlines()[0]
                self.store.update(job.job_id, lambda j: j.enter("failed", reason))
            except Exception as exc:  # noqa: BLE001 - the thread must outlive any job
                log.exception("eval job %s failed", job.job_id)
                reason = f"unexpected {type(exc).__name__}"
                self.store.update(job.job_id, lambda j: j.enter("failed", reason))

    def _evaluate(self, job_id: str, run: Callable) -> None:
        def start(job: Job) -> None:
            if job.state == "queued":
                job.enter("running")

        if self.store.update(job_id, start, claim=True).state != "running":
            return  # cancelled while queued

        def progress(done: int, total: int) -> None:
            def change(job: Job) -> None:
                job.progress = JobProgress(done=done, total=total)

            if self.store.update(job_id, change).state == "cancelling":
                raise IngestCancelled("the evaluation was cancelled")

        report = run(progress)

        def finish(job: Job) -> None:
            job.report = report
            job.enter("cancelled" if job.state == "cancelling" else "done")

        self.store.update(job_id, finish)


def job_events_key(job: Job) -> str:
    """What changes between two SSE ``progress`` events of a job (its JSON
    without the clock and the state history)."""
    return json.dumps(job.model_dump(exclude={"updated_at", "history"}), sort_keys=True)
