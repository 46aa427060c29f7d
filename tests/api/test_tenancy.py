"""Tenancy over the served API: two keys limited to their own collections
(``team-a``, ``team-b``) upload the same bytes and never meet; ingest roots
per collection; the upload lifecycle (sizes checked while streaming, 413
before any 202 with nothing written, bytes removed when a file fails or its
document is deleted); collection names checked at the boundary. On every
stack the package serves (tests/api/conftest.py)."""

from __future__ import annotations

import json
import re
import shutil

import pytest

from tests.api.shared import CORPUS, FULL, MAX_FILE_BYTES, TEAM_A, TEAM_B, sse_events
from tests.serving import wait_job

SHARED = CORPUS / "204-349.html"
"""The bytes both teams upload (no other test of the package stores them):
the Wikipedia page of East Retford."""
QUESTION = "what was the population of east retford in 1961?"
NAMES = {"team-a": "team-a-board-minutes.html", "team-b": "team-b-acquisition-target-2027.html"}


def _files_under(folder) -> set[str]:
    """Every file below ``folder``, as paths relative to it."""
    return {str(p.relative_to(folder)) for p in folder.rglob("*") if p.is_file()} \
        if folder.exists() else set()


def _upload(client, name: str, data: bytes, collection: str):
    return client.post("/v1/documents", files=[("files", (name, data))],
                       data={"collection": collection})


def _stored(client, name: str, data: bytes, collection: str) -> dict:
    """Upload one file into ``collection`` and wait for its job."""
    r = _upload(client, name, data, collection)
    assert r.status_code == 202, r.text
    return wait_job(client, r.json()["job_id"])


def test_two_teams_upload_the_same_bytes_and_never_meet(served):
    server = served["server"]
    uploads = server.home / "uploads"
    data = SHARED.read_bytes()
    with server.client(TEAM_A) as a, server.client(TEAM_B) as b:
        jobs = {"team-a": _stored(a, NAMES["team-a"], data, "team-a"),
                "team-b": _stored(b, NAMES["team-b"], data, "team-b")}
        for team, job in jobs.items():
            [f] = job["files"]
            assert (job["state"], f["status"], f["name"], f["reason"]) == (
                "done", "ingested", NAMES[team], None), job
        ids = {team: job["files"][0]["doc_id"] for team, job in jobs.items()}
        assert ids["team-a"] != ids["team-b"]
        with server.client(FULL) as full:  # the page index holds both, under their own ids
            found = full.post("/v1/search", json={"query": QUESTION, "k": 20,
                                                  "budget_tokens": 600}).json()
        assert {ids["team-a"], ids["team-b"]} <= {p["doc_id"] for p in found["pages"]}
        mine = {"team-a": a, "team-b": b}
        for team, other in (("team-a", "team-b"), ("team-b", "team-a")):
            client = mine[team]
            # everything of the other team, and any server path
            leak = re.compile("|".join(map(re.escape, [
                ids[other], NAMES[other], NAMES[other].removesuffix(".html"),
                jobs[other]["job_id"], str(server.home), "uploads/"])))
            listed = client.get("/v1/documents").json()
            assert [d["doc_id"] for d in listed["items"]] == [ids[team]]
            [doc] = listed["items"]
            assert (doc["collection"], doc["uri"], doc["sources"], doc["title"]) == (
                team, NAMES[team], [NAMES[team]], "East Retford")
            hit = client.post("/v1/search", json={"query": QUESTION, "budget_tokens": 600})
            assert hit.status_code == 200, hit.text
            assert {p["doc_id"] for p in hit.json()["pages"]} == {ids[team]}
            assert {c["source"] for c in hit.json()["packet"]["citations"]} == {NAMES[team]}
            with client.stream("GET", f"/v1/jobs/{jobs[team]['job_id']}/events") as r:
                events = sse_events("".join(r.iter_text()))
            assert [(e, d["state"]) for e, d in events] == [
                ("state", "queued"), ("state", "running"), ("state", "done"), ("end", "done")]
            job = client.get(f"/v1/jobs/{jobs[team]['job_id']}")
            found = client.get("/v1/entities", params={"q": "retford"})
            ent_ids = [e["entity_id"] for e in found.json()["items"]]
            assert ent_ids and all(e.startswith(f"{team}:") for e in ent_ids), ent_ids
            hood = client.get(f"/v1/entities/{ent_ids[0]}/neighborhood", params={"depth": 2})
            assert hood.status_code == 200 and client.get(
                f"/v1/entities/{ent_ids[0].replace(team, other)}").status_code == 404
            seen = [listed, hit.json(), [d for _, d in events], job.json(), found.json(),
                    hood.json(),
                    client.get(f"/v1/documents/{ids[team]}").json(),
                    client.get(f"/v1/pages/{ids[team]}:1").json()]
            for body in seen:
                assert not leak.search(json.dumps(body, ensure_ascii=False)), body
            for url in (f"/v1/documents/{ids[other]}", f"/v1/pages/{ids[other]}:1",
                        f"/v1/jobs/{jobs[other]['job_id']}"):
                r = client.get(url)
                assert r.status_code == 404 and not leak.search(r.text), (url, r.text)
        # deleting team-a's document leaves team-b's whole, and erases team-a's bytes
        before = _files_under(uploads)
        assert b.delete(f"/v1/documents/{ids['team-a']}").status_code == 404
        assert a.delete(f"/v1/documents/{ids['team-a']}").json() == {
            "doc_id": ids["team-a"], "deleted": True}
        gone = before - _files_under(uploads)
        assert gone == {f"{jobs['team-a']['job_id']}/001/{NAMES['team-a']}"}
        assert not (uploads / jobs["team-a"]["job_id"]).exists()
        assert a.get("/v1/documents").json()["items"] == []
        assert [d["doc_id"] for d in b.get("/v1/documents").json()["items"]] == [ids["team-b"]]
        hit = b.post("/v1/search", json={"query": QUESTION, "budget_tokens": 600}).json()
        assert {p["doc_id"] for p in hit["pages"]} == {ids["team-b"]}
        assert b.get(f"/v1/pages/{ids['team-b']}:1").json()["supports"]
        assert b.delete(f"/v1/documents/{ids['team-b']}").json()["deleted"] is True
        assert not (uploads / jobs["team-b"]["job_id"]).exists()


