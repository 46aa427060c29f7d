"""Security of the served API: keys (a key limited to a collection sees
nothing of the others on any route), read-only Cypher, problem+json errors
without traces, CORS off, server paths only under the ingest roots."""

from __future__ import annotations

import re

from tests.api.shared import ALPHA, CORPUS, FULL, PDF, doc_ids, settings_of
from tests.serving import wait_job


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
        ("get", "/v1/jobs"): [{}, {"params": {"state": ["done", "cancelled"]}}],
        ("get", "/v1/jobs/{job_id}"): [{"url": f"/v1/jobs/{job}"}],
        ("delete", "/v1/jobs/{job_id}"): [{"url": f"/v1/jobs/{job}"}],
        ("get", "/v1/jobs/{job_id}/events"): [{"url": f"/v1/jobs/{job}/events"}],
        ("post", "/v1/search"): [{"json": {"query": ids["query"], "budget_tokens": 800}},
                                 {"json": {"query": ids["query"], "doc_ids": [d],
                                           "collections": ["default"]}}],
        ("get", "/v1/tools"): [{}],
        ("get", "/v1/collections"): [{}],
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
    default_ids = doc_ids(served["job"])
    alpha_ids = doc_ids(served["alpha_job"])
    # an entity only documents of `default` use (read through the facade)
    reader = Pilar(settings=settings_of(server.home, server.env))
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
