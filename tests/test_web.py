"""The evidence explorer (issue 18) in Debian's headless Chromium, driven by
Playwright through its executable path, against a real ``pilar serve`` on
loopback with an API key configured.

One walk-through, step by step as a user would: give the key, upload a PDF,
an HTML page and a broken file, watch the job reach ``done``, ask, open a PDF
citation (the box over the right page at the bbox's place, and the server's
drawing under it) and an HTML citation (the cited row marked), open an
entity's neighbourhood and click through to a page, delete a document. And
without the key nothing is shown. Screenshots of every step go to
``bench/out/web/`` (printed at the end).
"""

from __future__ import annotations

import base64
import io
import json
import os
import re

import pytest

from tests.serving import ROOT, ApiServer, wait_job

KEY = "web-test-key-7f3a"
TEAM = "web-team-key-51c0"  # limited to collection team-a
SHOTS = ROOT / "bench" / "out" / "web"
PDF = ROOT / "examples" / "203-788.pdf"  # "Kurt Maschler Award", 2 pages
HTML = ROOT / "examples" / "204-541.html"  # "List of tallest buildings in Kanpur"
STORED = ROOT / "examples" / "204-903.html"  # "Sophie Colquhoun", stored before the page opens
SCAN = ROOT / "tests" / "fixtures" / "pdf" / "204-268-scan-p1.pdf"  # no text layer: OCR'd
QUESTION = "which illustrator was responsible for the last award winner?"
CHROMIUM_ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
                 "--disable-background-networking", "--disable-component-update", "--disable-sync"]
WAIT = 120_000  # ms Playwright waits for a step at most (ingest embeds on a shared CPU)


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    """``pilar serve`` on loopback with PILAR_API_KEYS set."""
    srv = ApiServer(tmp_path_factory.mktemp("web-home"),
                    {"PILAR_API_KEYS": f"{KEY},{TEAM}:team-a", "PILAR_GRAPH": "sqlite",
                     "PILAR_INDEX": "sqlite"})
    yield srv.start()
    srv.stop()


@pytest.fixture(scope="module")
def api(server):
    """An HTTP client with the key, to know what the page should show."""
    with server.client(KEY) as client:
        yield client


@pytest.fixture(scope="module")
def stored(api):
    """One document stored through the API before any tab opens; its id."""
    job = api.post("/v1/documents",
                   files=[("files", (STORED.name, STORED.read_bytes(), "text/html"))]).json()
    state = wait_job(api, job["job_id"])
    assert [f["status"] for f in state["files"]] == ["ingested"], state
    return state["files"][0]["doc_id"]


@pytest.fixture(scope="module")
def browser():
    chromium = os.environ["PILAR_CHROMIUM"]
    assert os.access(chromium, os.X_OK), f"PILAR_CHROMIUM={chromium} is not an executable"
    from playwright.sync_api import sync_playwright

    SHOTS.mkdir(parents=True, exist_ok=True)
    with sync_playwright() as p:
        b = p.chromium.launch(executable_path=chromium, args=CHROMIUM_ARGS)
        yield b
        b.close()
    print(f"\nscreenshots in {SHOTS}")


@pytest.fixture
def page(browser, server):
    """A fresh tab (own sessionStorage) that records every request it makes;
    the test fails on a JavaScript error or an error response other than the
    401s of a missing key and the 503 of an absent reader."""
    context = browser.new_context(viewport={"width": 1400, "height": 900}, base_url=server.url)
    tab = context.new_page()
    tab.set_default_timeout(WAIT)
    tab.requests = []
    tab.on("request", lambda r: tab.requests.append(r))
    errors = []
    tab.on("pageerror", lambda e: errors.append(str(e)))
    tab.on("console", lambda m: errors.append(m.text) if m.type == "error"
           and not m.text.startswith("Failed to load resource") else None)
    tab.on("response", lambda r: errors.append(f"{r.status} {r.url}") if r.status >= 400
           and r.status != 401 and not (r.url.endswith("/v1/answer") and r.status == 503)
           else None)
    yield tab
    context.close()
    assert not errors, errors


