"""Every operation on every face speaks one request (pilar.query): the same
defaults, the same limits, the same words for a refusal.

Faces: the Python API (``Pilar``), the CLI (Typer, in process), REST (the
real app through Starlette's TestClient), MCP (the SDK's client on the
server in process) and the web page (headless Chromium on the same app served
by uvicorn: its ask form). Operations: search, answer (the stub reader), and
an evaluation where a face has one (the question-free cases; MCP and the web
page have none). The web page sends what its form can hold: no profile but
the listed ones, no collection but the picker's, no document ids.
"""

from __future__ import annotations

import json
import os
import shutil

import anyio
import pytest

from tests.api.shared import CORPUS, KANPUR
from tests.serving import wait_job
from tests.stub_openai import StubOpenAI

BUDGET = 700
"""PILAR_BUDGET of the store: every face's default budget."""

CASES = {
    "empty question": ({"question": " "}, "the question is empty"),
    "no words": ({"question": "?!"}, "the question has no words (no letter or digit)"),
    "long question": ({"question": "x" * 301}, "the question is 301 characters, over the "
                                                "300-character limit (PILAR_MAX_QUERY_CHARS)"),
    "small budget": ({"budget": 5}, "budget must be at least 32 tokens, got 5"),
    "large budget": ({"budget": 5000}, "budget must be at most 4,096 tokens "
                                       "(PILAR_MAX_BUDGET), got 5,000"),
    "k zero": ({"k": 0}, "k must be at least 1, got 0"),
    "k over": ({"k": 21}, "k must be at most 20 (PILAR_MAX_K), got 21"),
    "profile": ({"profile": "deep"}, "profile must be one of single-shot, multi-hop, got 'deep'"),
    "unknown collection": ({"collections": ["nope"]}, "no documents in collection 'nope': "
                                                      "list them with `pilar docs` or GET "
                                                      "/v1/documents"),
    "unknown document": ({"doc_ids": ["abc"]}, "no document with id 'abc': list them with "
                                               "`pilar docs` or GET /v1/documents"),
}
"""A request's fields (over a valid search for KANPUR) and what every face says."""

QUESTIONLESS = {"small budget", "large budget", "k zero", "k over", "profile",
                "unknown collection"}
"""The cases an evaluation has (its questions come from a file, its scope is collections)."""
FORM = {"empty question", "no words", "long question", "small budget", "large budget",
        "k zero", "k over"}
"""The cases the web page's form can send (a profile and a collection are picked from lists)."""

OPERATIONS = [("python", "search"), ("python", "answer"), ("python", "eval"),
              ("cli", "search"), ("cli", "answer"), ("cli", "eval"),
              ("rest", "search"), ("rest", "answer"), ("rest", "eval"),
              ("mcp", "search"), ("mcp", "answer"),
              pytest.param("web", "search", marks=pytest.mark.browser),
              pytest.param("web", "answer", marks=pytest.mark.browser)]


@pytest.fixture(scope="module")
def faces(tmp_path_factory):
    """A store with one document, its settings in the environment (the CLI
    reads them there), the app and the MCP server on it."""
    from fastapi.testclient import TestClient

    from pilar import Pilar
    from pilar.api.app import create_app
    from pilar.api.auth import Keyring
    from pilar.api.mcp_server import build_mcp
    from pilar.api.paths import ServerPaths
    from pilar.config import Settings

    home = tmp_path_factory.mktemp("faces")
    shutil.copy(CORPUS / "204-541.html", home / "kanpur.html")
    with StubOpenAI() as stub:
        env = {"PILAR_HOME": str(home), "PILAR_BUDGET": str(BUDGET), "PILAR_TOP_K": "3",
               "PILAR_MAX_QUERY_CHARS": "300", "PILAR_MAX_BUDGET": "4096", "PILAR_MAX_K": "20",
               "PILAR_READER_BASE_URL": stub.base_url, "PILAR_READER_MODEL": "reader_faults",
               "PILAR_LLM_MAX_RETRIES": "0", "PILAR_API_INGEST_WORKER": "false"}
        saved = {k: os.environ.get(k) for k in env}
        os.environ.update(env)
        try:
            p = Pilar(settings=Settings())
            (done,) = p.ingest([home / "kanpur.html"], workers=0)
            assert done.status == "ingested", done.reason
            (home / "questions.tsv").write_text(
                "qid\tquestion\tanswers\nq1\t" + KANPUR + "\tRatan Tower\n", encoding="utf-8")
            with TestClient(create_app(p)) as rest:  # its lifespan runs the evaluations
                yield {"pilar": p, "home": home, "rest": rest,
                       "mcp": build_mcp(p, Keyring([]), ServerPaths.of(p.settings))}
        finally:
            for k, v in saved.items():
                if v is None:
                    os.environ.pop(k, None)
                else:
                    os.environ[k] = v


