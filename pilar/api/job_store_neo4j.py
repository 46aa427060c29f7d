"""Job records on Neo4j (the production stack): one ``(:Job)`` node per job,
so every replica and worker that reaches the graph shares one queue whatever
its ``PILAR_HOME`` or host (:class:`Neo4jJobStore`, a
:class:`~pilar.api.jobs.JobStore`).

Why Neo4j rather than an Elasticsearch index: a claim reads the runnable
jobs of every owner and takes one of them, which must be one atomic step
(two workers never hold one job). Neo4j gives that as a transaction: a
claim first writes the ``(:JobQueue {name: 'ingest'})`` node, whose write
lock every claim needs, so claims run one after another, then reads the
runnable jobs, write-locks the one it picks and checks it again under that
lock (an update or a cancel may have changed it between the two reads).
Every change of a record takes the job node's write lock before reading it
(``SET j.locked_at`` first: Neo4j's way to avoid lost updates under read
committed), so a cancel and a worker's progress never overwrite each other
and a record is always read whole after the last commit. Elasticsearch has
no transaction over several documents and shows a write to searches only
after a refresh, so the same claim would need a search, a versioned write
(``if_seq_no``) and a retry loop. Records are small (a few KB of JSON) and
change a few times per file, well within what the graph's writes take.

A node holds: ``job_id``, ``kind``, ``state``, ``owner``, ``created_at``
(ISO, milliseconds) and ``created_ns`` (the order of jobs made in one
millisecond), ``paths`` (JSON list of the files' server paths), ``record``
(the :class:`~pilar.api.models.Job` as JSON; the SSE events are read from
it), ``holder`` and ``lease_until`` of the worker's lease (Unix seconds on
the Neo4j server's clock, so workers on hosts whose clocks differ agree on
when a lease runs out), ``runner`` (``host:pid`` of the process that
created or runs the job).
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from pathlib import Path

import neo4j

from pilar.api.jobs import Claimed, JobStore, LeaseLost, claimable, pick, runner, take
from pilar.api.models import Job, JobState, now
from pilar.config import Settings
from pilar.errors import ConfigError

SCHEMA = (
    "CREATE CONSTRAINT pilar_job_id IF NOT EXISTS FOR (j:Job) REQUIRE j.job_id IS UNIQUE",
    "CREATE CONSTRAINT pilar_job_queue IF NOT EXISTS FOR (q:JobQueue) REQUIRE q.name IS UNIQUE",
    "CREATE INDEX pilar_job_state IF NOT EXISTS FOR (j:Job) ON (j.state)",
    "CREATE INDEX pilar_job_owner IF NOT EXISTS FOR (j:Job) ON (j.owner)",
)
"""The Job nodes' constraints and indexes (idempotent)."""
_NOW = "timestamp() / 1000.0"
"""The Neo4j server's clock, Unix seconds (leases are kept on it)."""
_LOCKED = (f"MATCH (j:Job {{job_id: $id}}) SET j.locked_at = {_NOW} "
           "RETURN j.record AS record, j.holder AS holder, j.lease_until AS lease_until, "
           f"j.paths AS paths, {_NOW} AS now")
"""A job's record read under its node's write lock (held until the transaction ends)."""
_RUNNABLE = ("MATCH (j:Job) WHERE j.kind = 'ingest' AND (j.state = 'queued' OR "
             "(j.state IN ['running', 'cancelling'] AND "
             f"(j.holder = $me OR j.lease_until < {_NOW}))) "
             "RETURN j.job_id AS id, j.owner AS owner ORDER BY j.created_at, j.created_ns")
_PUT = (f"MATCH (j:Job {{job_id: $id}}) SET j += $props, j.lease_until = CASE WHEN $lease "
        f"THEN {_NOW} + $seconds ELSE j.lease_until END")


