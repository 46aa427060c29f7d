"""The MCP endpoint: the SDK's own client, over streamable HTTP (with keys)
and over stdio."""

from __future__ import annotations

import sys

import pytest

from tests.api.shared import (ALPHA, ALPHA_FILES, CORPUS, DEFAULT_FILES, FULL, KANPUR, TEAM_A,
                               doc_ids)


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


def _tools_for(served, unlimited: bool = True) -> list[str]:
    """The tools a key sees: ``cypher`` on Neo4j for a key of every collection;
    the jobs' tools (the served server has ingest roots)."""
    cypher = ["cypher"] if served["backend"] == "neo4j" and unlimited else []
    return sorted(["answer", "get_page", "search", "ingest_paths", "get_job", *cypher])


async def _refused(client, tool: str, arguments: dict):
    """The JSON-RPC error of a call (an MCPError), failing if the call succeeds."""
    from mcp.shared.exceptions import MCPError

    with pytest.raises(MCPError) as caught:
        await client.call_tool(tool, arguments)
    return caught.value


@pytest.mark.anyio
async def test_mcp_over_streamable_http(served):
    import httpx2
    from mcp.client.streamable_http import streamable_http_client

    url = served["server"].url + "/mcp"
    async with httpx2.AsyncClient(headers={"X-API-Key": FULL}, timeout=300) as http:
        names, result = await _mcp_search(streamable_http_client(url, http_client=http))
    assert names == _tools_for(served)
    packet = _structured(result)["packet"]
    assert packet["citations"] and 0 < packet["tokens"] <= 400
    async with httpx2.AsyncClient(timeout=60) as anon:
        r = await anon.post(url, json={"jsonrpc": "2.0", "id": 1, "method": "tools/list"})
    assert r.status_code == 401 and r.headers["content-type"] == "application/problem+json"
    async with httpx2.AsyncClient(headers={"X-API-Key": ALPHA}, timeout=300) as http:
        names, limited = await _mcp_search(streamable_http_client(url, http_client=http))
    assert names == _tools_for(served, unlimited=False)
    cited = {c["doc_id"] for c in _structured(limited)["packet"]["citations"]}
    assert cited == set(doc_ids(served["alpha_job"]))
    # the reader's answer (the stub's), and its faults as JSON-RPC errors with the problem
    from mcp import Client

    async with httpx2.AsyncClient(headers={"X-API-Key": ALPHA}, timeout=300) as http:
        async with Client(streamable_http_client(url, http_client=http)) as client:
            said = await client.call_tool("answer", {"question": KANPUR, "budget_tokens": 400})
            failed = await _refused(client, "answer", {"question": f"FAULT-500 {KANPUR}"})
    body = _structured(said)
    assert body["short"] == "Ratan Tower" and body["citations"][0]["n"] == 1
    assert {c["citation"]["doc_id"] for c in body["citations"]} <= set(doc_ids(served["alpha_job"]))
    assert failed.code == -32603 and failed.message.startswith("reader failed: HTTP error 500")
    assert (failed.data["status"], failed.data["detail"]) == (502, failed.message)


@pytest.mark.anyio
async def test_a_wrong_key_is_told_to_the_mcp_client(served):
    """The SDK's client shows the gate's words, not "Server returned an error response"."""
    import httpx2
    from mcp import Client
    from mcp.client.streamable_http import streamable_http_client
    from mcp.shared.exceptions import MCPError

    url = served["server"].url + "/mcp"
    async with httpx2.AsyncClient(headers={"X-API-Key": "wrong-key-0000000000"},
                                  timeout=60) as http:
        with pytest.raises(Exception) as caught:
            async with Client(streamable_http_client(url, http_client=http)):
                pass
    found = caught.value
    while isinstance(found, BaseExceptionGroup):
        found = found.exceptions[0]
    assert isinstance(found, MCPError), repr(found)
    assert found.message == ("a valid API key is needed (Authorization: Bearer KEY or "
                             "X-API-Key: KEY)")
    assert found.data["status"] == 401


@pytest.mark.anyio
@pytest.mark.parametrize("header,value,status,detail", [
    ("host", "evil.example:80", 421, "the Host header names a host this server does not "
                                     "answer to (PILAR_API_ALLOWED_HOSTS)"),
    ("origin", "http://evil.example", 403, "the Origin header names an origin this server "
                                           "does not accept (PILAR_API_ALLOWED_HOSTS)")])
async def test_host_and_origin_refusals_are_problems(served, header, value, status, detail):
    import httpx2

    url = served["server"].url + "/mcp"
    async with httpx2.AsyncClient(headers={"X-API-Key": FULL}, timeout=60) as http:
        r = await http.post(url, headers={header: value, "accept": "application/json, "
                                                                   "text/event-stream"},
                            json={"jsonrpc": "2.0", "id": 1, "method": "tools/list"})
    assert r.status_code == status and r.headers["content-type"] == "application/problem+json"
    assert r.json()["detail"] == detail