def test_a_failed_upload_leaves_no_bytes(served):
    server = served["server"]
    uploads = server.home / "uploads"
    before = _files_under(uploads)
    with server.client(TEAM_A) as a:
        job = _stored(a, "truncated.pdf", b"%PDF-1.7\n1 0 obj\n<< /Type /Catalog", "team-a")
    [f] = job["files"]
    assert (job["state"], f["status"], f["name"]) == ("failed", "failed", "truncated.pdf")
    assert job["reason"] == f["reason"]
    assert str(server.home) not in json.dumps(job)
    assert _files_under(uploads) == before
    assert not (uploads / job["job_id"]).exists()


def _chunks(parts: list[tuple[str, bytes]], collection: str = "team-a", first: bool = False,
            boundary: str = "pilar-test-boundary"):
    """A multipart body of file ``parts`` and ``collection`` (after the files,
    or ``first``) sent in 64 KiB chunks, with no Content-Length (so only the
    bytes as they stream can show its size)."""
    field = (f"--{boundary}\r\nContent-Disposition: form-data; name=\"collection\"\r\n\r\n"
             f"{collection}\r\n").encode()

    def body():
        if first:
            yield field
        for name, data in parts:
            yield (f"--{boundary}\r\nContent-Disposition: form-data; name=\"files\"; "
                   f"filename=\"{name}\"\r\nContent-Type: text/html\r\n\r\n").encode()
            for i in range(0, len(data), 65536):
                yield data[i:i + 65536]
            yield b"\r\n"
        if not first:
            yield field
        yield f"--{boundary}--\r\n".encode()
    return {"content": body(),
            "headers": {"content-type": f"multipart/form-data; boundary={boundary}"}}


