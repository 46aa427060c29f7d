"""Evaluation jobs over the served API: progress and the report, requests
checked at the boundary, a limited key reading only its collections."""

from __future__ import annotations

import json
import re

import pytest

from tests.api.shared import ALPHA, CORPUS, KANPUR, PDF, doc_ids, sse_events
from tests.serving import wait_job


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
        events = sse_events("".join(ev.iter_text()))
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
        # a collection outside the key is told of as one that does not exist
        told = [alpha.post("/v1/eval", json={"questions": questions, "collections": [name]})
                for name in ("default", "nope")]
    assert [(r.status_code, r.json()["detail"]) for r in told] == [
        (404, f"no documents in collection {name!r}: list them with `pilar docs` or GET "
              "/v1/documents") for name in ("default", "nope")]
    assert wait_job(full, mine["job_id"])["collections"] == ["alpha"]
    assert job["state"] == "done" and job["collections"] == ["alpha"]
    text = json.dumps(job)
    assert not re.search("|".join(doc_ids(served["job"])), text), text[:500]
    rows = {row["qid"]: row["figures"] for row in job["report"]["rows"]}
    assert rows["nt-13"]["recall@10"] == 1.0  # alpha's own page
    assert rows["nt-95"]["recall@10"] == rows["nt-2891"]["recall@10"] == 0.0
