"""``POST /v1/cypher`` and the MCP ``cypher`` tool on the served Neo4j: every
refusal a 422 problem (a tool error over MCP) naming what was refused, a
query past its timeout a 422, a result over the byte cap cut with a message.
The kinds refused are tested one by one in tests/test_cypher_guard.py."""

from __future__ import annotations

import os

import pytest

from tests.api.shared import FULL

SLOW = "UNWIND range(1, 100000000) AS x WITH x WHERE x % 7 = 3 RETURN count(x) AS n"
REFUSED = {
    "LOAD CSV FROM 'file:///etc/passwd' AS l RETURN l":
        "query refused: LOAD CSV is not allowed (it reads files and URLs)",
    "SHOW USERS": "query refused: administration commands are not allowed",
    "SHOW PROCEDURES": "query refused: SHOW commands are not allowed",
    "MERGE (n:Hack {x: 1}) RETURN n": "query refused: writes are not allowed",
}


@pytest.fixture
def anyio_backend():
    return "asyncio"


def embedded(served) -> bool:
    """On the embedded store every Cypher query is a 501 problem naming
    Neo4j (nothing is run): asserted for the queries of each test."""
    if served["backend"] != "neo4j":
        for query in (*REFUSED, SLOW, "RETURN 1 AS one"):
            r = served["full"].post("/v1/cypher", json={"query": query})
            assert (r.status_code, r.headers["content-type"]) == (501, "application/problem+json")
            assert "neo4j" in r.json()["detail"].lower()
        return True
    return False


def test_refusals_and_timeouts_are_422_problems(served):
    if embedded(served):
        return
    full = served["full"]
    for query, detail in REFUSED.items():
        r = full.post("/v1/cypher", json={"query": query})
        assert (r.status_code, r.headers["content-type"]) == (422, "application/problem+json")
        assert r.json()["detail"] == detail
    r = full.post("/v1/cypher", json={"query": SLOW, "timeout": 0.5})
    assert r.status_code == 422
    assert r.json()["detail"] == ("query stopped: it ran past its timeout of 0.5 s "
                                  "(the server ended it)")
    assert full.post("/v1/cypher", json={"query": "MATCH (n:Hack) RETURN count(n) AS c"}
                     ).json()["rows"] == [{"c": 0}]


def test_job_records_are_not_read_through_cypher(served):
    """The served uploads left ``Job`` nodes on the server (owner digests,
    server paths): even an unlimited key reads none of them, by label or
    without one, and gets a 422 problem saying why; evidence is read."""
    if embedded(served):
        return
    import neo4j

    with neo4j.GraphDatabase.driver(os.environ["NEO4J_URI"]) as driver:
        records, _, _ = driver.execute_query("MATCH (j:Job) RETURN count(j) AS c")
    assert records[0]["c"] >= 2  # the fixture's two uploads
    full = served["full"]
    for query, detail in {
            "MATCH (j:Job) RETURN j.owner, j.record": "query refused: label Job is not part of "
            "the evidence graph (its nodes are the server's own records)",
            "MATCH (n) WHERE n.owner IS NOT NULL RETURN n.owner":
            "query refused: a node must be matched by its label (MATCH (n:Page) ...), not by "
            "id or unlabelled"}.items():
        r = full.post("/v1/cypher", json={"query": query})
        assert (r.status_code, r.headers["content-type"]) == (422, "application/problem+json")
        assert r.json()["detail"] == detail
    docs = full.post("/v1/cypher", json={"query": "MATCH (d:Document) RETURN count(d) AS c"})
    assert docs.json()["rows"] == [{"c": full.get("/v1/documents").json()["total"]}] == [{"c": 4}]


def test_a_result_over_the_byte_cap_is_cut_with_a_message(served):
    if embedded(served):
        return
    r = served["full"].post("/v1/cypher", json={
        "query": "UNWIND range(1, 200000) AS i RETURN collect(i) AS all"})
    assert r.status_code == 200
    body = r.json()
    assert (body["columns"], body["rows"], body["truncated"]) == (["all"], [], True)
    assert body["message"].startswith("cut at the byte cap of 1,048,576 bytes of rows "
                                      "(PILAR_CYPHER_MAX_BYTES) after 0 rows")
    whole = served["full"].post("/v1/cypher", json={"query": "RETURN 1 AS one"}).json()
    assert whole == {"columns": ["one"], "rows": [{"one": 1}], "truncated": False, "message": None}


@pytest.mark.anyio
async def test_mcp_cypher_refusal_is_a_json_rpc_error(served):
    import httpx2
    from mcp import Client
    from mcp.client.streamable_http import streamable_http_client
    from mcp.shared.exceptions import MCPError

    url = served["server"].url + "/mcp"
    async with httpx2.AsyncClient(headers={"X-API-Key": FULL}, timeout=300) as http:
        async with Client(streamable_http_client(url, http_client=http)) as client:
            with pytest.raises(MCPError) as caught:
                await client.call_tool("cypher", {
                    "query": "LOAD CSV FROM 'file:///etc/passwd' AS l RETURN l"})
            fine = None
            if served["backend"] == "neo4j":
                fine = await client.call_tool("cypher", {"query": "RETURN 1 AS one"})
    refused = caught.value
    if served["backend"] != "neo4j":  # the embedded store: the 501 (and not listed)
        assert refused.data["status"] == 501 and "neo4j" in refused.message.lower()
        return
    assert refused.data["status"] == 422 and refused.message.endswith(
        "query refused: LOAD CSV is not allowed (it reads files and URLs)")
    assert fine.structured_content["rows"] == [{"one": 1}]