def drop(page, files: list[tuple[str, bytes, str]]) -> None:
    """Drop ``files`` (name, bytes, type) on the page's upload area, as a user would."""
    dropped = page.evaluate_handle("""files => {
        const dt = new DataTransfer();
        for (const [name, b64, type] of files) {
            const bytes = Uint8Array.from(atob(b64), ch => ch.charCodeAt(0));
            dt.items.add(new File([bytes], name, {type}));
        }
        return dt;
    }""", [[n, base64.b64encode(b).decode(), t] for n, b, t in files])
    page.dispatch_event("#drop", "drop", {"dataTransfer": dropped})


def state_of(card, state: str) -> None:
    """Wait until the job ``card`` (a locator) shows ``state``."""
    from playwright.sync_api import expect

    expect(card).to_have_attribute("data-state", state, timeout=WAIT)


def shot(page, name: str) -> None:
    page.screenshot(path=str(SHOTS / name), full_page=False)


def test_page_files_are_served_and_every_import_resolves():
    """Without a browser: ``/`` and every file the page loads (links in
    index.html, ES module imports, vendored libraries) are served with the
    right types, and ``/`` carries its security headers."""
    from fastapi import FastAPI
    from fastapi.testclient import TestClient

    from pilar.api.routes import web
    from pilar.config import Settings

    app = FastAPI()
    app.include_router(web.routes(Settings()))
    client = TestClient(app)
    index = client.get("/")
    assert index.status_code == 200 and index.headers["content-type"].startswith("text/html")
    assert "script-src" not in index.headers["content-security-policy"]  # default-src 'self'
    assert "default-src 'self'" in index.headers["content-security-policy"]
    todo = [f"/{p}" for p in re.findall(r'(?:href|src)="(static/[^"]+)"', index.text)]
    assert "/static/js/main.js" in todo and "/static/app.css" in todo
    seen = set()
    while todo:
        path = todo.pop()
        if path in seen:
            continue
        seen.add(path)
        r = client.get(path)
        assert r.status_code == 200, path
        if path.endswith(".js"):
            assert r.headers["content-type"].startswith("text/javascript"), path
            base = path.rsplit("/", 1)[0]
            for rel in re.findall(r'(?:^|[;}\s])(?:import|export)\b[^"\';]*?from\s*["\'](\.{1,2}/[^"\']+)["\']',
                                  r.text):
                todo.append(os.path.normpath(f"{base}/{rel}"))
    assert {"/static/vendor/cytoscape-3.35.0/cytoscape.esm.min.js",
            "/static/vendor/eventsource-parser-4.1.3/parse.js"} <= seen
    for vendored in ("cytoscape-3.35.0", "eventsource-parser-4.1.3"):
        assert client.get(f"/static/vendor/{vendored}/LICENSE").status_code == 200


@pytest.mark.browser
def test_nothing_is_shown_without_the_key(page, stored):
    page.goto("/")
    page.wait_for_selector("#key-gate:not([hidden])")
    assert page.is_hidden("#app") and page.is_hidden("#tabs")
    assert page.locator("#docs tbody tr").count() == 0
    v1 = [r for r in page.requests if "/v1/" in r.url]
    assert v1 and all(r.response().status == 401 for r in v1)
    shot(page, "01-key-gate.png")

    page.fill("#key-input", "not-the-key")
    page.press("#key-input", "Enter")
    page.wait_for_selector("#key-error:has-text('refused')")
    assert page.is_hidden("#app")
    assert page.locator("#docs tbody tr").count() == 0
    assert page.evaluate("sessionStorage.getItem('pilar.apiKey')") is None
    assert "Sophie" not in page.content()
    shot(page, "02-key-refused.png")


