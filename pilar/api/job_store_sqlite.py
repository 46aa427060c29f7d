"""Job records of the embedded default: one SQLite file
(``PILAR_HOME/jobs.sqlite``, WAL) shared by the server's processes and the
ingest worker of one home (:class:`SqliteJobStore`, a
:class:`~pilar.api.jobs.JobStore`). Every change is one ``BEGIN IMMEDIATE``
transaction, so a claim, a cancel and a worker's progress never overwrite
each other."""

from __future__ import annotations

import json
import os
import sqlite3
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

from pilar.api.jobs import HOST, Claimed, JobStore, LeaseLost, pick, take
from pilar.api.models import Job, JobState, now

_SCHEMA = """
CREATE TABLE IF NOT EXISTS jobs (
    job_id     TEXT PRIMARY KEY,
    state      TEXT NOT NULL,
    owner_pid  INTEGER NOT NULL,
    created_at TEXT NOT NULL,
    record     TEXT NOT NULL
);
"""
_COLUMNS = {"kind": "TEXT NOT NULL DEFAULT 'ingest'",
            "owner": "TEXT NOT NULL DEFAULT ''",
            "paths": "TEXT NOT NULL DEFAULT '[]'",
            "holder": "TEXT NOT NULL DEFAULT ''",
            "lease_until": "REAL NOT NULL DEFAULT 0"}
"""Columns added since the first version of the table (added to an older file on open)."""
_INDEXES = """
CREATE INDEX IF NOT EXISTS jobs_state ON jobs(state);
CREATE INDEX IF NOT EXISTS jobs_owner ON jobs(owner, created_at);
"""