class Neo4jJobStore(JobStore):
    """Job records as ``(:Job)`` nodes on the Neo4j server ``driver`` talks
    to (see the module docstring and :class:`~pilar.api.jobs.JobStore`).
    Thread-safe (one driver, a session per call)."""

    def __init__(self, driver: neo4j.Driver, lease_seconds: float = 30.0,
                 database: str | None = None):
        super().__init__(lease_seconds)
        self.driver, self.database = driver, database
        for statement in SCHEMA:
            try:
                driver.execute_query(statement, database_=database)
            except neo4j.exceptions.ClientError as exc:  # made by another process meanwhile
                if "AlreadyExists" not in (exc.code or ""):
                    raise

    @classmethod
    def of(cls, settings: Settings) -> Neo4jJobStore:
        """The job store on ``settings``' Neo4j (``NEO4J_URI``, ``NEO4J_USERNAME``,
        ``NEO4J_PASSWORD``), leases ``PILAR_JOB_LEASE_SECONDS`` long. Raises
        :class:`ConfigError` (one line) when the server is not configured or
        cannot be reached."""
        if not settings.neo4j_uri:
            raise ConfigError("PILAR_GRAPH=neo4j needs NEO4J_URI")
        auth = ((settings.neo4j_username, settings.neo4j_password or "")
                if settings.neo4j_username else None)
        driver = neo4j.GraphDatabase.driver(settings.neo4j_uri, auth=auth,
                                            notifications_min_severity="OFF")
        try:
            driver.verify_connectivity()
            return cls(driver, settings.job_lease_seconds)
        except (neo4j.exceptions.Neo4jError, neo4j.exceptions.DriverError, OSError) as exc:
            driver.close()
            raise ConfigError(f"job records: cannot use Neo4j at {settings.neo4j_uri}: "
                              f"{str(exc).splitlines()[0] if str(exc) else type(exc).__name__}"
                              ) from None

    def _write(self, work: Callable[[neo4j.ManagedTransaction], object]):
        """``work(tx)`` in one write transaction (retried by the driver on a
        transient error such as a deadlock; ``work`` starts afresh then)."""
        with self.driver.session(database=self.database) as session:
            return session.execute_write(work)

    def _read(self, query: str, **params) -> list[neo4j.Record]:
        return self.driver.execute_query(query, params, database_=self.database,
                                         routing_=neo4j.RoutingControl.READ).records

    def _put(self, tx: neo4j.ManagedTransaction, job: Job, lease: bool = False, **more) -> None:
        """Save ``job`` (and the properties ``more``); with ``lease`` its
        lease runs :attr:`lease_seconds` from now."""
        job.updated_at = now()
        tx.run(_PUT, id=job.job_id, lease=lease, seconds=self.lease_seconds,
               props={"state": job.state, "record": job.model_dump_json(), **more}).consume()

    def create(self, job: Job, owner: str, paths: list[Path] = ()) -> Job:
        """See :meth:`JobStore.create`."""
        job.enter(job.state)
        job.updated_at = now()
        props = {"job_id": job.job_id, "kind": job.kind, "state": job.state, "owner": owner,
                 "created_at": job.created_at, "created_ns": time.time_ns(),
                 "paths": json.dumps([str(p) for p in paths]), "record": job.model_dump_json(),
                 "holder": "", "lease_until": 0.0, "runner": runner()}
        self._write(lambda tx: tx.run("CREATE (j:Job) SET j = $props", props=props).consume())
        return job

    def get(self, job_id: str) -> Job | None:
        """See :meth:`JobStore.get`."""
        rows = self._read("MATCH (j:Job {job_id: $id}) RETURN j.record AS r", id=job_id)
        return Job.model_validate_json(rows[0]["r"]) if rows else None

    def state(self, job_id: str) -> JobState | None:
        """See :meth:`JobStore.state`."""
        rows = self._read("MATCH (j:Job {job_id: $id}) RETURN j.state AS s", id=job_id)
        return rows[0]["s"] if rows else None

    def update(self, job_id: str, change: Callable[[Job], None], claim: bool = False,
               hold: bool = False) -> Job:
        """See :meth:`JobStore.update` (the record read under its node's lock)."""

        def work(tx: neo4j.ManagedTransaction) -> Job:
            row = tx.run(_LOCKED, id=job_id).single()
            if row is None:
                raise KeyError(job_id)
            if hold and row["holder"] != self.holder:
                raise LeaseLost(job_id)
            job = Job.model_validate_json(row["record"])
            change(job)
            self._put(tx, job, lease=hold, **({"runner": runner()} if claim else {}))
            return job

        return self._write(work)

    def renew(self, job_id: str) -> bool:
        """See :meth:`JobStore.renew` (the holder checked under the node's lock)."""
        query = (f"MATCH (j:Job {{job_id: $id}}) SET j.locked_at = {_NOW} WITH j "
                 f"WHERE j.holder = $me SET j.lease_until = {_NOW} + $seconds "
                 "RETURN count(j) AS n")
        return self._write(lambda tx: tx.run(query, id=job_id, me=self.holder,
                                             seconds=self.lease_seconds).single()["n"] == 1)

    def owned(self, owner: str, states: list[str] | None = None) -> list[Job]:
        """See :meth:`JobStore.owned`."""
        rows = self._read("MATCH (j:Job {owner: $owner}) WHERE $states IS NULL OR "
                          "j.state IN $states RETURN j.record AS r "
                          "ORDER BY j.created_at DESC, j.created_ns DESC",
                          owner=owner, states=list(states) if states else None)
        return [Job.model_validate_json(r["r"]) for r in rows]

    def claim(self, after: str | None) -> Claimed | None:
        """See :meth:`JobStore.claim`: claims run one at a time (each writes
        the ``JobQueue`` node first), and the job picked is checked again
        under its own lock."""

        def work(tx: neo4j.ManagedTransaction) -> Claimed | None:
            tx.run(f"MERGE (q:JobQueue {{name: 'ingest'}}) SET q.locked_at = {_NOW}").consume()
            rows = [(r["id"], r["owner"]) for r in tx.run(_RUNNABLE, me=self.holder)]
            if not rows:
                return None
            job_id, owner = pick(rows, after)
            row = tx.run(_LOCKED, id=job_id).single()
            job = Job.model_validate_json(row["record"])
            if not claimable(job.state, row["holder"], row["lease_until"], self.holder,
                             row["now"]):
                return None  # renewed or ended meanwhile: the next look sees the queue as it is
            take(job, row["holder"], self.holder)
            self._put(tx, job, lease=True, holder=self.holder, runner=runner())
            return job, owner, [Path(p) for p in json.loads(row["paths"])]

        return self._write(work)

    def waiting(self, besides: str) -> bool:
        """See :meth:`JobStore.waiting`."""
        return bool(self._read("MATCH (j:Job) WHERE j.state IN ['queued', 'running'] AND "
                               "j.kind = 'ingest' AND j.owner <> $besides RETURN 1 LIMIT 1",
                               besides=besides))

    def unfinished(self, kind: str, states: tuple[str, ...]) -> list[tuple[str, str]]:
        """See :meth:`JobStore.unfinished`."""
        rows = self._read("MATCH (j:Job) WHERE j.kind = $kind AND j.state IN $states "
                          "RETURN j.job_id AS id, j.runner AS runner",
                          kind=kind, states=list(states))
        return [(r["id"], r["runner"] or "") for r in rows]

    def close(self) -> None:
        """Close the driver."""
        self.driver.close()