@pytest.mark.browser
def test_explorer_walk_through(page, api, stored, tmp_path):
    # -- the key opens the page -----------------------------------------------
    page.goto("/")
    page.fill("#key-input", KEY)
    page.press("#key-input", "Enter")
    page.wait_for_selector("#app:not([hidden])")
    assert page.evaluate("sessionStorage.getItem('pilar.apiKey')") == KEY

    # -- upload by drag and drop: a PDF, an HTML page and a broken file -------
    files = [(PDF.name, PDF.read_bytes(), "application/pdf"),
             (HTML.name, HTML.read_bytes(), "text/html"),
             ("broken.pdf", b"%PDF-1.7\nthis is not a PDF body\n", "application/pdf")]
    drop(page, files)
    job = page.locator(".job").first
    job.locator("li").first.wait_for()  # the job's first event arrived
    state_of(job, "done")  # the upload's card (the key's earlier jobs are listed below it)
    assert job.locator("progress").evaluate("p => [p.value, p.max]") == [3, 3]
    statuses = dict(zip(
        [t.split(":")[0] for t in job.locator("li").all_inner_texts()],
        job.locator("li").evaluate_all("lis => lis.map(li => li.dataset.status)")))
    assert statuses == {PDF.name: "ingested", HTML.name: "ingested", "broken.pdf": "failed"}
    job_id = next(r.url for r in page.requests if r.url.endswith("/events")).split("/")[-2]
    reason = next(f["reason"] for f in api.get(f"/v1/jobs/{job_id}").json()["files"]
                  if f["status"] == "failed")
    assert reason and reason in job.locator("li[data-status=failed]").inner_text()
    rows = page.locator("#docs tbody tr")
    rows.nth(2).wait_for()
    stored_docs = api.get("/v1/documents").json()["items"]
    assert len(stored_docs) == 3
    assert rows.locator("td:first-child").all_inner_texts() == [d["title"] for d in stored_docs]
    assert rows.evaluate_all("trs => trs.map(tr => tr.dataset.docId)") == [
        d["doc_id"] for d in stored_docs]
    events = [r for r in page.requests if r.url.endswith("/events")]
    assert events and all(r.headers.get("authorization") == f"Bearer {KEY}" for r in events)
    shot(page, "03-uploaded.png")

    # -- ask: the packet's items in order, with their citations and why ---------
    page.click("#tabs button[data-tab=ask]")
    page.fill("#question", QUESTION)
    page.fill("#budget", "1024")
    page.fill("#top-k", "5")
    page.click("#ask-form button[type=submit]")
    page.locator("#packet .item").first.wait_for()
    expected = api.post("/v1/search", json={"query": QUESTION, "budget_tokens": 1024, "k": 5}).json()
    items = expected["packet"]["items"]
    assert page.locator("#packet .item").count() == len(items) > 0
    # a page's score line once (on its first item), not on every row card
    pages = {f"{it['citation']['doc_id']}:{it['citation']['page']}" for it in items}
    assert page.locator("#packet .item .why").count() == len(pages) < len(items)
    # the packet rendered: headings without their '#', a table's lines as table rows
    texts = page.locator("#packet .item .text").all_inner_texts()
    assert not [t for t in texts if t.lstrip().startswith("#") or "\n#" in t]
    written = [line for it in items for line in it["text"].splitlines()]
    assert page.locator("#packet .item .text .heading").count() == sum(
        1 for line in written if line.startswith("#"))
    assert page.locator("#packet .item .text table.rows tr").count() == sum(
        1 for line in written if " | " in line and not line.startswith("#"))
    # no reader on this server: the answer panel says so in one line, the packet stays
    page.wait_for_selector("#answer[data-state=no-reader]")
    line = page.inner_text("#answer").strip()
    assert line.startswith("No answer: no reader is configured: set PILAR_LLM_BASE_URL")
    assert "\n" not in line and page.locator("#packet .item").count() == len(items)
    shot(page, "04-packet.png")

    # -- a PDF citation: the page image with the support's box -----------------
    n, item = next((i, it) for i, it in enumerate(items)  # a row of the PDF's table
                   if it["citation"]["bbox"] and it["citation"]["table_index"] is not None)
    c = item["citation"]
    page.locator("#packet .item .cite").nth(n).click()
    page.wait_for_selector(f"#evidence[data-page-id='{c['doc_id']}:{c['page']}'][data-state=ready]")
    img = page.locator("#evidence .sheet img")
    assert page.get_attribute("#evidence", "data-page") == str(c["page"])
    assert img.get_attribute("data-page") == str(c["page"])
    shown = api.get(f"/v1/pages/{c['doc_id']}:{c['page']}").json()
    assert shown["n_pages"] == 2 and shown["title"] == "Kurt Maschler Award"
    assert shown["headers"][c["support_id"]] == ["Year", "Author", "Illustrator", "Title", "Publisher"]
    box = page.locator(f"#evidence .box[data-support-id='{c['support_id']}']")
    ib, bb = img.bounding_box(), box.bounding_box()
    x0, y0, x1, y1 = c["bbox"]
    sx, sy = ib["width"] / shown["width"], ib["height"] / shown["height"]
    assert sx == pytest.approx(sy, rel=0.02)  # the image is the page, not stretched
    assert bb["x"] - ib["x"] == pytest.approx(x0 * sx, abs=1.5)
    assert bb["y"] - ib["y"] == pytest.approx(y0 * sy, abs=1.5)
    assert bb["width"] == pytest.approx((x1 - x0) * sx, abs=1.5)
    assert bb["height"] == pytest.approx((y1 - y0) * sy, abs=1.5)
    assert " | ".join(shown["headers"][c["support_id"]]) in page.inner_text("#evidence .context")
    # the server drew the box into the image: pixels on the box's edge differ
    # from the same page rendered without highlight
    drawn = page.evaluate("""([x0, y0, x1, y1, w]) => {
        const img = document.querySelector('#evidence .sheet img');
        const k = img.naturalWidth / w, c = document.createElement('canvas');
        c.width = img.naturalWidth; c.height = img.naturalHeight;
        const g = c.getContext('2d'); g.drawImage(img, 0, 0);
        const xs = [0.25, 0.5, 0.75].map(t => Math.round((x0 + t * (x1 - x0)) * k));
        return [img.naturalWidth, xs.map(x => [...g.getImageData(x, Math.round(y0 * k), 1, 1).data])];
    }""", [x0, y0, x1, y1, shown["width"]])
    plain = _image(api.get(f"/v1/pages/{c['doc_id']}:{c['page']}/image").content)
    natural_width, samples = drawn
    assert plain.width == natural_width
    k = natural_width / shown["width"]
    for t, rgba in zip((0.25, 0.5, 0.75), samples):
        before = plain.getpixel((round((x0 + t * (x1 - x0)) * k), round(y0 * k)))[:3]
        assert tuple(rgba[:3]) != tuple(before), (t, rgba, before)
    shot(page, "05-pdf-citation.png")
    # the other page of the 2-page PDF, through the panel's page buttons
    other = 2 if c["page"] == 1 else c["page"] - 1
    page.click("#ev-nav button:has-text('next page')" if other > c["page"]
               else "#ev-nav button:has-text('previous page')")
    page.wait_for_selector(f"#evidence[data-page-id='{c['doc_id']}:{other}'][data-state=ready]")
    assert page.get_attribute("#evidence .sheet img", "data-page") == str(other)
    assert page.locator("#evidence .box").count() == 0  # nothing cited there

    # -- an HTML citation: the cited table row marked, its section path and headers
    n, item = next((i, it) for i, it in enumerate(items) if not it["citation"]["bbox"]
                   and it["citation"]["support_id"] and it["citation"]["table_index"] is not None)
    c = item["citation"]
    page.locator("#packet .item .cite").nth(n).click()
    page.wait_for_selector(f"#evidence[data-page-id='{c['doc_id']}:{c['page']}'][data-state=ready]")
    cited = page.locator(f"#evidence .html-page .sup.cited[data-support-id='{c['support_id']}']")
    assert cited.inner_text().strip() == next(
        x["text"] for x in api.get(f"/v1/pages/{c['doc_id']}:{c['page']}").json()["supports"]
        if x["support_id"] == c["support_id"]).strip()
    assert page.locator("#evidence .html-page .sup.cited").count() == 1
    assert page.get_attribute("#evidence", "data-page-id") == f"{c['doc_id']}:{c['page']}"
    context = page.inner_text("#evidence .context")
    assert " › ".join(c["section_path"]) in context
    headers = api.get(f"/v1/pages/{c['doc_id']}:{c['page']}").json()["headers"]
    shown = " | ".join(h for h in headers[c["support_id"]] if h)  # empty header cells left out
    assert shown and shown in context
    shot(page, "06-html-citation.png")
    # the next question clears the panel: the last page is not its evidence
    page.click("#ask-form button[type=submit]")
    page.wait_for_selector("#evidence", state="hidden")
    assert page.locator("#ev-body *").count() == 0
    page.locator("#packet .item").first.wait_for()
    page.wait_for_selector("#answer[data-state=no-reader]")

    # -- entities: search, neighbourhood graph, click through to a page -------
    page.click("#tabs button[data-tab=entities]")
    page.fill("#entity-q", "Anthony Browne")  # an illustrator in the PDF's table
    page.click("#entity-form button[type=submit]")
    hit = page.locator("#entity-hits button").first
    hit.wait_for()
    entity_id = hit.get_attribute("data-entity-id")
    hit.click()
    page.wait_for_selector(f"#hood[data-entity-id='{entity_id}']")
    hood = api.get(f"/v1/entities/{entity_id}/neighborhood", params={"depth": 2}).json()
    counts = page.evaluate("() => ['entity', 'assertion', 'support', 'page'].map("
                           "k => window.pilar.graph.nodes('.' + k).length)")
    assert counts == [len(hood[k]) for k in ("entities", "assertions", "supports", "pages")]
    assert hood["pages"] and hood["mentions"]
    assert {sid for _, sid in hood["mentions"]} <= {s["support_id"] for s in hood["supports"]}
    assert {p["title"] for p in hood["pages"]} == {"Kurt Maschler Award"}
    edges = page.evaluate("() => window.pilar.graph.edges('[label = \"MENTIONED_IN\"]').length")
    assert edges == len(hood["mentions"])
    target = hood["pages"][0]["page_id"]
    shot(page, "07-neighbourhood.png")
    # click the page's node on the canvas, where Cytoscape drew it
    pos = page.evaluate("id => window.pilar.graph.getElementById(id).renderedPosition()", target)
    gb = page.locator("#graph").bounding_box()
    page.mouse.click(gb["x"] + pos["x"], gb["y"] + pos["y"])
    page.wait_for_selector(f"#evidence[data-page-id='{target}'][data-state=ready]")
    assert page.get_attribute("#evidence", "data-page") == str(hood["pages"][0]["number"])
    shot(page, "08-graph-to-page.png")
    # re-centre on another entity of the neighbourhood
    other = next(e["entity_id"] for e in hood["entities"] if e["entity_id"] != entity_id)
    page.click(f"#hood-lists button[data-entity-id='{other}']")
    page.wait_for_selector(f"#hood[data-entity-id='{other}']")
    hood = api.get(f"/v1/entities/{other}/neighborhood", params={"depth": 2}).json()
    assert page.evaluate("() => window.pilar.graph.nodes().length") == sum(
        len(hood[k]) for k in ("entities", "assertions", "supports", "pages"))
    assert page.evaluate("id => window.pilar.graph.getElementById(id).hasClass('centre')", other)
    shot(page, "09-recentred.png")

    # -- delete a document ------------------------------------------------------
    page.click("#tabs button[data-tab=documents]")
    page.once("dialog", lambda d: d.accept())
    html_id = next(f["doc_id"] for f in api.get(f"/v1/jobs/{job_id}").json()["files"]
                   if f["name"] == HTML.name)
    page.locator(f"#docs tbody tr[data-doc-id='{html_id}'] button").click()
    page.wait_for_function("() => document.querySelectorAll('#docs tbody tr').length === 2")
    left = [d["doc_id"] for d in api.get("/v1/documents").json()["items"]]
    assert html_id not in left and stored in left and len(left) == 2
    shot(page, "10-deleted.png")

    # the key never travelled in a URL
    assert not [r.url for r in page.requests if KEY in r.url]

    # forgetting the key takes everything off the page
    page.click("#sign-out")
    page.wait_for_selector("#key-gate:not([hidden])")
    assert page.is_hidden("#app") and page.is_hidden("#evidence")
    assert page.locator("#docs tbody tr, #packet li, #ev-body *").count() == 0
    assert page.evaluate("sessionStorage.getItem('pilar.apiKey')") is None
    shot(page, "11-key-forgotten.png")


