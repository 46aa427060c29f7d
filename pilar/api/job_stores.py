"""Which job store a server or worker uses: :func:`open_job_store` (kept
apart from :mod:`pilar.api.jobs`, which both stores import)."""

from __future__ import annotations

from pilar.api.jobs import JobStore
from pilar.config import Settings


def open_job_store(settings: Settings) -> JobStore:
    """The job store of the configured stack: ``Job`` nodes on Neo4j when
    ``PILAR_GRAPH=neo4j`` (shared by replicas with homes of their own), else
    ``PILAR_HOME/jobs.sqlite``; leases ``PILAR_JOB_LEASE_SECONDS`` long.
    Raises :class:`~pilar.errors.ConfigError` when Neo4j is not configured
    or cannot be reached."""
    if settings.graph == "neo4j":
        from pilar.api.job_store_neo4j import Neo4jJobStore

        return Neo4jJobStore.of(settings)
    from pilar.api.job_store_sqlite import SqliteJobStore

    return SqliteJobStore(settings.home / "jobs.sqlite", settings.job_lease_seconds)
