"""Ingest and evaluation jobs: records in a small SQLite file and one worker thread.

``POST /v1/documents`` stores the uploaded files under ``PILAR_HOME/uploads``
(or takes server-side paths) and queues a job; the worker ingests the files
one by one through the facade, saving the job's record after every file, so
a client may disconnect and come back (``GET /v1/jobs/{id}``, SSE events).
``POST /v1/eval`` queues an evaluation in the same worker: its record shows
the questions done and, at the end, the report (:meth:`IngestWorker.submit_eval`).
Each document is written atomically by the facade, so a job that stops
mid-way leaves its finished documents whole and nothing of the one it was
on. When the server starts, jobs left queued or running by a process that
is gone are marked ``failed`` with a reason (:meth:`JobStore.fail_orphans`).
"""

from __future__ import annotations

import json
import logging
import os
import queue
import re
import sqlite3
import threading
import uuid
from collections.abc import Callable
from datetime import datetime, timezone
from pathlib import Path

from pilar import Pilar
from pilar.api import scoping
from pilar.api.models import Job, JobFile, JobProgress
from pilar.errors import PilarError

log = logging.getLogger("pilar.api")

RESTARTED = ("the server stopped before this job finished; files not marked ingested, "
             "replaced or unchanged were not stored")

_SCHEMA = """
CREATE TABLE IF NOT EXISTS jobs (
    job_id     TEXT PRIMARY KEY,
    state      TEXT NOT NULL,
    owner_pid  INTEGER NOT NULL,
    created_at TEXT NOT NULL,
    record     TEXT NOT NULL
);
CREATE INDEX IF NOT EXISTS jobs_state ON jobs(state);
"""


def now() -> str:
    return datetime.now(timezone.utc).isoformat(timespec="milliseconds")


class JobStore:
    """Job records (:class:`~pilar.api.models.Job` as JSON) in ``path``, one
    SQLite file (WAL) shared by every server process. Thread-safe."""

    def __init__(self, path: Path):
        path.parent.mkdir(parents=True, exist_ok=True)
        self._conn = sqlite3.connect(path, isolation_level=None, check_same_thread=False)
        self._conn.execute("PRAGMA journal_mode=WAL")
        self._conn.execute("PRAGMA busy_timeout=10000")
        self._conn.executescript(_SCHEMA)
        self._lock = threading.Lock()

    def save(self, job: Job) -> None:
        """Insert or replace ``job`` (owned by this process)."""
        job.updated_at = now()
        with self._lock:
            self._conn.execute(
                "INSERT OR REPLACE INTO jobs (job_id, state, owner_pid, created_at, record) "
                "VALUES (?, ?, ?, ?, ?)",
                (job.job_id, job.state, os.getpid(), job.created_at, job.model_dump_json()))

    def get(self, job_id: str) -> Job | None:
        with self._lock:
            row = self._conn.execute("SELECT record FROM jobs WHERE job_id = ?",
                                     (job_id,)).fetchone()
        return Job.model_validate_json(row[0]) if row else None

    def fail_orphans(self) -> int:
        """Mark ``failed`` the jobs left queued or running by processes that
        no longer run (a restart); returns how many."""
        with self._lock:
            rows = self._conn.execute("SELECT record, owner_pid FROM jobs "
                                      "WHERE state IN ('queued', 'running')").fetchall()
        n = 0
        for record, pid in rows:
            if pid != os.getpid() and _alive(pid):
                continue
            job = Job.model_validate_json(record)
            job.state, job.reason = "failed", RESTARTED
            for f in job.files:
                if f.status in ("queued", "running"):
                    f.status, f.reason = "failed", "not ingested: the server stopped"
            job.counts = _counts(job.files)
            self.save(job)
            n += 1
        return n

    def close(self) -> None:
        self._conn.close()


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def _counts(files: list[JobFile]) -> dict[str, int]:
    out: dict[str, int] = {}
    for f in files:
        out[f.status] = out.get(f.status, 0) + 1
    return out


_UNSAFE = re.compile(r"[^A-Za-z0-9._-]+")


def safe_name(name: str) -> str:
    """A file name safe to create under the upload folder (no separators,
    no leading dots), at most 120 characters; ``upload`` if nothing is left."""
    base = _UNSAFE.sub("_", Path(name.replace("\\", "/")).name).lstrip(".")
    return base[-120:] or "upload"


