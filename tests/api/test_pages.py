"""Bounded page reads over the served API: ``GET /v1/pages/{id}`` gives its
supports a slice at a time (``offset``/``limit``, ``supports_total``,
``next_offset``), as does the MCP ``get_page`` tool; every slice together is
the whole page, in order."""

from __future__ import annotations

import pytest

from tests.api.shared import FULL, doc_ids


@pytest.fixture
def anyio_backend():
    return "asyncio"


def _slices(full, page_id: str, limit: int) -> list[dict]:
    """Every slice of the page's supports, following ``next_offset``."""
    slices = [full.get(f"/v1/pages/{page_id}", params={"limit": limit}).json()]
    while slices[-1]["next_offset"] is not None:
        slices.append(full.get(f"/v1/pages/{page_id}", params={
            "limit": limit, "offset": slices[-1]["next_offset"]}).json())
    return slices


def test_supports_come_in_slices_that_make_the_whole_page(served):
    full = served["full"]
    page_id = f"{doc_ids(served['job'])[0]}:1"
    whole = full.get(f"/v1/pages/{page_id}", params={"limit": 1000}).json()
    total = whole["supports_total"]
    assert total == len(whole["supports"]) > 3 and whole["next_offset"] is None
    default = full.get(f"/v1/pages/{page_id}").json()
    assert (default["offset"], default["limit"]) == (0, 200)
    slices = _slices(full, page_id, 3)
    assert len(slices) == -(-total // 3)
    assert [s["offset"] for s in slices] == list(range(0, total, 3))
    assert all(len(s["supports"]) == 3 for s in slices[:-1]) and slices[-1]["next_offset"] is None
    assert [x["support_id"] for s in slices for x in s["supports"]] == [
        x["support_id"] for x in whole["supports"]]
    for s in slices:  # each slice's headers are those of its own supports
        assert set(s["headers"]) <= {x["support_id"] for x in s["supports"]}
        assert s["headers"] == {k: v for k, v in whole["headers"].items()
                                if k in {x["support_id"] for x in s["supports"]}}
        assert s["text"] == whole["text"] and s["supports_total"] == total
    past = full.get(f"/v1/pages/{page_id}", params={"offset": total + 5}).json()
    assert past["supports"] == [] and past["next_offset"] is None
    for bad in ({"limit": 0}, {"limit": 1001}, {"offset": -1}):
        r = full.get(f"/v1/pages/{page_id}", params=bad)
        assert r.status_code == 422 and r.headers["content-type"] == "application/problem+json"


@pytest.mark.anyio
async def test_mcp_get_page_takes_offset_and_limit(served):
    import httpx2
    from mcp import Client
    from mcp.client.streamable_http import streamable_http_client
    from mcp.shared.exceptions import MCPError

    full = served["full"]
    page_id = f"{doc_ids(served['job'])[0]}:1"
    rest = full.get(f"/v1/pages/{page_id}", params={"offset": 2, "limit": 2}).json()
    url = served["server"].url + "/mcp"
    async with httpx2.AsyncClient(headers={"X-API-Key": FULL}, timeout=300) as http:
        async with Client(streamable_http_client(url, http_client=http)) as client:
            got = await client.call_tool("get_page", {"page_id": page_id, "offset": 2, "limit": 2})
            with pytest.raises(MCPError) as bad:
                await client.call_tool("get_page", {"page_id": page_id, "limit": 5000})
    assert not got.is_error
    assert got.structured_content == rest
    assert bad.value.message == "limit: Input should be less than or equal to 1000"
