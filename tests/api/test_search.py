"""Search and exploration over the served API: cited packets within the
budget, collections, the agent tool's schema, entities and their
neighbourhood."""

from __future__ import annotations

from tests.api.shared import doc_ids


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
    alpha_ids = set(doc_ids(served["alpha_job"]))
    r = served["full"].post("/v1/search", json={"query": "tallest building kanpur",
                                                "budget_tokens": 400, "collections": ["alpha"]})
    body = r.json()
    assert body["pages"] and {p["doc_id"] for p in body["pages"]} <= alpha_ids
    assert {c["doc_id"] for c in body["packet"]["citations"]} <= alpha_ids


def test_tools_schema_is_the_search_request(served):
    [tool] = served["full"].get("/v1/tools").json()
    assert tool["type"] == "function" and tool["function"]["name"] == "search"
    params = tool["function"]["parameters"]
    assert params["required"] == ["query"] and params["additionalProperties"] is False
    budget = params["properties"]["budget_tokens"]
    assert (budget["default"], budget["anyOf"][0]["minimum"], budget["anyOf"][0]["maximum"]) \
        == (None, 32, 32768)  # None: PILAR_BUDGET
    assert params["properties"]["query"]["maxLength"] == 4000  # PILAR_MAX_QUERY_CHARS


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


def test_server_log_is_one_line_per_record(served):
    """The server's stderr holds uvicorn's lines and plain warnings, no
    Rich-wrapped INFO records of the MCP SDK or the model loader."""
    import re

    full = served["full"]
    assert full.post("/v1/search", json={"query": "tallest building kanpur"}).status_code == 200
    init = {"jsonrpc": "2.0", "id": 1, "method": "initialize",
            "params": {"protocolVersion": "2025-03-26", "capabilities": {},
                       "clientInfo": {"name": "test", "version": "1"}}}
    r = full.post("/mcp", json=init, headers={"accept": "application/json, text/event-stream"})
    assert r.status_code == 200, r.text
    lines = served["server"].log.read_text(encoding="utf-8").splitlines()
    assert "Loading SentenceTransformer" not in "\n".join(lines)
    assert [ln for ln in lines if not re.match(r"(INFO|WARNING|ERROR):\s+\S", ln)] == []