class IngestWorker:
    """Runs queued jobs (ingest and evaluation) one after another in a
    daemon thread (the one writer of the embedded store within this process)."""

    def __init__(self, pilar: Pilar, store: JobStore, uploads: Path):
        self.pilar = pilar
        self.store = store
        self.uploads = uploads
        self._queue: queue.Queue[tuple[Job, Callable[[Job], None]] | None] = queue.Queue()
        self._thread = threading.Thread(target=self._run, name="pilar-ingest", daemon=True)

    def start(self) -> None:
        self._thread.start()

    def stop(self, timeout: float = 5.0) -> None:
        """Ask the thread to stop after its current file's job; unfinished jobs
        are marked failed at the next start."""
        self._queue.put(None)
        self._thread.join(timeout)

    def new_job(self, collection: str) -> tuple[Job, Path]:
        """A fresh ingest job and its upload folder (created)."""
        job_id = uuid.uuid4().hex
        folder = self.uploads / job_id
        folder.mkdir(parents=True, exist_ok=True)
        stamp = now()
        return Job(job_id=job_id, state="queued", collection=collection, created_at=stamp,
                   updated_at=stamp, files=[]), folder

    def submit(self, job: Job, files: list[tuple[str, Path]]) -> Job:
        """Queue ``files`` (shown name, path on the server) as ``job``."""
        job.files = [JobFile(name=name) for name, _ in files]
        job.counts = _counts(job.files)
        self.store.save(job)
        paths = [path for _, path in files]
        self._queue.put((job, lambda j: self._ingest(j, paths)))
        return job

    def submit_eval(self, collections: list[str] | None, total: int,
                    run: Callable[[Callable[[int, int], None]], object]) -> Job:
        """Queue an evaluation reading ``collections`` (None = all) of
        ``total`` questions: ``run(progress)`` returns the
        :class:`~pilar.eval.run.EvalReport` and calls ``progress(done, total)``
        after each question; the job's record follows it."""
        stamp = now()
        job = Job(job_id=uuid.uuid4().hex, kind="eval", state="queued", collection="",
                  collections=collections, created_at=stamp, updated_at=stamp,
                  progress=JobProgress(total=total))
        self.store.save(job)
        self._queue.put((job, lambda j: self._evaluate(j, run)))
        return job

    def _run(self) -> None:
        try:  # documents a crashed writer left pending are removed first
            removed = self.pilar.recover()
            if removed:
                log.warning("removed %d document(s) a stopped write left unfinished", len(removed))
        except Exception:  # noqa: BLE001 - the next ingest retries the recovery
            log.exception("recovery of unfinished documents failed")
        while True:
            item = self._queue.get()
            if item is None:
                return
            job, work = item
            try:
                work(job)
            except PilarError as exc:  # e.g. an evaluation on an emptied store
                job.state, job.reason = "failed", str(exc).splitlines()[0]
                self.store.save(job)
            except Exception as exc:  # noqa: BLE001 - the worker must outlive any job
                log.exception("%s job %s failed", job.kind, job.job_id)
                job.state, job.reason = "failed", f"unexpected {type(exc).__name__}"
                job.counts = _counts(job.files)
                self.store.save(job)

    def _ingest(self, job: Job, paths: list[Path]) -> None:
        job.state = "running"
        self.store.save(job)
        for entry, path in zip(job.files, paths, strict=True):
            entry.status = "running"
            self.store.save(job)
            result = scoping.ingest_file(self.pilar, path, job.collection)
            entry.status, entry.doc_id, entry.reason = result.status, result.doc_id, result.reason
            entry.n_pages, entry.warnings = result.n_pages, list(result.warnings)
            entry.seconds = round(result.seconds, 3)
            job.counts = _counts(job.files)
            self.store.save(job)
        job.state = "done"
        self.store.save(job)

    def _evaluate(self, job: Job, run: Callable[[Callable[[int, int], None]], object]) -> None:
        job.state = "running"
        self.store.save(job)

        def progress(done: int, total: int) -> None:
            job.progress = JobProgress(done=done, total=total)
            self.store.save(job)

        job.report = run(progress)
        job.state = "done"
        self.store.save(job)


def job_events_key(job: Job) -> str:
    """What changes between two SSE events of a job (its JSON without the clock)."""
    return json.dumps(job.model_dump(exclude={"updated_at"}), sort_keys=True)