def _python(f, op: str, req: dict):
    from pilar.eval.questions import Question

    p = f["pilar"]
    try:
        if op == "eval":
            report = p.evaluate([Question("q1", KANPUR, ("Ratan Tower",), ())],
                                budget=req.get("budget"), k=req.get("k"),
                                profile=req.get("profile"), collections=req.get("collections"))
            return {"budget": report.budget}
        call = p.search if op == "search" else p.ask
        got = call(req["question"], budget=req.get("budget"), k=req.get("k"),
                   profile=req.get("profile"), collections=req.get("collections"),
                   doc_ids=req.get("doc_ids"))
    except Exception as exc:  # noqa: BLE001 - the refusal is the value compared
        return {"error": str(exc)}
    return {"budget": got.packet.budget}


def _cli(f, op: str, req: dict):
    from typer.testing import CliRunner

    from pilar.cli import app

    args = {"search": ["search", req["question"], "--json"],
            "answer": ["ask", req["question"], "--json"],
            "eval": ["eval", str(f["home"] / "questions.tsv"),
                     "--json", str(f["home"] / "report.json")]}[op]
    for name, option in (("budget", "--budget"), ("k", "--k"), ("profile", "--profile")):
        if req.get(name) is not None:
            args += [option, str(req[name])]
    for name in req.get("collections") or ():
        args += ["--collection", name]
    for doc in req.get("doc_ids") or ():
        args += ["--doc", doc]
    result = CliRunner().invoke(app, args)
    if result.exit_code:
        lines = [line for line in result.stderr.splitlines() if line.startswith("error: ")]
        assert len(lines) == 1, result.output
        return {"error": lines[0].removeprefix("error: ")}
    if op == "eval":
        return {"budget": json.loads((f["home"] / "report.json").read_text())["budget"]}
    return {"budget": json.loads(result.stdout)["packet"]["budget"]}


def _wire(op: str, req: dict) -> dict:
    """The request as REST and MCP name its fields."""
    body = {"query" if op == "search" else "question": req.get("question"),
            "budget_tokens": req.get("budget"), "k": req.get("k"), "profile": req.get("profile"),
            "collections": req.get("collections"), "doc_ids": req.get("doc_ids")}
    if op == "eval":
        body = {"questions": [{"id": "q1", "question": KANPUR, "answers": ["Ratan Tower"]}],
                **{k: v for k, v in body.items() if k not in ("query", "question", "doc_ids")}}
    return {k: v for k, v in body.items() if v is not None}


def _rest(f, op: str, req: dict):
    r = f["rest"].post(f"/v1/{op}", json=_wire(op, req))
    if r.status_code >= 400:
        assert r.headers["content-type"] == "application/problem+json"
        detail = r.json()["detail"]
        return {"error": detail.split(": ", 1)[1] if detail.startswith("body.") else detail}
    if op == "eval":
        assert r.status_code == 202, r.text
        job = wait_job(f["rest"], r.json()["job_id"])
        assert job["state"] == "done", job
        return {"budget": job["report"]["budget"]}
    assert r.status_code == 200, r.text
    return {"budget": r.json()["packet"]["budget"]}


def _mcp(f, op: str, req: dict):
    from mcp import Client
    from mcp.shared.exceptions import MCPError

    async def call():
        async with Client(f["mcp"]) as client:
            try:
                return await client.call_tool(op, _wire(op, req))
            except MCPError as exc:
                return exc

    result = anyio.run(call)
    if isinstance(result, MCPError):
        assert result.data["detail"] == result.message
        where, _, said = result.message.partition(": ")
        return {"error": said if where in _wire(op, req) else result.message}
    assert not result.is_error, result
    return {"budget": result.structured_content["packet"]["budget"]}


@pytest.fixture(scope="module")
def web_server(faces):
    """The faces' app on loopback (uvicorn in a thread): its URL."""
    import threading
    import time

    import uvicorn

    from pilar.api.app import create_app

    server = uvicorn.Server(uvicorn.Config(create_app(faces["pilar"]), host="127.0.0.1", port=0,
                                           log_level="warning"))
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    while not server.started:
        assert thread.is_alive(), "uvicorn did not start"
        time.sleep(0.05)
    yield f"http://127.0.0.1:{server.servers[0].sockets[0].getsockname()[1]}"
    server.should_exit = True
    thread.join(timeout=30)