@pytest.mark.browser
def test_a_limited_key_picks_and_uploads_into_its_collection(page, server):
    page.goto("/")
    page.fill("#key-input", TEAM)
    page.press("#key-input", "Enter")
    page.wait_for_selector("#app:not([hidden])")
    assert page.locator("#collection option").all_inner_texts() == ["team-a"]
    assert page.input_value("#collection") == "team-a"
    drop(page, [(HTML.name, HTML.read_bytes(), "text/html")])
    job = page.locator(".job").first
    state_of(job, "done")
    with server.client(TEAM) as team:
        docs = team.get("/v1/documents").json()["items"]
    assert [(d["collection"], d["title"]) for d in docs] == [
        ("team-a", "204-541")]  # the client's file name: the page has no title
    page.locator(f"#docs tbody tr[data-doc-id='{docs[0]['doc_id']}']").wait_for()
    page.click("#tabs button[data-tab=ask]")
    page.fill("#question", "what is the tallest building in kanpur?")
    page.click("#ask-form button[type=submit]")
    page.locator("#packet .item").first.wait_for()
    searched = [json.loads(r.post_data) for r in page.requests if r.url.endswith("/v1/search")]
    assert searched == [{"query": "what is the tallest building in kanpur?",
                         "collections": ["team-a"]}]  # budget and k: the server's defaults
    cited = page.locator("#packet .item").evaluate_all(
        "lis => [...new Set(lis.map(li => li.dataset.pageId.split(':')[0]))]")
    assert cited == [docs[0]["doc_id"]]
    shot(page, "12-limited-key.png")


