"""Two ``pilar serve`` replicas on loopback, each with its own ``PILAR_HOME``,
sharing only the production stack (Neo4j, which holds the job records, and
Elasticsearch) and ``PILAR_UPLOAD_DIR``: a job submitted on one is listed,
followed over SSE and cancelled on the other; the ingest worker holding a
job is SIGKILLed mid-job and a worker beside the other replica resumes it
once its lease runs out, every file stored exactly once (the documents and
``pilar stats`` as after a clean ingest of the same files). The test's
documents (collection ``replicas``) are deleted before and after it."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import threading
import time
import uuid

import psutil
import pytest

from pilar.api.models import now
from tests.api.shared import FULL, clear_jobs, settings_of, sse_events, upload
from tests.conftest import FIXTURES
from tests.processes import alive
from tests.serving import ApiServer, wait_job

COLLECTION = "replicas"


def _clear(home, env: dict[str, str]) -> None:
    """Delete the documents of :data:`COLLECTION` (a run stopped midway leaves some)."""
    from pilar import Pilar

    p = Pilar(settings=settings_of(home, env))
    for doc in p.docs(collections=[COLLECTION]):
        p.delete(doc.doc_id)
    p.close()


def _stats(home, env: dict[str, str]) -> dict[str, int]:
    """``pilar stats`` of the stores a server with ``env`` runs on."""
    from pilar import Pilar

    p = Pilar(settings=settings_of(home, env))
    try:
        return p.stats()
    finally:
        p.close()


def _ingest(home, env: dict[str, str], files) -> list:
    """``pilar ingest`` of ``files`` into :data:`COLLECTION` (a clean run)."""
    from pilar import Pilar

    p = Pilar(settings=settings_of(home, env))
    try:
        results = p.ingest(files, collection=COLLECTION)
    finally:
        p.close()
    assert {r.status for r in results} == {"ingested"}
    return results


def _worker_of(server: ApiServer) -> psutil.Process:
    """The ingest worker process ``server`` started."""
    (worker,) = [p for p in psutil.Process(server.proc.pid).children()
                 if "worker" in p.cmdline()]
    return worker


@pytest.mark.neo4j
@pytest.mark.elasticsearch
@pytest.mark.timeout(1200)
def test_replicas_share_jobs_and_a_dead_workers_job_is_resumed(tmp_path, wtq_pages):
    prefix = f"pilar-test-replicas-{uuid.uuid4().hex[:12]}"
    env = {"PILAR_API_KEYS": FULL, "PILAR_GRAPH": "neo4j", "PILAR_INDEX": "elasticsearch",
           "NEO4J_URI": os.environ["NEO4J_URI"],
           "ELASTICSEARCH_URL": os.environ["ELASTICSEARCH_URL"],
           "PILAR_ELASTICSEARCH_INDEX": prefix, "PILAR_UPLOAD_DIR": str(tmp_path / "uploads"),
           "PILAR_JOB_LEASE_SECONDS": "2", "PILAR_API_RATE_LIMIT": ""}
    _clear(tmp_path / "cleanup", env)
    clear_jobs(tmp_path / "cleanup", env)
    a = ApiServer(tmp_path / "home-a", env).start()  # with its ingest worker
    b = ApiServer(tmp_path / "home-b", {**env, "PILAR_API_INGEST_WORKER": "false"}).start()
    spare = None
    pages = sorted(wtq_pages.glob("*.html"))[:20]
    try:
        with a.client(FULL) as on_a, b.client(FULL) as on_b:
            # a job submitted on A is listed on B and followed there to its end
            job = upload(on_a, pages, COLLECTION)
            assert job["job_id"] in [j["job_id"] for j in on_b.get("/v1/jobs").json()["items"]]
            followed: list = []

            def follow() -> None:
                with on_b.stream("GET", f"/v1/jobs/{job['job_id']}/events") as r:
                    followed.extend(sse_events("".join(r.iter_text())))

            follower = threading.Thread(target=follow)
            follower.start()
            record = on_b.get(f"/v1/jobs/{job['job_id']}").json()
            while record["state"] == "queued" or not record["counts"].get("ingested"):
                assert record["state"] in ("queued", "running"), record
                time.sleep(0.05)
                record = on_b.get(f"/v1/jobs/{job['job_id']}").json()
            # the worker holding it dies mid-job; a worker beside B takes it up
            assert record["state"] == "running" and record["counts"].get("ingested") < 20
            worker = _worker_of(a)
            worker.kill()
            killed_at = now()
            while alive([worker]):  # a zombie until its server reaps it
                time.sleep(0.05)
            spare = subprocess.Popen([sys.executable, "-m", "pilar", "worker"], env=b.env,
                                     cwd=b.home)
            done = wait_job(on_b, job["job_id"])
            follower.join(600)
            assert done["state"] == "done", done
            # each file stored once: by the dead worker (ingested, or unchanged when it
            # died between storing and recording it) or after the resumption
            assert {f["status"] for f in done["files"]} <= {"ingested", "unchanged"}
            ids = [f["doc_id"] for f in done["files"]]
            listed = on_b.get("/v1/documents", params={"collection": COLLECTION,
                                                       "limit": 1000}).json()
            assert len(set(ids)) == 20 and sorted(d["doc_id"] for d in listed["items"]) == \
                sorted(ids)
            assert sum(f["n_pages"] for f in done["files"]) == 20
            assert any(f["finished_at"] > killed_at for f in done["files"])  # resumed
            assert [e for e, _ in followed][-1] == "end" and followed[-1][1]["state"] == "done"
            assert [d["state"] for e, d in followed if e == "state"] == ["queued", "running",
                                                                         "done"]
            # a job submitted on B is cancelled on A
            slow = [FIXTURES / "pdf" / "204-268-scan-p1.pdf", FIXTURES / "pdf" / "204-268.pdf"]
            other = upload(on_b, slow, COLLECTION)
            r = on_a.delete(f"/v1/jobs/{other['job_id']}")
            assert r.status_code == 200 and r.json()["state"] in ("cancelled", "cancelling")
            ended = wait_job(on_a, other["job_id"])
            assert ended["state"] == "cancelled"
            assert {f["status"] for f in ended["files"]} == {"cancelled"}
            after = on_a.get("/v1/documents", params={"collection": COLLECTION,
                                                      "limit": 1000}).json()
            assert after["total"] == 20
        # no replica keeps job records in its home; the stores hold what a clean run stores
        assert not (a.home / "jobs.sqlite").exists() and not (b.home / "jobs.sqlite").exists()
        resumed = _stats(tmp_path / "cleanup", env)
        _clear(tmp_path / "cleanup", env)
        clean = _ingest(tmp_path / "cleanup", env, pages)
        assert sorted(r.doc_id for r in clean) == sorted(ids)
        assert _stats(tmp_path / "cleanup", env) == resumed
    finally:
        if spare is not None:
            spare.terminate()
            spare.wait(60)
        b.stop()
        a.stop()
        _clear(tmp_path / "cleanup", env)
        from pilar.retrieval.elasticsearch import ElasticsearchPageIndex

        es = ElasticsearchPageIndex(env["ELASTICSEARCH_URL"], prefix=prefix)
        es.drop()
        es.close()
        shutil.rmtree(tmp_path / "uploads", ignore_errors=True)