@pytest.fixture
def web_tab(web_server):
    """The web page in a fresh headless Chromium (one per test: Playwright's
    sync API keeps its own event loop, MCP's calls run theirs)."""
    from playwright.sync_api import sync_playwright

    from tests.test_web import CHROMIUM_ARGS, WAIT

    with sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=os.environ["PILAR_CHROMIUM"],
                                     args=CHROMIUM_ARGS)
        tab = browser.new_page(base_url=web_server)
        tab.set_default_timeout(WAIT)
        errors = []
        tab.on("pageerror", lambda e: errors.append(str(e)))
        yield tab
        browser.close()
    assert errors == []


def _web(f, op: str, req: dict):
    """The ask form filled with ``req`` and sent; the packet's budget from
    the status line, or the refusal it shows (without REST's field prefix)."""
    tab = f["tab"]
    tab.goto("/")
    tab.click("#tabs button[data-tab=ask]")
    tab.wait_for_function("document.getElementById('budget').max !== ''")  # limits read
    assert tab.eval_on_selector_all("#budget, #top-k", "ins => ins.map(i => [i.min, i.max])") \
        == [["32", "4096"], ["1", "20"]]  # the settings' bounds (PILAR_MAX_BUDGET, PILAR_MAX_K)
    tab.fill("#question", req["question"])
    tab.fill("#budget", str(req.get("budget", "")))
    tab.fill("#top-k", str(req.get("k", "")))
    with tab.expect_response(lambda r: r.url.endswith("/v1/search")):
        tab.click("#ask-form button[type=submit]")
    status = tab.locator("#ask-status")
    tab.wait_for_function("s => s.textContent && s.textContent !== 'searching…'",
                          arg=status.element_handle())
    if status.locator(".error").count():
        said = status.inner_text()
        return {"error": said.split(": ", 1)[1] if said.startswith("body.") else said}
    if op == "answer":
        tab.locator("#answer[data-state=done]").wait_for()
    return {"budget": int(status.inner_text().split(" tokens")[0].rsplit(" of ", 1)[1])}


FACES = {"python": _python, "cli": _cli, "rest": _rest, "mcp": _mcp, "web": _web}


@pytest.mark.parametrize("face,op", OPERATIONS, ids=lambda v: v)
def test_every_face_takes_one_request(request, faces, face, op):
    """Defaults (PILAR_BUDGET), limits (from the settings) and the words of
    each refusal are the same on every face for every operation."""
    run = FACES[face]
    if face == "web":
        faces = {**faces, "tab": request.getfixturevalue("web_tab")}
    base = {"question": KANPUR}
    assert run(faces, op, base) == {"budget": BUDGET}
    cases = {name: case for name, case in CASES.items()
             if (op != "eval" or name in QUESTIONLESS) and (face != "web" or name in FORM)}
    told = {name: run(faces, op, {**base, **fields}) for name, (fields, _) in cases.items()}
    assert told == {name: {"error": said} for name, (_, said) in cases.items()}


def test_mcp_tool_schemas_are_the_rest_request_models(faces):
    """The MCP tools' input schemas are the REST bodies' (one model, with
    the store's limits), ``answer`` without REST's ``stream``."""
    from mcp import Client

    from pilar.api.models import search_request

    async def listed():
        async with Client(faces["mcp"]) as client:
            return {t.name: t.input_schema for t in (await client.list_tools()).tools}

    tools = anyio.run(listed)
    settings = faces["pilar"].settings
    rest = faces["rest"].get("/openapi.json").json()["components"]["schemas"]
    search = search_request(settings).model_json_schema()
    search.pop("title")
    assert tools["search"] == search
    def bounds(properties: dict) -> dict:
        return {name: {k: v for k, v in (field.get("anyOf") or [field])[0].items()
                       if k in ("minimum", "maximum", "minLength", "maxLength", "enum")}
                for name, field in properties.items()}

    assert bounds(rest["SearchRequest"]["properties"]) == bounds(search["properties"])
    assert bounds(search["properties"])["budget_tokens"] == {"minimum": 32, "maximum": 4096}
    assert bounds(search["properties"])["query"] == {"minLength": 1, "maxLength": 300}
    assert set(rest["AnswerRequest"]["properties"]) - set(tools["answer"]["properties"]) \
        == {"stream"}
    assert sorted(tools) == ["answer", "get_page", "search"]  # no cypher on SQLite
