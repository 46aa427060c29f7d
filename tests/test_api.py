"""The REST API and MCP endpoint, driven over a real uvicorn server on loopback.

The server runs on the embedded store always, with the graph on Neo4j when
NEO4J_URI is set, and on the production stack (graph on Neo4j, page index on
Elasticsearch, no SQLite file) when ELASTICSEARCH_URL is set too. One server
per stack for the module: documents are uploaded once (collection
``default`` and ``alpha``) and every test reads them.
Its reader is the FAULT-INJECTION stub (tests/stub_openai.py, scenario
``reader_faults``: a word in the question picks the fault); real answers
from a real model server are tested in tests/test_llm_server.py.
"""

from __future__ import annotations

import json
import os
import re
import sys

import httpx
import pytest

from tests.conftest import FIXTURES
from tests.serving import ApiServer, wait_job
from tests.stub_openai import StubOpenAI

CORPUS = FIXTURES / "corpus"
PDF = FIXTURES / "pdf" / "204-268.pdf"
FULL, ALPHA = "full-key-0123456789", "alpha-key-9876543210"
DEFAULT_FILES = [PDF, CORPUS / "204-541.html", CORPUS / "203-189.html"]
ALPHA_FILES = [CORPUS / "204-133.html"]


def _upload(client: httpx.Client, paths, collection: str, extra=()) -> dict:
    files = [("files", (p.name, p.read_bytes())) for p in paths] + list(extra)
    r = client.post("/v1/documents", files=files, data={"collection": collection})
    assert r.status_code == 202, r.text
    return r.json()


@pytest.fixture(scope="module")
def stub_reader():
    """The fault-injection stub as the served reader's model server."""
    with StubOpenAI() as stub:
        yield stub


READER_TIMEOUT = 1.5
"""Seconds the served reader waits (the stub's timeout fault sleeps 4)."""

STACKS = {"sqlite": ("sqlite", "sqlite"), "neo4j": ("neo4j", "sqlite"),
          "neo4j+elasticsearch": ("neo4j", "elasticsearch")}
"""Stack name -> (PILAR_GRAPH, PILAR_INDEX)."""


