"""Answers over the served API (the reader is the fault-injection stub):
citations resolved to supports, streamed deltas, reader faults as
problem+json, and no reader configured."""

from __future__ import annotations

import pytest

from tests.api.shared import KANPUR, READER_TIMEOUT, doc_ids, sse_events
from tests.serving import ApiServer


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
    assert cite["citation"]["doc_id"] in doc_ids(served["job"]) and cite["citation"]["page"] >= 1
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
            events = sse_events("".join(r.iter_text()))
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
        events = sse_events("".join(r.iter_text()))
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
