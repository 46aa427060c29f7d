"""The REST API and MCP endpoint, driven over a real uvicorn server on loopback.

The server runs on the embedded store always, with the graph on Neo4j when
NEO4J_URI is set, and on the production stack (graph on Neo4j, page index on
Elasticsearch, no SQLite file) when ELASTICSEARCH_URL is set too. One server
per stack for the package (``served``): documents are uploaded once
(collection ``default`` and ``alpha``) and every test module reads them;
what a test adds (tests/api/test_tenancy.py) it deletes again.
Its reader is the FAULT-INJECTION stub (tests/stub_openai.py, scenario
``reader_faults``: a word in the question picks the fault); real answers
from a real model server are tested in tests/test_llm_server.py.
"""

from __future__ import annotations

import os

import pytest

from tests.api.shared import (ALPHA, ALPHA_FILES, CORPUS, DEFAULT_FILES, FULL, MAX_FILE_BYTES,
                              MAX_UPLOAD_BYTES, READER_TIMEOUT, STACKS, TEAM_A, TEAM_B,
                              clear_jobs, settings_of, upload)
from tests.conftest import FIXTURES
from tests.serving import ApiServer, wait_job
from tests.stub_openai import StubOpenAI


@pytest.fixture(scope="package")
def stub_reader():
    """The fault-injection stub as the served reader's model server."""
    with StubOpenAI() as stub:
        yield stub


@pytest.fixture(scope="package", params=[
    "sqlite", pytest.param("neo4j", marks=pytest.mark.neo4j),
    pytest.param("neo4j+elasticsearch", marks=[pytest.mark.neo4j, pytest.mark.elasticsearch])])
def served(request, tmp_path_factory, stub_reader):
    """A running server with documents in ``default`` (and one in ``alpha``)
    and the ids the tests need."""
    import uuid

    home = tmp_path_factory.mktemp(f"api-{request.param}")
    inbox = home / "inbox"
    inbox.mkdir()
    (inbox / "escape").symlink_to(FIXTURES / "pdf")  # a link inside a root to outside it
    roots = home / "roots"
    for team in ("team-a", "team-b"):
        (roots / team).mkdir(parents=True)
    graph, index = STACKS[request.param]
    env = {"PILAR_API_KEYS": f"{FULL},{ALPHA}:alpha,{TEAM_A}:team-a,{TEAM_B}:team-b",
           "PILAR_INGEST_ROOTS": f"{CORPUS},{inbox},team-a={roots / 'team-a'},"
                                 f"team-b={roots / 'team-b'}",
           "PILAR_MAX_FILE_BYTES": str(MAX_FILE_BYTES),
           "PILAR_API_MAX_UPLOAD_BYTES": str(MAX_UPLOAD_BYTES),
           "PILAR_GRAPH": graph, "PILAR_INDEX": index,
           # the reader only (no PILAR_LLM_MODEL: ingest extracts no assertions with it)
           "PILAR_READER_BASE_URL": stub_reader.base_url, "PILAR_READER_MODEL": "reader_faults",
           "PILAR_READER_TIMEOUT": str(READER_TIMEOUT), "PILAR_LLM_MAX_RETRIES": "0"}
    if index == "elasticsearch":  # indexes of this package only, dropped afterwards
        env["ELASTICSEARCH_URL"] = os.environ["ELASTICSEARCH_URL"]
        env["PILAR_ELASTICSEARCH_INDEX"] = f"pilar-test-api-{uuid.uuid4().hex[:12]}"
    if graph == "neo4j":
        from pilar import Pilar

        env["NEO4J_URI"] = os.environ["NEO4J_URI"]
        p = Pilar(settings=settings_of(home / "cleanup", env))
        p.recover()  # start from an empty graph, through the facade
        for doc in p.docs():
            p.delete(doc.doc_id)
        p.close()
        clear_jobs(home / "cleanup", env)
    server = ApiServer(home, env).start()
    full = server.client(FULL)
    bad = [("files", ("empty.html", b""))]
    job = upload(full, DEFAULT_FILES, "default", bad)
    alpha_job = upload(full, ALPHA_FILES, "alpha")
    done = wait_job(full, job["job_id"])
    alpha_done = wait_job(full, alpha_job["job_id"])
    yield {"server": server, "full": full, "job": done, "alpha_job": alpha_done,
           "backend": graph, "inbox": inbox, "roots": roots}
    full.close()
    server.stop()
    if index == "elasticsearch":
        from pilar.retrieval.elasticsearch import ElasticsearchPageIndex

        es = ElasticsearchPageIndex(env["ELASTICSEARCH_URL"],
                                    prefix=env["PILAR_ELASTICSEARCH_INDEX"])
        es.drop()
        es.close()