@pytest.mark.anyio
async def test_search_text_is_the_numbered_packet(served):
    """An agent reads ``[n] excerpt`` with its source below; the text stays
    within 1.5x the packet's characters (at 512 tokens), and the structured
    content is the whole response."""
    import httpx2
    from mcp import Client
    from mcp.client.streamable_http import streamable_http_client

    url = served["server"].url + "/mcp"
    async with httpx2.AsyncClient(headers={"X-API-Key": FULL}, timeout=300) as http:
        async with Client(streamable_http_client(url, http_client=http)) as client:
            result = await client.call_tool("search", {"query": KANPUR, "budget_tokens": 512})
            tools = {t.name: t for t in (await client.list_tools()).tools}
            unknown = await _refused(client, "search", {"query": KANPUR, "top": 3})
            huge = await _refused(client, "search", {"query": KANPUR, "budget_tokens": 10**23})
    body = _structured(result)
    text = result.content[0].text
    items = body["packet"]["items"]
    assert items and text.startswith("[1] ")
    assert [line.split("] ", 1)[0] + "]" for line in text.splitlines()
            if line.startswith("[")] == [f"[{n}]" for n in range(1, len(items) + 1)]
    first = items[0]["citation"]
    assert f"    -- {first['source']}, page {first['page']}" in text
    assert len(text) <= 1.5 * len(body["packet"]["text"]), (len(text), len(body["packet"]["text"]))
    schema = tools["search"].input_schema
    assert schema["additionalProperties"] is False
    assert schema["properties"]["budget_tokens"]["anyOf"][0]["maximum"] == 32_768
    assert (unknown.code, unknown.message) == (-32602, "top: Extra inputs are not permitted")
    assert huge.message.startswith("budget_tokens: budget must be at most 32,768 tokens")


@pytest.mark.anyio
async def test_mcp_over_stdio(served):
    from mcp import StdioServerParameters

    server = served["server"]
    params = StdioServerParameters(command=sys.executable, args=["-m", "pilar", "mcp"],
                                   env={k: v for k, v in server.env.items()}, cwd=str(server.home))
    names, result = await _mcp_search(params)
    assert names == _tools_for(served)
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
            refused = [await _refused(client, tool, {arg: "kanpur", "collections": [bad]})
                       for tool, arg in (("search", "query"), ("answer", "question"))
                       for bad in ("a\x01b", "team-a\u200b", "")]
            found = await client.call_tool("search", {"query": KANPUR, "budget_tokens": 400})
    for error, bad in zip(refused, ["a\x01b", "team-a\u200b", ""] * 2):
        assert f"collection {bad!r}" in error.message and error.data["status"] == 422, error
    body = _structured(found)
    sources = {p["source"] for p in body["pages"]} | {c["source"]
                                                     for c in body["packet"]["citations"]}
    assert sources and str(served["server"].home) not in str(body)
    assert sources <= {p.name for p in DEFAULT_FILES + ALPHA_FILES}


@pytest.mark.anyio
async def test_an_agent_queues_server_files_and_follows_the_job(served):
    """``ingest_paths`` queues a job of files under the key's ingest roots (as
    ``POST /v1/documents/paths``) and returns its id; ``get_job`` reads it;
    another key's collection or job is refused as over REST."""
    import asyncio
    import shutil

    import httpx2
    from mcp import Client
    from mcp.client.streamable_http import streamable_http_client

    url = served["server"].url + "/mcp"
    shutil.copy(CORPUS / "204-903.html", served["roots"] / "team-a" / "agent.html")
    given = str(served["roots"] / "team-a" / "agent.html")
    async with httpx2.AsyncClient(headers={"X-API-Key": TEAM_A}, timeout=300) as http:
        async with Client(streamable_http_client(url, http_client=http)) as client:
            queued = _structured(await client.call_tool(
                "ingest_paths", {"paths": [given], "collection": "team-a"}))
            job = _structured(await client.call_tool("get_job", {"job_id": queued["job_id"]}))
            for _ in range(600):
                if job["state"] in ("done", "failed", "cancelled"):
                    break
                await asyncio.sleep(0.5)
                job = _structured(await client.call_tool("get_job",
                                                         {"job_id": queued["job_id"]}))
            outside = await _refused(client, "ingest_paths",
                                     {"paths": [given], "collection": "default"})
            missing = await _refused(client, "ingest_paths",
                                     {"paths": [given + ".gone"], "collection": "team-a"})
    async with httpx2.AsyncClient(headers={"X-API-Key": ALPHA}, timeout=300) as http:
        async with Client(streamable_http_client(url, http_client=http)) as client:
            hidden = await _refused(client, "get_job", {"job_id": queued["job_id"]})
    assert queued["state"] == "queued" and queued["href"] == f"/v1/jobs/{queued['job_id']}"
    assert job["state"] == "done" and job["counts"] == {"ingested": 1}, job
    (entry,) = job["files"]
    assert entry["name"] == given and entry["n_pages"] == 1
    assert outside.data["status"] == 403 and missing.data["status"] == 404
    assert (hidden.code, hidden.message, hidden.data["status"]) == (-32602, "no such job", 404)
    rest = served["server"].client(TEAM_A)
    assert rest.get(f"/v1/jobs/{queued['job_id']}").json()["files"] == job["files"]
    assert rest.delete(f"/v1/documents/{entry['doc_id']}").json()["deleted"] is True
    rest.close()
