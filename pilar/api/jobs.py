"""Ingest and evaluation jobs: records in a small SQLite file and one worker thread.

``POST /v1/documents`` streams the uploaded files into
``PILAR_HOME/uploads/<job>/`` (:mod:`pilar.api.uploads`) or takes
server-side paths, and queues a job; the worker ingests the files one by
one through the facade, saving the job's record after every file, so a
client may disconnect and come back (``GET /v1/jobs/{id}``, SSE events).
An uploaded file that is not stored (it failed, or the job stopped before
it) is removed at once; a stored one stays as its document's source until
the document is deleted. A job's record names its files as the client
gave them and never shows a server path (:meth:`IngestWorker.submit`).
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
import sqlite3
import threading
import uuid
from collections.abc import Callable
from datetime import datetime, timezone
from pathlib import Path

from pilar import Pilar
from pilar.api import scoping
from pilar.api.models import Job, JobFile, JobProgress, Shown
from pilar.errors import PilarError
from pilar.writes import discard_upload

log = logging.getLogger("pilar.api")

RESTARTED = ("the server stopped before this job finished; files not marked ingested, "
             "replaced or unchanged were not stored")
STORED = ("ingested", "replaced", "unchanged", "new_source")
"""File statuses of a job whose bytes are a stored document's source."""

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

    def fail_orphans(self) -> list[Job]:
        """Mark ``failed`` the jobs left queued or running by processes that
        no longer run (a restart); returns them."""
        with self._lock:
            rows = self._conn.execute("SELECT record, owner_pid FROM jobs "
                                      "WHERE state IN ('queued', 'running')").fetchall()
        failed = []
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
            failed.append(job)
        return failed

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


def _ended(files: list[JobFile]) -> tuple[str, str | None]:
    """``(state, reason)`` of an ingest job whose files were all tried:
    ``failed`` when none of them went in (the reason is the one file's, or
    says how many failed), else ``done``."""
    if files and all(f.status == "failed" for f in files):
        return "failed", files[0].reason if len(files) == 1 else \
            f"none of the {len(files)} files was ingested"
    return "done", None


class IngestWorker:
    """Runs queued jobs (ingest and evaluation) one after another in a
    daemon thread (the one writer of the embedded store within this process)."""

    def __init__(self, pilar: Pilar, store: JobStore, uploads: Path, shown: Shown):
        self.pilar = pilar
        self.store = store
        self.uploads = uploads.resolve()
        self.shown = shown
        self._queue: queue.Queue[tuple[Job, Callable[[Job], None]] | None] = queue.Queue()
        self._thread = threading.Thread(target=self._run, name="pilar-ingest", daemon=True)

    def start(self) -> None:
        self._thread.start()

    def stop(self, timeout: float = 5.0) -> None:
        """Ask the thread to stop after its current file's job; unfinished jobs
        are marked failed at the next start."""
        self._queue.put(None)
        self._thread.join(timeout)

    def new_job(self, collection: str, job_id: str | None = None) -> Job:
        """A fresh ingest job into ``collection`` (a new id unless given:
        :meth:`upload_folder`'s)."""
        stamp = now()
        return Job(job_id=job_id or uuid.uuid4().hex, state="queued", collection=collection,
                   created_at=stamp, updated_at=stamp, files=[])

    def upload_folder(self) -> tuple[str, Path]:
        """A fresh job id and the folder its uploads go to (not created)."""
        job_id = uuid.uuid4().hex
        return job_id, self.uploads / job_id

    def discard_unstored(self, job: Job) -> None:
        """Remove the uploaded bytes of ``job``'s files that are not a stored
        document's source (:data:`STORED`); a job of server paths has none."""
        for i, f in enumerate(job.files):
            if f.status not in STORED:
                discard_upload(self.uploads / job.job_id / f"{i + 1:03d}", self.uploads)

    def submit(self, job: Job, files: list[tuple[str, Path]]) -> Job:
        """Queue ``files`` (the name the client gave, path on the server) as
        ``job``; the record shows only the names."""
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
            finally:
                self.discard_unstored(job)

    def _ingest(self, job: Job, paths: list[Path]) -> None:
        job.state = "running"
        self.store.save(job)
        for entry, path in zip(job.files, paths, strict=True):
            entry.status = "running"
            self.store.save(job)
            result = scoping.ingest_file(self.pilar, path, job.collection)
            entry.status, entry.doc_id = result.status, result.doc_id
            entry.reason = self._reason(result, path, entry.name)
            if result.status not in STORED and path.is_relative_to(self.uploads):
                discard_upload(path.parent, self.uploads)
            entry.n_pages, entry.warnings = result.n_pages, list(result.warnings)
            entry.seconds = round(result.seconds, 3)
            job.counts = _counts(job.files)
            self.store.save(job)
        job.state, job.reason = _ended(job.files)
        self.store.save(job)

    def _reason(self, result, path: Path, name: str) -> str | None:
        """``result``'s reason as the client may read it: for ``new_source``
        the stored document's path as shown (:attr:`shown`), otherwise with
        this file's server path replaced by its ``name``."""
        if result.reason is None:
            return None
        if result.status == "new_source":
            return self.shown(result.reason)
        return result.reason.replace(str(path.resolve()), name).replace(str(path), name)

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