@pytest.fixture(scope="module", params=[
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
    graph, index = STACKS[request.param]
    env = {"PILAR_API_KEYS": f"{FULL},{ALPHA}:alpha",
           "PILAR_INGEST_ROOTS": f"{CORPUS},{inbox}", "PILAR_GRAPH": graph, "PILAR_INDEX": index,
           # the reader only (no PILAR_LLM_MODEL: ingest extracts no assertions with it)
           "PILAR_READER_BASE_URL": stub_reader.base_url, "PILAR_READER_MODEL": "reader_faults",
           "PILAR_READER_TIMEOUT": str(READER_TIMEOUT), "PILAR_LLM_MAX_RETRIES": "0"}
    if index == "elasticsearch":  # indexes of this module only, dropped afterwards
        env["ELASTICSEARCH_URL"] = os.environ["ELASTICSEARCH_URL"]
        env["PILAR_ELASTICSEARCH_INDEX"] = f"pilar-test-api-{uuid.uuid4().hex[:12]}"
    if graph == "neo4j":
        from pilar import Pilar

        env["NEO4J_URI"] = os.environ["NEO4J_URI"]
        p = Pilar(settings=_settings_of(home / "cleanup", env))
        p.recover()  # start from an empty graph, through the facade
        for doc in p.docs():
            p.delete(doc.doc_id)
        p.close()
    server = ApiServer(home, env).start()
    full = server.client(FULL)
    bad = [("files", ("empty.html", b""))]
    job = _upload(full, DEFAULT_FILES, "default", bad)
    alpha_job = _upload(full, ALPHA_FILES, "alpha")
    done = wait_job(full, job["job_id"])
    alpha_done = wait_job(full, alpha_job["job_id"])
    yield {"server": server, "full": full, "job": done, "alpha_job": alpha_done,
           "backend": graph, "inbox": inbox}
    full.close()
    server.stop()
    if index == "elasticsearch":
        from pilar.retrieval.elasticsearch import ElasticsearchPageIndex

        es = ElasticsearchPageIndex(env["ELASTICSEARCH_URL"],
                                    prefix=env["PILAR_ELASTICSEARCH_INDEX"])
        es.drop()
        es.close()


def _ids(job: dict) -> list[str]:
    return [f["doc_id"] for f in job["files"] if f["doc_id"]]


def test_health_routes_are_open(served):
    anon = served["server"].client()
    assert anon.get("/healthz").json() == {"status": "ok", "checks": {}}
    ready = anon.get("/readyz").json()
    assert ready["status"] == "ok"
    graph, index = served["server"].env["PILAR_GRAPH"], served["server"].env["PILAR_INDEX"]
    assert ready["checks"][f"graph:{graph}"] == "ok"
    assert ready["checks"][f"index:{index}"] == "ok"


def test_upload_job_has_per_file_status_and_reasons(served):
    job = served["job"]
    assert job["state"] == "done"
    assert [f["name"] for f in job["files"]] == [p.name for p in DEFAULT_FILES] + ["empty.html"]
    assert [f["status"] for f in job["files"]] == ["ingested"] * 3 + ["failed"]
    assert "empty" in job["files"][3]["reason"]
    assert job["counts"] == {"ingested": 3, "failed": 1}
    assert job["files"][0]["n_pages"] == 2


def test_job_events_stream_ends_with_the_final_record(served):
    with served["full"].stream("GET", f"/v1/jobs/{served['job']['job_id']}/events") as r:
        assert r.headers["content-type"].startswith("text/event-stream")
        text = "".join(r.iter_text())
    events = re.findall(r"event: (\w+)\ndata: (.*)\n", text)
    assert [e for e, _ in events] == ["end"]
    assert json.loads(events[0][1])["counts"] == {"ingested": 3, "failed": 1}


def test_documents_list_get_and_paginate(served):
    full = served["full"]
    ids = _ids(served["job"]) + _ids(served["alpha_job"])
    listed = full.get("/v1/documents").json()
    assert listed["total"] == 4 and [d["doc_id"] for d in listed["items"]] == ids
    page = full.get("/v1/documents", params={"offset": 1, "limit": 2}).json()
    assert [d["doc_id"] for d in page["items"]] == ids[1:3] and page["total"] == 4
    alpha = full.get("/v1/documents", params={"collection": "alpha"}).json()
    assert [d["doc_id"] for d in alpha["items"]] == _ids(served["alpha_job"])
    doc = full.get(f"/v1/documents/{ids[0]}").json()
    assert doc["media_type"] == "application/pdf" and doc["collection"] == "default"
    assert full.get("/v1/documents/0000000000000000").status_code == 404


def test_search_returns_a_cited_packet_within_budget(served):
    r = served["full"].post("/v1/search", json={"query": "which building in kanpur is tallest?",
                                                "budget_tokens": 400, "k": 3})
    assert r.status_code == 200, r.text
    body = r.json()
    assert 1 <= len(body["pages"]) <= 3
    packet = body["packet"]
    assert 0 < packet["tokens"] <= 400 and packet["budget"] == 400
    assert packet["citations"] and all(c["doc_id"] and c["page"] >= 1 for c in packet["citations"])
    assert body["pages"][0]["trace"]


def test_search_in_one_collection_cites_only_it(served):
    alpha_ids = set(_ids(served["alpha_job"]))
    r = served["full"].post("/v1/search", json={"query": "tallest building kanpur",
                                                "budget_tokens": 400, "collections": ["alpha"]})
    body = r.json()
    assert body["pages"] and {p["doc_id"] for p in body["pages"]} <= alpha_ids
    assert {c["doc_id"] for c in body["packet"]["citations"]} <= alpha_ids


def test_tools_schema_is_the_search_request(served):
    [tool] = served["full"].get("/v1/tools").json()
    assert tool["type"] == "function" and tool["function"]["name"] == "search"
    params = tool["function"]["parameters"]
    assert params["required"] == ["query"]
    assert params["properties"]["budget_tokens"]["maximum"] == 32768


def test_page_with_supports_and_highlighted_image(served):
    full = served["full"]
    pdf_id = _ids(served["job"])[0]
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
    html_id = _ids(served["job"])[1]
    assert full.get(f"/v1/pages/{html_id}:1/image").status_code == 409
    assert full.get(f"/v1/pages/{pdf_id}:99").status_code == 404


def test_entities_search_get_and_neighborhood(served):
    full = served["full"]
    found = full.get("/v1/entities", params={"q": "tower"}).json()["items"]
    assert found and all("tower" in (e["name"] + " ".join(e["aliases"])).lower() for e in found)
    eid = found[0]["entity_id"]
    assert full.get(f"/v1/entities/{eid}").json()["entity_id"] == eid
    hood = full.get(f"/v1/entities/{eid}/neighborhood", params={"depth": 2}).json()
    assert eid in [e["entity_id"] for e in hood["entities"]]
    assert hood["supports"] and hood["pages"]
    assert {p["page_id"] for p in hood["pages"]} == {
        f"{s['doc_id']}:{s['provenance']['page']}" for s in hood["supports"]}
    assert full.get(f"/v1/entities/{eid}/neighborhood", params={"depth": 4}).status_code == 422
    assert full.get("/v1/entities/nobody:none").status_code == 404


def test_cypher_is_read_only_and_needs_an_unlimited_key(served):
    full, server = served["full"], served["server"]
    q = {"query": "MATCH (d:Document) RETURN count(d) AS n"}
    with server.client(ALPHA) as alpha:
        assert alpha.post("/v1/cypher", json=q).status_code == 403
    r = full.post("/v1/cypher", json=q)
    if served["backend"] == "sqlite":
        assert r.status_code == 501 and "neo4j" in r.json()["detail"].lower()
        return
    assert r.json()["rows"] == [{"n": 4}]
    w = full.post("/v1/cypher", json={"query": "CREATE (:Thing {name: 'x'})"})
    assert w.status_code == 422 and w.headers["content-type"] == "application/problem+json"


def test_errors_are_problem_json_without_traces(served):
    server, full = served["server"], served["full"]
    anon = server.client()
    cases = [
        (anon.get("/v1/documents"), 401),
        (server.client("wrong-key").get("/v1/documents"), 401),
        (full.post("/v1/search", json={"query": "x", "budget_tokens": 10}), 422),
        (full.post("/v1/search", json={"query": "x", "k": 1000}), 422),
        (full.post("/v1/search", json={"query": "x" * 5000}), 422),
        (full.post("/v1/search", json={"query": "   "}), 422),
        (full.post("/v1/search", content=b"{", headers={"content-type": "application/json"}), 422),
        (full.post("/v1/search", json={"query": "x" * (2 * 1024 * 1024)}), 413),
        (full.get("/v1/pages/not-a-page"), 404),
        (full.get("/v1/jobs/nope"), 404),
    ]
    for r, status in cases:
        assert r.status_code == status, (r.request.url, r.text[:200])
        assert r.headers["content-type"] == "application/problem+json"
        body = r.json()
        assert body["status"] == status and body["title"]
        assert "Traceback" not in r.text and 'File "' not in r.text
    assert anon.get("/v1/documents").headers["www-authenticate"] == "Bearer"
    assert full.get("/v1/documents", headers={"Authorization": "", "X-API-Key": FULL}
                    ).status_code == 200


def test_cors_is_off_by_default(served):
    r = served["full"].options("/v1/search", headers={"Origin": "http://evil.example",
                                                      "Access-Control-Request-Method": "POST"})
    assert "access-control-allow-origin" not in r.headers


def test_server_paths_only_under_ingest_roots(served):
    full = served["full"]
    outside = full.post("/v1/documents/paths", json={"paths": [str(PDF)]})
    assert outside.status_code == 403 and "PILAR_INGEST_ROOTS" in outside.json()["detail"]
    for sneaky in (CORPUS / ".." / "pdf", served["inbox"] / "escape" / PDF.name,
                   served["inbox"] / "escape"):
        r = full.post("/v1/documents/paths", json={"paths": [str(sneaky)]})
        assert r.status_code == 403, sneaky
    inside = full.post("/v1/documents/paths", json={"paths": [str(CORPUS / "204-541.html")]})
    assert inside.status_code == 202
    job = wait_job(full, inside.json()["job_id"])
    # the same bytes were uploaded before: this path is recorded as another source
    assert [f["status"] for f in job["files"]] == ["new_source"]


# -- answers (the reader is the fault-injection stub) --------------------------------

KANPUR = "what is the tallest building in kanpur?"


def _sse(text: str) -> list[tuple[str, dict]]:
    """``(event, data)`` pairs of a server-sent-event body (data as JSON)."""
    return [(e, json.loads(d)) for e, d in re.findall(r"event: (\w+)\r?\ndata: (.*)\r?\n", text)]


def test_answer_cites_packet_items_resolved_to_supports(served):
    r = served["full"].post("/v1/answer", json={"question": KANPUR, "budget_tokens": 400, "k": 3})
    assert r.status_code == 200, r.text
    body = r.json()
    # the stub replies "Ratan Tower [1]": the short answer and item 1 resolved
    assert body["short"] == "Ratan Tower" and body["flags"] == [] and body["unknown"] == []
    assert body["model"] == "reader_faults" and body["not_in_evidence"] is False
    packet = body["packet"]
    assert 0 < packet["tokens"] <= 400 and packet["items"]
    [cite] = body["citations"]
    assert cite["n"] == 1 and cite["citation"] == packet["citations"][0]
    assert cite["text"] == packet["items"][0]["text"]
    assert cite["citation"]["doc_id"] in _ids(served["job"]) and cite["citation"]["page"] >= 1
    assert "[1] " in packet["text"]  # the packet as the reader saw it, numbered


def test_answer_streams_deltas_then_the_whole_answer(served):
    full = served["full"]
    req = {"question": KANPUR, "budget_tokens": 400, "k": 3}
    whole = full.post("/v1/answer", json=req).json()
    for kw in ({"json": {**req, "stream": True}},
               {"json": req, "headers": {"Accept": "text/event-stream"}}):
        with full.stream("POST", "/v1/answer", **kw) as r:
            assert r.status_code == 200
            assert r.headers["content-type"].startswith("text/event-stream")
            events = _sse("".join(r.iter_text()))
        names = [e for e, _ in events]
        assert names == ["delta", "delta", "delta", "answer"], names
        final = events[-1][1]
        assert "".join(d["text"] for _, d in events[:-1]) == final["text"] == whole["text"]
        assert final["citations"] == whole["citations"] and final["short"] == "Ratan Tower"


@pytest.mark.parametrize("fault, status, detail", [
    ("FAULT-TIMEOUT", 504, f"reader failed: timed out after {READER_TIMEOUT:g} s"),
    ("FAULT-500", 502, "reader failed: HTTP error 500: Error code: 500 - upstream model crashed"),
    ("FAULT-GARBAGE", 502, "reader failed: bad reply: not a chat completion (<html>"),
    ("FAULT-EMPTY", 502, "reader failed: the reader's reply is empty"),
])
def test_reader_faults_are_problem_json(served, fault, status, detail):
    full = served["full"]
    question = f"{fault} what is the tallest building in kanpur?"
    r = full.post("/v1/answer", json={"question": question, "budget_tokens": 300})
    assert r.status_code == status, r.text
    assert r.headers["content-type"] == "application/problem+json"
    body = r.json()
    assert body["status"] == status and body["detail"].startswith(detail), body
    assert "Traceback" not in r.text and 'File "' not in r.text
    # streamed: a reader failing before its first delta is the same problem, not a stream
    s = full.post("/v1/answer", json={"question": question, "budget_tokens": 300, "stream": True})
    assert s.status_code == status and s.headers["content-type"] == "application/problem+json"
    assert s.json()["detail"].split(":")[0] == "reader failed"


def test_reader_failing_midway_ends_the_stream_with_an_error_event(served):
    req = {"question": f"FAULT-MIDWAY {KANPUR}", "budget_tokens": 300, "stream": True}
    with served["full"].stream("POST", "/v1/answer", json=req) as r:
        assert r.status_code == 200
        events = _sse("".join(r.iter_text()))
    assert [e for e, _ in events] == ["delta", "delta", "error"]
    assert "".join(d["text"] for _, d in events[:2]) == "Ratan Tower"
    problem = events[-1][1]
    assert problem["status"] == 502 and problem["title"] == "Bad Gateway"
    assert problem["detail"] == "reader failed: bad reply: upstream model crashed midway"


def test_answer_without_a_reader_is_503(tmp_path):
    server = ApiServer(tmp_path, {"PILAR_READER_BASE_URL": "", "PILAR_LLM_BASE_URL": ""}).start()
    try:
        with server.client() as c:
            r = c.post("/v1/answer", json={"question": KANPUR})
            s = c.post("/v1/answer", json={"question": KANPUR, "stream": True})
            e = c.post("/v1/eval", json={"questions": [{"id": "1", "question": KANPUR,
                                                        "answers": ["Ratan Planet"]}],
                                         "reader": True})
    finally:
        server.stop()
    for resp in (r, s, e):
        assert resp.status_code == 503
        assert resp.headers["content-type"] == "application/problem+json"
        assert resp.json()["detail"].startswith("no reader is configured: set PILAR_LLM_BASE_URL")


# -- evaluation jobs ------------------------------------------------------------

EVAL_QUESTIONS = [  # (qid, question, stored file of the gold document, answer)
    ("nt-95", "how long was the race in the all-africa games (distance)?", "203-189.html",
     "10,000 m"),
    ("nt-2891", "what is the tallest building in kanpur?", "204-541.html", "Ratan Planet"),
    ("nt-13", "what was the only year keene won class aa?", "204-133.html", "1999-2000"),
]
"""Three questions on the served documents (two in ``default``, one in ``alpha``)."""


def _gold_docs(served) -> dict[str, str]:
    """Stored file name -> doc id (uploaded files are stored under new names)."""
    files = served["job"]["files"] + served["alpha_job"]["files"]
    return {f["name"]: f["doc_id"] for f in files if f["doc_id"]}


def _eval_tsv(served) -> str:
    gold = _gold_docs(served)
    return "qid\tquestion\tdoc_id\tanswers\n" + "".join(
        f"{qid}\t{q}\t{gold[name]}\t{a}\n" for qid, q, name, a in EVAL_QUESTIONS)


def _figures_in_unit_range(report: dict) -> None:
    for group in report["figures"].values():
        for name, value in group.items():
            assert 0.0 <= value <= 1.0, (name, value)


def test_eval_job_reports_progress_and_the_report(served):
    full = served["full"]
    tsv = served["inbox"] / "questions.tsv"
    tsv.write_text(_eval_tsv(served), encoding="utf-8")
    r = full.post("/v1/eval", json={"questions_path": str(tsv), "budget_tokens": 512, "k": 3})
    assert r.status_code == 202, r.text
    accepted = r.json()
    job = wait_job(full, accepted["job_id"])
    assert job["kind"] == "eval" and job["state"] == "done", job
    assert job["progress"] == {"done": 3, "total": 3} and job["collections"] is None
    report = job["report"]
    assert report["questions"] == str(tsv.resolve()) and report["budget"] == 512
    assert report["counts"] == {"all": 3} and [row["qid"] for row in report["rows"]] == [
        "nt-95", "nt-2891", "nt-13"]
    figures = report["figures"]["all"]
    assert {"recall@1", "recall@10", "MRR@10", "delivery@512"} <= set(figures)
    assert figures["recall@10"] == 1.0  # every gold page is stored and ranked
    assert "EM" not in figures and any("reader" in n for n in report["notes"])
    _figures_in_unit_range(report)
    # the events stream of the job ends with the same record
    with full.stream("GET", accepted["events"]) as ev:
        events = _sse("".join(ev.iter_text()))
    assert events[-1][0] == "end" and events[-1][1]["report"] == report
    # with the reader (the stub answers "Ratan Tower [1]" to each): answer figures too
    inline = [{"id": "k", "question": KANPUR, "answers": ["Ratan Planet"],
               "gold_doc": _gold_docs(served)["204-541.html"]},
              {"id": "f", "question": f"FAULT-500 {KANPUR}", "answers": ["Ratan Planet"]}]
    r = full.post("/v1/eval", json={"questions": inline, "budget_tokens": 512, "k": 3,
                                    "reader": True})
    job = wait_job(full, r.json()["job_id"])
    assert job["state"] == "done", job
    rows = {row["qid"]: row["figures"] for row in job["report"]["rows"]}
    # "ratan tower" vs "ratan planet": 5 edits over 12 characters, under the 0.5 threshold
    assert rows["k"]["EM"] == 0.0 and rows["k"]["ANLS"] == pytest.approx(1 - 5 / 12)
    said = full.post("/v1/answer", json={"question": KANPUR, "budget_tokens": 512, "k": 3}).json()
    held = "ratan planet" in " ".join(said["citations"][0]["text"].lower().split())
    assert rows["k"]["citation support"] == float(held) and rows["k"]["recall@1"] == 1.0
    assert "EM" not in rows["f"]  # the reader failed on it: counted in the notes
    assert any("failed on 1 question" in n for n in job["report"]["notes"])
    _figures_in_unit_range(job["report"])


def test_eval_requests_are_checked_at_the_boundary(served):
    full = served["full"]
    one = [{"id": "1", "question": KANPUR, "answers": ["Ratan Planet"]}]
    cases = [
        ({"questions_path": str(PDF)}, 403),                                   # outside the roots
        ({"questions_path": str(served["inbox"] / "nope.tsv")}, 404),
        ({"questions_path": str(served["inbox"] / "escape" / PDF.name)}, 403),  # a symlink out
        ({"questions_path": str(CORPUS / "204-541.html")}, 422),  # not a questions file
        ({}, 422), ({"questions": one, "questions_path": str(CORPUS)}, 422),
        ({"questions": [{"id": "1", "question": "x", "answers": []}]}, 422),
        ({"questions": one, "budget_tokens": 10}, 422),
    ]
    for body, status in cases:
        r = full.post("/v1/eval", json=body)
        assert r.status_code == status, (body, r.text)
        assert r.headers["content-type"] == "application/problem+json"


def test_eval_with_a_limited_key_reads_only_its_collections(served):
    server, full = served["server"], served["full"]
    gold = _gold_docs(served)
    questions = [{"id": qid, "question": q, "answers": [a], "gold_doc": gold[name]}
                 for qid, q, name, a in EVAL_QUESTIONS]
    everyone = full.post("/v1/eval", json={"questions": questions, "k": 3}).json()
    with server.client(ALPHA) as alpha:
        mine = alpha.post("/v1/eval", json={"questions": questions, "k": 3}).json()
        job = wait_job(alpha, mine["job_id"])
        assert alpha.get(f"/v1/jobs/{everyone['job_id']}").status_code == 404
        narrowed = alpha.post("/v1/eval", json={"questions": questions,
                                                "collections": ["default"]}).json()
        empty = wait_job(alpha, narrowed["job_id"])
    assert wait_job(full, mine["job_id"])["collections"] == ["alpha"]
    assert job["state"] == "done" and job["collections"] == ["alpha"]
    text = json.dumps(job)
    assert not re.search("|".join(_ids(served["job"])), text), text[:500]
    rows = {row["qid"]: row["figures"] for row in job["report"]["rows"]}
    assert rows["nt-13"]["recall@10"] == 1.0  # alpha's own page
    assert rows["nt-95"]["recall@10"] == rows["nt-2891"]["recall@10"] == 0.0
    # asking for a collection outside the key reads nothing at all
    assert empty["collections"] == [] and all(
        row["figures"]["recall@10"] == 0.0 for row in empty["report"]["rows"])


# -- a key limited to a collection sees nothing of the others -------------------

def _requests(ids: dict) -> dict[tuple[str, str], list[dict]]:
    """Requests for every operation of the API, naming things of ``default``
    (a new route adds its requests here: the walk fails on a route it lacks)."""
    d, page, ent, job = ids["doc"], f"{ids['doc']}:1", ids["entity"], ids["job"]
    return {
        ("get", "/healthz"): [{}], ("get", "/readyz"): [{}],
        ("get", "/v1/documents"): [{}, {"params": {"collection": "default"}}],
        ("post", "/v1/documents"): [{"files": [("files", ("a.html", ids["html"]))],
                                     "data": {"collection": "default"}}],
        ("post", "/v1/documents/paths"): [{"json": {"paths": [ids["path"]]}}],
        ("get", "/v1/documents/{doc_id}"): [{"url": f"/v1/documents/{d}"}],
        ("delete", "/v1/documents/{doc_id}"): [{"url": f"/v1/documents/{d}"}],
        ("get", "/v1/jobs/{job_id}"): [{"url": f"/v1/jobs/{job}"}],
        ("get", "/v1/jobs/{job_id}/events"): [{"url": f"/v1/jobs/{job}/events"}],
        ("post", "/v1/search"): [{"json": {"query": ids["query"], "budget_tokens": 800}},
                                 {"json": {"query": ids["query"], "doc_ids": [d],
                                           "collections": ["default"]}}],
        ("get", "/v1/tools"): [{}],
        ("post", "/v1/answer"): [{"json": {"question": ids["query"], "budget_tokens": 800}},
                                 {"json": {"question": ids["query"], "doc_ids": [d],
                                           "collections": ["default"]}},
                                 {"json": {"question": ids["query"], "stream": True}}],
        ("post", "/v1/eval"): [{"json": {"questions": [{"id": "q", "question": ids["query"],
                                                        "answers": ["x"], "gold_doc": d}]}}],
        ("get", "/v1/pages/{page_id}"): [{"url": f"/v1/pages/{page}"}],
        ("get", "/v1/pages/{page_id}/image"): [{"url": f"/v1/pages/{page}/image"}],
        ("post", "/v1/cypher"): [{"json": {"query": "MATCH (d:Document) RETURN d"}}],
        ("get", "/v1/entities"): [{"params": {"q": ids["entity_name"]}}],
        ("get", "/v1/entities/{entity_id}"): [{"url": f"/v1/entities/{ent}"}],
        ("get", "/v1/entities/{entity_id}/neighborhood"): [
            {"url": f"/v1/entities/{ent}/neighborhood", "params": {"depth": 3}}],
    }


def test_limited_key_gets_nothing_of_other_collections_on_any_route(served):
    from pilar import Pilar

    server, full = served["server"], served["full"]
    default_ids = _ids(served["job"])
    alpha_ids = _ids(served["alpha_job"])
    # an entity only documents of `default` use (read through the facade)
    reader = Pilar(settings=_settings_of(server.home, server.env))
    found = full.get("/v1/entities", params={"q": "tower"}).json()["items"]
    uses = reader.entity_documents([e["entity_id"] for e in found])
    private = [e for e in found if uses[e["entity_id"]] and
               set(uses[e["entity_id"]]) <= set(default_ids)]
    assert private
    ids = {"doc": default_ids[1], "entity": private[0]["entity_id"],
           "entity_name": private[0]["name"], "job": served["job"]["job_id"],
           "html": (CORPUS / "204-541.html").read_bytes(), "path": str(CORPUS / "204-541.html"),
           "query": "tallest building in kanpur"}
    schema = full.get("/openapi.json").json()
    operations = {(m, p) for p, item in schema["paths"].items() for m in item}
    requests = _requests(ids)
    assert operations == set(requests), "every route must be walked"
    leaked = re.compile("|".join(default_ids + [re.escape(private[0]["entity_id"])]))
    with server.client(ALPHA) as alpha:
        for (method, path), variants in sorted(requests.items()):
            for kw in variants:
                kw = dict(kw)
                url = kw.pop("url", path)
                r = alpha.request(method.upper(), url, **kw)
                assert r.status_code < 500, (method, url, r.text[:300])
                assert not leaked.search(r.text), (method, url, r.text[:300])
                if "{" in path and path != "/v1/jobs/{job_id}/events":
                    assert r.status_code in (403, 404), (method, url, r.status_code)
        # the alpha key does see its own collection
        own = alpha.get("/v1/documents").json()
        assert [d["doc_id"] for d in own["items"]] == alpha_ids
        hit = alpha.post("/v1/search", json={"query": ids["query"], "budget_tokens": 400}).json()
        assert {c["doc_id"] for c in hit["packet"]["citations"]} == set(alpha_ids)
        said = alpha.post("/v1/answer", json={"question": ids["query"], "budget_tokens": 400})
        assert {c["citation"]["doc_id"] for c in said.json()["citations"]} == set(alpha_ids)
        assert {c["doc_id"] for c in said.json()["packet"]["citations"]} == set(alpha_ids)
    assert full.get(f"/v1/documents/{default_ids[1]}").status_code == 200  # not deleted


def _settings_of(home, env: dict[str, str]):
    """The Settings a server with ``env`` runs on, for a reader of its stores."""
    from pilar.config import Settings

    return Settings(home=home, graph=env["PILAR_GRAPH"], index=env["PILAR_INDEX"],
                    neo4j_uri=env.get("NEO4J_URI"), elasticsearch_url=env.get("ELASTICSEARCH_URL"),
                    elasticsearch_index=env.get("PILAR_ELASTICSEARCH_INDEX", "pilar"))


# -- MCP: the SDK's own client, over streamable HTTP and stdio ------------------------

@pytest.fixture
def anyio_backend():
    return "asyncio"


async def _mcp_search(client_target) -> tuple[list[str], dict]:
    from mcp import Client

    async with Client(client_target) as client:
        tools = await client.list_tools()
        result = await client.call_tool("search", {"query": "tallest building in kanpur",
                                                   "budget_tokens": 400, "k": 3})
    return sorted(t.name for t in tools.tools), result


def _structured(result) -> dict:
    assert not result.is_error, result
    return result.structured_content


@pytest.mark.anyio
async def test_mcp_over_streamable_http(served):
    import httpx2
    from mcp.client.streamable_http import streamable_http_client

    url = served["server"].url + "/mcp"
    async with httpx2.AsyncClient(headers={"X-API-Key": FULL}, timeout=300) as http:
        names, result = await _mcp_search(streamable_http_client(url, http_client=http))
    assert names == ["answer", "cypher", "get_page", "search"]
    packet = _structured(result)["packet"]
    assert packet["citations"] and 0 < packet["tokens"] <= 400
    async with httpx2.AsyncClient(timeout=60) as anon:
        r = await anon.post(url, json={"jsonrpc": "2.0", "id": 1, "method": "tools/list"})
    assert r.status_code == 401 and r.headers["content-type"] == "application/problem+json"
    async with httpx2.AsyncClient(headers={"X-API-Key": ALPHA}, timeout=300) as http:
        _, limited = await _mcp_search(streamable_http_client(url, http_client=http))
    cited = {c["doc_id"] for c in _structured(limited)["packet"]["citations"]}
    assert cited == set(_ids(served["alpha_job"]))
    # the reader's answer (the stub's), and its faults as tool errors
    from mcp import Client

    async with httpx2.AsyncClient(headers={"X-API-Key": ALPHA}, timeout=300) as http:
        async with Client(streamable_http_client(url, http_client=http)) as client:
            said = await client.call_tool("answer", {"question": KANPUR, "budget_tokens": 400})
            failed = await client.call_tool("answer", {"question": f"FAULT-500 {KANPUR}"})
    body = _structured(said)
    assert body["short"] == "Ratan Tower" and body["citations"][0]["n"] == 1
    assert {c["citation"]["doc_id"] for c in body["citations"]} <= set(_ids(served["alpha_job"]))
    assert failed.is_error and "reader failed: HTTP error 500" in failed.content[0].text


@pytest.mark.anyio
async def test_mcp_over_stdio(served):
    from mcp import StdioServerParameters

    server = served["server"]
    params = StdioServerParameters(command=sys.executable, args=["-m", "pilar", "mcp"],
                                   env={k: v for k, v in server.env.items()}, cwd=str(server.home))
    names, result = await _mcp_search(params)
    assert names == ["answer", "cypher", "get_page", "search"]
    body = _structured(result)
    assert body["packet"]["citations"] and body["pages"]


def test_restart_marks_unfinished_jobs_failed_and_hides_nothing_half_written(tmp_path):
    server = ApiServer(tmp_path, {"PILAR_API_KEYS": FULL}).start()
    pdfs = [FIXTURES / "pdf" / n for n in ("diesel_engines-p1-3.pdf", "204-268.pdf",
                                           "anticlockwise_table_1.pdf")]
    with server.client(FULL) as c:
        job = _upload(c, pdfs, "default")
    server.stop(kill=True)  # a crash while the job runs (the first PDF takes seconds)
    again = ApiServer(tmp_path, {"PILAR_API_KEYS": FULL}).start()
    try:
        with again.client(FULL) as c:
            record = c.get(f"/v1/jobs/{job['job_id']}").json()
            docs = c.get("/v1/documents").json()["items"]
    finally:
        again.stop()
    assert record["state"] == "failed" and "server stopped" in record["reason"]
    statuses = [f["status"] for f in record["files"]]
    assert "failed" in statuses and set(statuses) <= {"ingested", "failed"}
    assert all(f["reason"] for f in record["files"] if f["status"] == "failed")
    assert [d["doc_id"] for d in docs] == [f["doc_id"] for f in record["files"]
                                           if f["status"] == "ingested"]