@pytest.mark.parametrize("parts, setting", [
    ([("big.html", b"<p>x</p>" * (MAX_FILE_BYTES // 8 + 1))], "PILAR_MAX_FILE_BYTES"),
    ([("one.html", b"a" * (MAX_FILE_BYTES - 10)), ("two.html", b"b" * (MAX_FILE_BYTES - 10))],
     "PILAR_API_MAX_UPLOAD_BYTES"),
    ([(f"{i}.html", b"<p>x</p>") for i in range(101)], "PILAR_API_MAX_UPLOAD_FILES"),
], ids=["file", "request", "files"])
@pytest.mark.parametrize("streamed", [False, True], ids=["sized", "chunked"])
def test_an_oversized_upload_is_413_before_any_job_with_nothing_written(served, parts, setting,
                                                                        streamed):
    server = served["server"]
    uploads = server.home / "uploads"
    before = _files_under(uploads), set(uploads.iterdir()) if uploads.exists() else set()
    with server.client(TEAM_A) as a:
        docs_before = a.get("/v1/documents").json()["total"]
        if streamed:
            r = a.post("/v1/documents", **_chunks(parts))
        else:
            r = a.post("/v1/documents", files=[("files", p) for p in parts],
                       data={"collection": "team-a"})
        assert r.status_code == 413, r.text
        assert r.headers["content-type"] == "application/problem+json"
        assert setting in r.json()["detail"]
        assert a.get("/v1/documents").json()["total"] == docs_before
    after = _files_under(uploads), set(uploads.iterdir()) if uploads.exists() else set()
    assert after == before


@pytest.mark.parametrize("first", [True, False], ids=["collection-first", "files-first"])
def test_an_upload_into_another_teams_collection_is_403_with_nothing_written(served, first):
    server = served["server"]
    uploads = server.home / "uploads"
    before = _files_under(uploads), set(uploads.iterdir()) if uploads.exists() else set()
    with server.client(TEAM_A) as a:
        r = a.post("/v1/documents", **_chunks([("x.html", b"<p>x</p>" * 100_000)], "team-b",
                                              first))
    assert r.status_code == 403 and r.json()["detail"] == (
        "collection 'team-b' is outside this key's collections"), r.text
    assert (_files_under(uploads), set(uploads.iterdir()) if uploads.exists() else set()) \
        == before


@pytest.mark.parametrize("bad", ["a\x01b", "team-a\u200b", "", "x" * 65, "-a", "a/b"])
def test_collection_names_are_checked_on_every_route(served, bad):
    server = served["server"]
    uploads = server.home / "uploads"
    before = _files_under(uploads)
    shown = repr(bad)
    with server.client(FULL) as full:
        answers = [
            _upload(full, "x.html", b"<p>x</p>", bad),
            full.post("/v1/documents/paths", json={"paths": [str(SHARED)], "collection": bad}),
            full.post("/v1/search", json={"query": "x", "collections": [bad]}),
            full.post("/v1/answer", json={"question": "x", "collections": [bad]}),
            full.post("/v1/eval", json={"questions": [{"id": "q", "question": "x",
                                                       "answers": ["x"]}], "collections": [bad]}),
            full.get("/v1/documents", params={"collection": bad}),
        ]
    for r in answers:
        assert r.status_code == 422, (r.request.url, r.text)
        assert r.headers["content-type"] == "application/problem+json"
        assert "collection" in r.json()["detail"] and shown in r.json()["detail"], r.text
    assert _files_under(uploads) == before


def test_ingest_roots_are_per_collection(served):
    server, roots = served["server"], served["roots"]
    (roots / "team-a" / "minutes").mkdir()
    shutil.copy(CORPUS / "203-345.html", roots / "team-a" / "minutes" / "q3.html")
    shutil.copy(CORPUS / "203-331.html", roots / "team-b" / "secret-plan.html")
    (roots / "team-a" / "minutes" / "peek.html").symlink_to(roots / "team-b" / "secret-plan.html")
    with server.client(TEAM_A) as a:
        for path in (roots / "team-b", roots / "team-b" / "secret-plan.html",
                     roots / "team-a" / "minutes"):   # the last holds a link into team-b's root
            r = a.post("/v1/documents/paths", json={"paths": [str(path)],
                                                    "collection": "team-a"})
            assert r.status_code == 403 and "PILAR_INGEST_ROOTS" in r.json()["detail"], r.text
        # the link is named as the caller reaches it, its target not at all
        assert r.json()["detail"].startswith(f"{roots}/team-a/minutes/peek.html: ")
        assert "secret-plan" not in r.text
        r = a.post("/v1/eval", json={"questions_path": str(roots / "team-b" / "secret-plan.html")})
        assert r.status_code == 403, r.text
        (roots / "team-a" / "minutes" / "peek.html").unlink()
        given = str(roots / "team-a" / "minutes")
        r = a.post("/v1/documents/paths", json={"paths": [given], "collection": "team-a"})
        assert r.status_code == 202, r.text
        job = wait_job(a, r.json()["job_id"])
        assert [(f["name"], f["status"]) for f in job["files"]] == [
            (f"{given}/q3.html", "ingested")]
        [doc] = a.get("/v1/documents").json()["items"]
        assert (doc["uri"], doc["sources"]) == ("minutes/q3.html", ["minutes/q3.html"])
        assert a.delete(f"/v1/documents/{doc['doc_id']}").json()["deleted"] is True
    assert (roots / "team-a" / "minutes" / "q3.html").is_file()  # a root's files are never erased
    with server.client(TEAM_B) as b:
        r = b.post("/v1/documents/paths", json={"paths": [str(roots / "team-a")],
                                                "collection": "team-b"})
        assert r.status_code == 403
