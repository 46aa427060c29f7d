"""What the API test modules share: the documents the served stack holds,
the keys, and small request helpers. The ``served`` fixture (tests/api/conftest.py)
starts one server per stack for the whole package."""

from __future__ import annotations

import json
import re

import httpx

from tests.conftest import FIXTURES

CORPUS = FIXTURES / "corpus"
PDF = FIXTURES / "pdf" / "204-268.pdf"
FULL, ALPHA = "full-key-0123456789", "alpha-key-9876543210"
TEAM_A, TEAM_B = "team-a-key-1357924680", "team-b-key-2468013579"
"""Keys limited to the collections ``team-a`` and ``team-b``, whose ingest
roots are ``roots/team-a`` and ``roots/team-b`` in the served home."""
MAX_FILE_BYTES, MAX_UPLOAD_BYTES = 2 * 1024 * 1024, 3 * 1024 * 1024
"""The served PILAR_MAX_FILE_BYTES and PILAR_API_MAX_UPLOAD_BYTES (small, so
the tests can go over them)."""
DEFAULT_FILES = [PDF, CORPUS / "204-541.html", CORPUS / "203-189.html"]
ALPHA_FILES = [CORPUS / "204-133.html"]
READER_TIMEOUT = 1.5
"""Seconds the served reader waits (the stub's timeout fault sleeps 4)."""

STACKS = {"sqlite": ("sqlite", "sqlite"), "neo4j": ("neo4j", "sqlite"),
          "neo4j+elasticsearch": ("neo4j", "elasticsearch")}
"""Stack name -> (PILAR_GRAPH, PILAR_INDEX)."""

KANPUR = "what is the tallest building in kanpur?"


def upload(client: httpx.Client, paths, collection: str, extra=()) -> dict:
    """POST ``paths`` (and ``extra`` file parts) to ``collection``; the 202 body."""
    files = [("files", (p.name, p.read_bytes())) for p in paths] + list(extra)
    r = client.post("/v1/documents", files=files, data={"collection": collection})
    assert r.status_code == 202, r.text
    return r.json()


def doc_ids(job: dict) -> list[str]:
    """The doc ids of a job's files that were stored."""
    return [f["doc_id"] for f in job["files"] if f["doc_id"]]


def sse_events(text: str) -> list[tuple[str, dict]]:
    """``(event, data)`` pairs of a server-sent-event body (data as JSON)."""
    return [(e, json.loads(d)) for e, d in re.findall(r"event: (\w+)\r?\ndata: (.*)\r?\n", text)]


def settings_of(home, env: dict[str, str]):
    """The Settings a server with ``env`` runs on, for a reader of its stores."""
    from pilar.config import Settings

    return Settings(home=home, graph=env["PILAR_GRAPH"], index=env["PILAR_INDEX"],
                    neo4j_uri=env.get("NEO4J_URI"), elasticsearch_url=env.get("ELASTICSEARCH_URL"),
                    elasticsearch_index=env.get("PILAR_ELASTICSEARCH_INDEX", "pilar"))


def clear_jobs(home, env: dict[str, str]) -> None:
    """Delete every job record of the Neo4j a server with ``env`` runs on
    (``Job`` nodes: the job store outlives a test run, unlike a home's
    ``jobs.sqlite``), so no job of an earlier run is listed or resumed."""
    from pilar.api.job_stores import open_job_store

    store = open_job_store(settings_of(home, env))
    try:
        store.driver.execute_query("MATCH (j:Job) DETACH DELETE j")
    finally:
        store.close()
