"""The MCP endpoint: the SDK's own client, over streamable HTTP (with keys)
and over stdio."""

from __future__ import annotations

import sys

import pytest

from tests.api.shared import ALPHA, ALPHA_FILES, DEFAULT_FILES, FULL, KANPUR, doc_ids


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
    assert cited == set(doc_ids(served["alpha_job"]))
    # the reader's answer (the stub's), and its faults as tool errors
    from mcp import Client

    async with httpx2.AsyncClient(headers={"X-API-Key": ALPHA}, timeout=300) as http:
        async with Client(streamable_http_client(url, http_client=http)) as client:
            said = await client.call_tool("answer", {"question": KANPUR, "budget_tokens": 400})
            failed = await client.call_tool("answer", {"question": f"FAULT-500 {KANPUR}"})
    body = _structured(said)
    assert body["short"] == "Ratan Tower" and body["citations"][0]["n"] == 1
    assert {c["citation"]["doc_id"] for c in body["citations"]} <= set(doc_ids(served["alpha_job"]))
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


@pytest.mark.anyio
async def test_mcp_refuses_a_bad_collection_name_and_shows_no_server_path(served):
    import httpx2
    from mcp import Client
    from mcp.client.streamable_http import streamable_http_client

    url = served["server"].url + "/mcp"
    async with httpx2.AsyncClient(headers={"X-API-Key": FULL}, timeout=300) as http:
        async with Client(streamable_http_client(url, http_client=http)) as client:
            refused = [await client.call_tool(tool, {arg: "kanpur", "collections": [bad]})
                       for tool, arg in (("search", "query"), ("answer", "question"))
                       for bad in ("a\x01b", "team-a\u200b", "")]
            found = await client.call_tool("search", {"query": KANPUR, "budget_tokens": 400})
    for result, bad in zip(refused, ["a\x01b", "team-a\u200b", ""] * 2):
        assert result.is_error and f"collection {bad!r}" in result.content[0].text, result
    body = _structured(found)
    sources = {p["source"] for p in body["pages"]} | {c["source"]
                                                     for c in body["packet"]["citations"]}
    assert sources and str(served["server"].home) not in str(body)
    assert sources <= {p.name for p in DEFAULT_FILES + ALPHA_FILES}
