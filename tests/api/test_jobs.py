"""Ingest jobs as a service over the served API: the ingest worker beside the
server runs them fairly between keys (round-robin), a caller lists its own
jobs, cancels a queued or a running one (files stored before stay whole,
the ones in progress leave nothing), and never sees another collection's
jobs. What these tests store they delete again."""

from __future__ import annotations

import json
import re
import shutil
import time
from threading import Thread

import pytest

from tests.api.shared import CORPUS, FULL, TEAM_A, TEAM_B, upload
from tests.conftest import FIXTURES
from tests.serving import wait_job

SLOW = [FIXTURES / "pdf" / n for n in ("204-268-scan-p1.pdf", "diesel_engines-p1-3.pdf",
                                       "204-268.pdf", "anticlockwise_table_1.pdf")]
"""PDFs that take seconds each to parse (OCR first): a job is still on them when cancelled."""


def _clean(server, *keys: str) -> None:
    """Delete every document the ``keys`` see (their collections' documents)."""
    for key in keys:
        with server.client(key) as c:
            for doc in c.get("/v1/documents", params={"limit": 1000}).json()["items"]:
                assert c.delete(f"/v1/documents/{doc['doc_id']}").json()["deleted"] is True


def _files_under(folder) -> set[str]:
    return {str(p.relative_to(folder)) for p in folder.rglob("*") if p.is_file()} \
        if folder.exists() else set()


def test_cancel_a_queued_and_a_running_job(served):
    server = served["server"]
    uploads = server.home / "uploads"
    with server.client(TEAM_A) as a, server.client(TEAM_B) as b:
        try:
            first = [CORPUS / "204-541.html", CORPUS / "203-189.html"]
            running = upload(a, first, "team-a", [("files", ("empty.html", b""))]
                             + [("files", (p.name, p.read_bytes())) for p in SLOW])
            queued = upload(a, [CORPUS / "204-133.html"], "team-a")
            # the second job of the same key waits behind the first: cancelled at once
            r = a.delete(f"/v1/jobs/{queued['job_id']}")
            assert r.status_code == 200, r.text
            assert r.json()["state"] == "cancelled"
            assert [f["status"] for f in r.json()["files"]] == ["cancelled"]
            assert [h["state"] for h in r.json()["history"]] == ["queued", "cancelled"]
            assert not (uploads / queued["job_id"]).exists()
            # another team's key neither sees nor cancels it
            for job_id in (running["job_id"], queued["job_id"]):
                assert b.get(f"/v1/jobs/{job_id}").status_code == 404
                assert b.delete(f"/v1/jobs/{job_id}").status_code == 404
            # the running job, once its first files are stored
            job = a.get(f"/v1/jobs/{running['job_id']}").json()
            while job["state"] in ("queued", "running") and job["counts"].get("ingested", 0) < 2:
                time.sleep(0.05)
                job = a.get(f"/v1/jobs/{running['job_id']}").json()
            r = a.delete(f"/v1/jobs/{running['job_id']}")
            assert r.status_code == 200 and r.json()["state"] in ("cancelling", "cancelled")
            done = wait_job(a, running["job_id"])
            assert done["state"] == "cancelled"
            assert [h["state"] for h in done["history"]] == ["queued", "running", "cancelling",
                                                             "cancelled"]
            statuses = [f["status"] for f in done["files"]]
            assert statuses[:3] == ["ingested", "ingested", "failed"]
            # stored files come first; every file after the cancel is cancelled
            rest = statuses[3:]
            assert "cancelled" in rest and rest == sorted(rest, key=lambda s: s == "cancelled")
            assert set(rest) <= {"ingested", "cancelled"}
            assert all(f["reason"] and f["doc_id"] is None
                       for f in done["files"] if f["status"] == "cancelled")
            # exactly the stored files are documents; nothing of the one in progress
            ingested = [f["doc_id"] for f in done["files"] if f["status"] == "ingested"]
            listed = a.get("/v1/documents").json()["items"]
            assert [d["doc_id"] for d in listed] == ingested
            for doc_id in ingested:
                assert a.get(f"/v1/pages/{doc_id}:1").json()["supports"]
            kept = {f"{i + 1:03d}/{f['name']}" for i, f in enumerate(done["files"])
                    if f["status"] == "ingested"}
            assert _files_under(uploads / running["job_id"]) == kept
            with server.client(FULL) as full:  # no document of the job left half-written
                every = full.get("/v1/documents", params={"collection": "team-a"}).json()
            assert [d["doc_id"] for d in every["items"]] == ingested
            gone = a.delete(f"/v1/jobs/{running['job_id']}")
            assert gone.status_code == 409
            assert gone.headers["content-type"] == "application/problem+json"
            assert "cancelled" in gone.json()["detail"]
        finally:
            _clean(server, TEAM_A)