@pytest.mark.browser
def test_api_documentation_pages_load_their_vendored_assets(page, server):
    """/docs (Swagger UI) and /redoc (ReDoc) render from the package's own
    files: no request leaves the server."""
    page.goto("/docs")
    page.wait_for_selector(".swagger-ui .info .title")
    assert page.inner_text(".swagger-ui .info .title").startswith("pilar")
    assert page.locator(".swagger-ui .opblock").count() > 10
    page.goto("/redoc")
    page.wait_for_selector("redoc h1, [role=main] h1, h1")
    assert page.locator("h1").first.inner_text().startswith("pilar")
    assert [r.url for r in page.requests
            if not r.url.startswith((server.url, "data:", "blob:"))] == []


def _image(png: bytes):
    from PIL import Image

    return Image.open(io.BytesIO(png)).convert("RGB")


@pytest.mark.browser
def test_jobs_panel_lists_the_keys_jobs_and_cancels_one(page, api, stored):
    page.goto("/")
    page.fill("#key-input", KEY)
    page.press("#key-input", "Enter")
    page.wait_for_selector("#app:not([hidden])")
    listed = [j["job_id"] for j in api.get("/v1/jobs").json()["items"]]
    cards = page.locator("#jobs .job")
    cards.nth(len(listed) - 1).wait_for()
    assert cards.evaluate_all("cs => cs.map(c => c.dataset.jobId)") == listed
    assert page.locator("#jobs .job .cancel:visible").count() == 0  # all ended
    before = api.get("/v1/documents").json()["total"]
    # a scanned page (OCR takes seconds), cancelled from its card while it runs
    drop(page, [(SCAN.name, SCAN.read_bytes(), "application/pdf")])
    card = page.locator(".job").first
    card.locator(".cancel").wait_for(state="visible")
    card.locator(".cancel").click()
    state_of(card, "cancelled")
    shot(page, "12-job-cancelled.png")
    assert card.locator(".cancel").is_hidden()
    job = api.get(f"/v1/jobs/{card.get_attribute('data-job-id')}").json()
    assert job["state"] == "cancelled" and [f["status"] for f in job["files"]] == ["cancelled"]
    assert api.get("/v1/documents").json()["total"] == before


