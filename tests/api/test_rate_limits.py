"""Per-key rate limits on the costly routes and MCP tools (PILAR_API_RATE_LIMIT,
the ``limits`` library), and the Host headers ``/mcp`` accepts by default (the
address ``pilar serve --host`` binds), on a real ``pilar serve`` bound to
127.0.0.2 with a limit of 2 calls a minute per key and operation."""

from __future__ import annotations

import re

import httpx
import pytest

from tests.api.shared import CORPUS, upload
from tests.serving import ApiServer, wait_job

KEYS = ("rest-key-0123456789", "other-key-0123456789", "mcp-key-0123456789",
        "setup-key-0123456789")
LIMIT = "2/minute"


@pytest.fixture
def anyio_backend():
    return "asyncio"


@pytest.fixture(scope="module")
def limited(tmp_path_factory):
    server = ApiServer(tmp_path_factory.mktemp("rate-limits"),
                       {"PILAR_API_KEYS": ",".join(KEYS), "PILAR_API_RATE_LIMIT": LIMIT},
                       host="127.0.0.2").start()
    with server.client(KEYS[3]) as setup:
        assert wait_job(setup, upload(setup, [CORPUS / "204-541.html"], "default")["job_id"]
                        )["state"] == "done"
    yield server
    server.stop()


def test_a_key_past_its_limit_gets_429_with_retry_after(limited):
    rest, other = limited.client(KEYS[0]), limited.client(KEYS[1])
    query = {"query": "tallest building in kanpur", "budget_tokens": 400}
    first, second = (rest.post("/v1/search", json=query) for _ in range(2))
    assert first.status_code == second.status_code == 200, first.text
    third = rest.post("/v1/search", json=query)
    assert third.status_code == 429 and third.headers["content-type"] == "application/problem+json"
    assert 1 <= int(third.headers["retry-after"]) <= 60
    assert third.json()["detail"] == (f"rate limit of {LIMIT} for search reached "
                                      f"(PILAR_API_RATE_LIMIT); retry in "
                                      f"{third.headers['retry-after']} s")
    assert other.post("/v1/search", json=query).status_code == 200  # another key: its own count
    assert rest.get("/v1/documents").status_code == 200  # not a costly route
    cypher = [rest.post("/v1/cypher", json={"query": "RETURN 1"}).status_code for _ in range(3)]
    assert cypher == [501, 501, 429]  # one count per operation (no Neo4j here: 501)
    assert limited.client("wrong-key").post("/v1/search", json=query).status_code == 401
    schema = rest.get("/openapi.json").json()["paths"]
    assert "429" in schema["/v1/search"]["post"]["responses"]
    assert "429" in schema["/v1/pages/{page_id}/image"]["get"]["responses"]
    assert "429" not in schema["/v1/documents"]["get"]["responses"]


@pytest.mark.anyio
async def test_mcp_tools_count_with_their_routes(limited):
    import httpx2
    from mcp import Client
    from mcp.client.streamable_http import streamable_http_client
    from mcp.shared.exceptions import MCPError

    rest = limited.client(KEYS[2])
    query = {"query": "tallest building in kanpur", "budget_tokens": 400}
    assert rest.post("/v1/search", json=query).status_code == 200
    async with httpx2.AsyncClient(headers={"X-API-Key": KEYS[2]}, timeout=300) as http:
        async with Client(streamable_http_client(limited.url + "/mcp", http_client=http)) as client:
            allowed = await client.call_tool("search", query)
            with pytest.raises(MCPError) as refused:
                await client.call_tool("search", query)
    assert not allowed.is_error
    assert refused.value.data["status"] == 429
    assert re.fullmatch(rf"rate limit of {LIMIT} for search reached "
                        r"\(PILAR_API_RATE_LIMIT\); retry in \d+ s", refused.value.message)


def test_mcp_accepts_the_served_address_and_refuses_other_hosts(limited):
    body = {"jsonrpc": "2.0", "id": 1, "method": "tools/list"}
    headers = {"X-API-Key": KEYS[1], "Accept": "application/json, text/event-stream"}
    served = httpx.post(limited.url + "/mcp", json=body, headers=headers, timeout=60)
    assert served.status_code == 200 and served.json()["result"]["tools"]
    other = httpx.post(limited.url + "/mcp", json=body, timeout=60,
                       headers={**headers, "Host": f"evil.example:{limited.port}"})
    assert other.status_code == 421