def test_jobs_list_is_the_callers_own_newest_first(served):
    server = served["server"]
    with server.client(TEAM_A) as a, server.client(TEAM_B) as b:
        try:
            ids = [upload(a, [CORPUS / "204-541.html"], "team-a")["job_id"],
                   upload(a, [CORPUS / "203-189.html"], "team-a")["job_id"],
                   upload(b, [CORPUS / "204-133.html"], "team-b")["job_id"]]
            jobs = [wait_job(c, j) for c, j in zip((a, a, b), ids)]
            assert [j["state"] for j in jobs] == ["done"] * 3
            mine = a.get("/v1/jobs").json()
            assert [j["job_id"] for j in mine["items"]][:2] == [ids[1], ids[0]]
            assert ids[2] not in json.dumps(mine)
            assert mine["items"][0]["n_files"] == 1 and "files" not in mine["items"][0]
            assert mine["items"][0]["counts"] == {"ingested": 1}
            page = a.get("/v1/jobs", params={"limit": 1, "offset": 1}).json()
            assert [j["job_id"] for j in page["items"]] == [mine["items"][1]["job_id"]]
            assert page["total"] == mine["total"] and page["limit"] == 1
            theirs = b.get("/v1/jobs", params={"state": "done"}).json()
            assert ids[2] in [j["job_id"] for j in theirs["items"]]
            assert not re.search(f"{ids[0]}|{ids[1]}|team-a", json.dumps(theirs))
            assert b.get("/v1/jobs", params={"state": "queued"}).json()["items"] == []
            bad = b.get("/v1/jobs", params={"state": "finished"})
            assert bad.status_code == 422 and "state" in bad.text
        finally:
            _clean(server, TEAM_A, TEAM_B)


@pytest.mark.timeout(900)
def test_two_keys_submitting_at_once_both_progress_from_the_start(served, wtq_pages):
    server = served["server"]
    pages = sorted(wtq_pages.glob("*.html"))[:30]
    roots = served["roots"]
    for team in ("team-a", "team-b"):
        (roots / team / "fair").mkdir()
        for p in pages:
            shutil.copy(p, roots / team / "fair" / p.name)
    with server.client(TEAM_A) as a, server.client(TEAM_B) as b:
        try:
            ids: dict[str, str] = {}

            def submit(team: str, client) -> None:
                r = client.post("/v1/documents/paths",
                                json={"paths": [str(roots / team / "fair")], "collection": team})
                assert r.status_code == 202, r.text
                ids[team] = r.json()["job_id"]

            threads = [Thread(target=submit, args=("team-a", a)),
                       Thread(target=submit, args=("team-b", b))]
            for t in threads:
                t.start()
            for t in threads:
                t.join()
            jobs = {"team-a": wait_job(a, ids["team-a"]), "team-b": wait_job(b, ids["team-b"])}
            finished = {}
            for team, job in jobs.items():
                assert job["counts"] == {"ingested": 30}, job["counts"]
                finished[team] = sorted(f["finished_at"] for f in job["files"])
            # once a key's job is queued, the other key's job finishes fewer than ten
            # files before this key's first (the two posts race: one job may be queued
            # while the other's first files are already in flight)
            for team, other in (("team-a", "team-b"), ("team-b", "team-a")):
                queued, first = jobs[team]["created_at"], finished[team][0]
                ahead = [t for t in finished[other] if queued <= t < first]
                assert len(ahead) < 10, (team, queued, finished)
        finally:
            _clean(server, TEAM_A, TEAM_B)
            for team in ("team-a", "team-b"):
                shutil.rmtree(roots / team / "fair", ignore_errors=True)