@pytest.mark.browser
@pytest.mark.llm
def test_streamed_answer_links_its_citations_to_the_packet(browser, tmp_path, llm_base_url,
                                                          llm_tokenizer):
    """With a reader (the real model server of tests/servers/llm): the answer
    streams into the panel and each [n] links to the packet item shown."""
    srv = ApiServer(tmp_path, {"PILAR_GRAPH": "sqlite", "PILAR_INDEX": "sqlite",
                               "PILAR_LLM_BASE_URL": llm_base_url, "PILAR_LLM_MODEL": "",
                               "PILAR_READER_MODEL": "", "PILAR_READER_BASE_URL": "",
                               "PILAR_READER_TOKENIZER": llm_tokenizer or "",
                               "PILAR_READER_MAX_TOKENS": "48", "PILAR_LLM_TIMEOUT": "600"}).start()
    context = browser.new_context(viewport={"width": 1400, "height": 900}, base_url=srv.url)
    try:
        with srv.client() as api:
            job = api.post("/v1/documents", files=[("files", (HTML.name, HTML.read_bytes(),
                                                              "text/html"))]).json()
            assert wait_job(api, job["job_id"])["state"] == "done"
            tab = context.new_page()
            tab.set_default_timeout(600_000)  # the CPU model answers slowly on a busy machine
            errors = []
            tab.on("pageerror", lambda e: errors.append(str(e)))
            tab.goto("/")
            tab.wait_for_selector("#app:not([hidden])")
            tab.click("#tabs button[data-tab=ask]")
            tab.fill("#question", "what is the tallest building in kanpur?")
            tab.fill("#budget", "512")
            tab.fill("#top-k", "3")
            with tab.expect_response(lambda r: r.url.endswith("/v1/answer")) as streamed:
                tab.click("#ask-form button[type=submit]")
            tab.wait_for_selector("#answer[data-state=done]")
            # the stream the page read: its deltas, then the whole answer (a second generation
            # is not compared: llama.cpp's reuse of a cached prompt prefix can change the
            # greedy tokens of a 270M model between two calls)
            assert streamed.value.headers["content-type"].startswith("text/event-stream")
            events = [(e, json.loads(d)) for e, d in
                      re.findall(r"event: (\w+)\r?\ndata: (.*)\r?\n", streamed.value.text())]
            assert [e for e, _ in events][-1] == "answer" and len(events) > 2, events
            expected = events[-1][1]
            assert "".join(d["text"] for _, d in events[:-1]) == expected["text"]
            packet = api.post("/v1/search", json={
                "query": "what is the tallest building in kanpur?", "budget_tokens": 512,
                "k": 3}).json()["packet"]
            assert expected["packet"]["citations"] == packet["citations"]  # the packet shown
        shot(tab, "12-streamed-answer.png")
        shown = tab.inner_text("#answer .text")
        assert " ".join(shown.split()) == " ".join(expected["text"].split())
        # the model cites the packet here (as in test_llm_server): each [n] is a link
        assert expected["citations"], expected["text"]
        refs = tab.locator("#answer .cite-ref")
        cited = {c["n"]: c["citation"] for c in expected["citations"]}
        assert refs.count() >= 1
        assert {int(n) for n in refs.evaluate_all("bs => bs.map(b => b.dataset.n)")} == set(cited)
        n = min(cited)
        tab.locator(f"#answer .cite-ref[data-n='{n}']").first.click()
        item = tab.locator("#packet .item.active")
        assert item.get_attribute("data-support-id") == (cited[n]["support_id"] or "")
        assert item.get_attribute("data-page-id") == f"{cited[n]['doc_id']}:{cited[n]['page']}"
        tab.wait_for_selector("#evidence[data-state=ready]")
        shot(tab, "13-answer-citation.png")
        assert not errors, errors
    finally:
        context.close()
        srv.stop()