class SqliteJobStore(JobStore):
    """Job records (:class:`~pilar.api.models.Job` as JSON) in ``path``, one
    SQLite file (WAL) of one host; see :class:`~pilar.api.jobs.JobStore`.
    The process running a job is its ``owner_pid`` (a process of this host)."""

    def __init__(self, path: Path, lease_seconds: float = 30.0):
        super().__init__(lease_seconds)
        path.parent.mkdir(parents=True, exist_ok=True)
        self._conn = sqlite3.connect(path, isolation_level=None, check_same_thread=False)
        self._conn.execute("PRAGMA journal_mode=WAL")
        self._conn.execute("PRAGMA busy_timeout=30000")
        self._lock = threading.Lock()
        c = self._conn
        c.executescript(_SCHEMA)
        have = {row[1] for row in c.execute("PRAGMA table_info(jobs)")}
        for name, decl in _COLUMNS.items():
            if name not in have:
                try:
                    c.execute(f"ALTER TABLE jobs ADD COLUMN {name} {decl}")
                except sqlite3.OperationalError:  # another process added it meanwhile
                    pass
        c.executescript(_INDEXES)

    @contextmanager
    def _write(self) -> Iterator[sqlite3.Connection]:
        """One write transaction (``BEGIN IMMEDIATE``: other processes wait)."""
        with self._lock:
            self._conn.execute("BEGIN IMMEDIATE")
            try:
                yield self._conn
            except BaseException:
                self._conn.execute("ROLLBACK")
                raise
            self._conn.execute("COMMIT")

    def _put(self, c: sqlite3.Connection, job: Job, pid: int | None = None) -> None:
        job.updated_at = now()
        if pid is None:
            c.execute("UPDATE jobs SET state = ?, record = ? WHERE job_id = ?",
                      (job.state, job.model_dump_json(), job.job_id))
        else:
            c.execute("UPDATE jobs SET state = ?, record = ?, owner_pid = ? WHERE job_id = ?",
                      (job.state, job.model_dump_json(), pid, job.job_id))

    def create(self, job: Job, owner: str, paths: list[Path] = ()) -> Job:
        """See :meth:`JobStore.create`."""
        job.enter(job.state)
        job.updated_at = now()
        with self._write() as c:
            c.execute("INSERT INTO jobs (job_id, kind, state, owner, owner_pid, created_at, "
                      "paths, record) VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
                      (job.job_id, job.kind, job.state, owner, os.getpid(), job.created_at,
                       json.dumps([str(p) for p in paths]), job.model_dump_json()))
        return job

    def get(self, job_id: str) -> Job | None:
        """See :meth:`JobStore.get`."""
        with self._lock:
            row = self._conn.execute("SELECT record FROM jobs WHERE job_id = ?",
                                     (job_id,)).fetchone()
        return Job.model_validate_json(row[0]) if row else None

    def state(self, job_id: str) -> JobState | None:
        """See :meth:`JobStore.state`."""
        with self._lock:
            row = self._conn.execute("SELECT state FROM jobs WHERE job_id = ?",
                                     (job_id,)).fetchone()
        return row[0] if row else None

    def update(self, job_id: str, change: Callable[[Job], None], claim: bool = False,
               hold: bool = False) -> Job:
        """See :meth:`JobStore.update`."""
        with self._write() as c:
            row = c.execute("SELECT record, holder FROM jobs WHERE job_id = ?",
                            (job_id,)).fetchone()
            if row is None:
                raise KeyError(job_id)
            if hold and row[1] != self.holder:
                raise LeaseLost(job_id)
            job = Job.model_validate_json(row[0])
            change(job)
            self._put(c, job, os.getpid() if claim else None)
            if hold:
                c.execute("UPDATE jobs SET lease_until = ? WHERE job_id = ?",
                          (time.time() + self.lease_seconds, job_id))
        return job

    def renew(self, job_id: str) -> bool:
        """See :meth:`JobStore.renew`."""
        with self._write() as c:
            return c.execute("UPDATE jobs SET lease_until = ? WHERE job_id = ? AND holder = ?",
                             (time.time() + self.lease_seconds, job_id,
                              self.holder)).rowcount == 1

    def owned(self, owner: str, states: list[str] | None = None) -> list[Job]:
        """See :meth:`JobStore.owned`."""
        sql, params = "SELECT record FROM jobs WHERE owner = ?", [owner]
        if states:
            sql += " AND state IN (SELECT value FROM json_each(?))"
            params.append(json.dumps(states))
        with self._lock:
            rows = self._conn.execute(sql + " ORDER BY created_at DESC, rowid DESC",
                                      params).fetchall()
        return [Job.model_validate_json(r[0]) for r in rows]

    def claim(self, after: str | None) -> Claimed | None:
        """See :meth:`JobStore.claim` (atomic: one ``BEGIN IMMEDIATE`` transaction)."""
        with self._write() as c:
            rows = c.execute(
                "SELECT job_id, owner FROM jobs WHERE kind = 'ingest' AND (state = 'queued' "
                "OR (state IN ('running', 'cancelling') AND (holder = ? OR lease_until < ?))) "
                "ORDER BY created_at, rowid", (self.holder, time.time())).fetchall()
            if not rows:
                return None
            job_id, owner = pick(rows, after)
            record, paths, holder = c.execute(
                "SELECT record, paths, holder FROM jobs WHERE job_id = ?", (job_id,)).fetchone()
            job = Job.model_validate_json(record)
            take(job, holder, self.holder)
            self._put(c, job, os.getpid())
            c.execute("UPDATE jobs SET holder = ?, lease_until = ? WHERE job_id = ?",
                      (self.holder, time.time() + self.lease_seconds, job_id))
        return job, owner, [Path(p) for p in json.loads(paths)]

    def waiting(self, besides: str) -> bool:
        """See :meth:`JobStore.waiting`."""
        with self._lock:
            row = self._conn.execute(
                "SELECT 1 FROM jobs WHERE kind = 'ingest' AND state IN ('queued', 'running') "
                "AND owner != ? LIMIT 1", (besides,)).fetchone()
        return row is not None

    def unfinished(self, kind: str, states: tuple[str, ...]) -> list[tuple[str, str]]:
        """See :meth:`JobStore.unfinished` (the runner: ``owner_pid`` on this host)."""
        with self._lock:
            rows = self._conn.execute(
                "SELECT job_id, owner_pid FROM jobs WHERE kind = ? AND state IN "
                "(SELECT value FROM json_each(?))", (kind, json.dumps(states))).fetchall()
        return [(job_id, f"{HOST}:{pid}") for job_id, pid in rows]

    def close(self) -> None:
        """Close the file's connection."""
        self._conn.close()
