"""Load on the REST API over loopback: searches/s and p50/p95 at 1, 4 and 20
concurrent clients, against in-process ``Pilar.search`` on the same store in
the same run; then 4 uploads ingesting while 20 clients search.

    python bench/api_load.py [--home bench/out/home-dev] [--n 60] [--mixed-seconds 60]
                             [--json OUT]

The embedded store in ``--home`` (default bench/out/home-dev: the 400
wtq/dev pages that bench/run_all ingests) is copied to a temporary folder
first (SQLite backup), and searched as it is: the table reports its page
count. Each
concurrency level runs ``--n`` searches in all (fixed-seed lookup questions,
budget 4,500 tokens, k 10), after 5 warm-up searches. The 1-client level
alternates with in-process ``Pilar.search`` on the same store (this process,
the same question right before each request), so both see the same load of
a shared machine; the server is idle meanwhile. The mixed run
uploads 4 documents of ``../shared/data/multihop`` (one job each) while 20
clients search for ``--mixed-seconds``; it reports errors, 5xx answers, the
jobs' outcome and how many times each uploaded document is listed afterwards
(must be once). Bounded: every request has a 300 s timeout; the mixed run
stops at its time limit.
"""

from __future__ import annotations

import argparse
import csv
import json
import random
import shutil
import statistics
import sys
import tempfile
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import httpx

ROOT = Path(__file__).resolve().parents[1]
DEV_HOME = ROOT / "bench" / "out" / "home-dev"
sys.path.insert(0, str(ROOT))
SHARED = ROOT.parent / "shared" / "data"
KEY = "bench-key"
BUDGET, K = 4500, 10


def copy_store(store: Path, home: Path) -> None:
    """A consistent copy of the embedded store (SQLite's online backup, so a
    store still being written is copied as of one commit)."""
    import sqlite3

    home.mkdir(parents=True)
    src = sqlite3.connect(f"file:{store / 'pilar.sqlite'}?mode=ro", uri=True)
    dst = sqlite3.connect(home / "pilar.sqlite")
    with dst:
        src.backup(dst)
    src.close()
    dst.close()


def questions(n: int) -> list[str]:
    with (SHARED / "wtq" / "dev" / "questions.tsv").open(encoding="utf-8") as f:
        rows = [r["question"] for r in csv.DictReader(f, delimiter="\t") if r["lookup"] == "1"]
    return random.Random(7).sample(rows, n)


def pct(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(round(q * (len(ordered) - 1))))]


def side_by_side(p, url: str, qs: list[str]) -> tuple[dict, dict]:
    """In-process ``p.search`` then one HTTP search, question by question."""
    inproc, http = [], []
    with httpx.Client(base_url=url, headers={"X-API-Key": KEY}, timeout=300) as c:
        for q in qs:
            t0 = time.perf_counter()
            p.search(q, budget=BUDGET, k=K)
            t1 = time.perf_counter()
            r = c.post("/v1/search", json={"query": q, "budget_tokens": BUDGET, "k": K})
            t2 = time.perf_counter()
            assert r.status_code == 200, r.text[:200]
            inproc.append(t1 - t0)
            http.append(t2 - t1)
    wall = sum(http)
    return ({"p50_ms": 1000 * statistics.median(inproc), "p95_ms": 1000 * pct(inproc, 0.95),
             "n": len(inproc)},
            {"clients": 1, "n": len(http), "searches_per_s": len(http) / wall,
             "p50_ms": 1000 * statistics.median(http), "p95_ms": 1000 * pct(http, 0.95),
             "errors": 0, "5xx": 0, "error_kinds": []})


def run_clients(url: str, qs: list[str], clients: int, stop_at: float | None = None) -> dict:
    """``clients`` threads share ``qs`` (or loop over them until ``stop_at``)."""
    lock = threading.Lock()
    todo = list(qs)
    lat, errors, fivexx = [], [], 0

    def worker(seed: int):
        nonlocal fivexx
        rng = random.Random(seed)
        with httpx.Client(base_url=url, headers={"X-API-Key": KEY}, timeout=300) as c:
            while True:
                with lock:
                    if stop_at is None:
                        if not todo:
                            return
                        q = todo.pop()
                    elif time.monotonic() >= stop_at:
                        return
                    else:
                        q = rng.choice(qs)
                t0 = time.perf_counter()
                try:
                    r = c.post("/v1/search", json={"query": q, "budget_tokens": BUDGET, "k": K})
                    ok = r.status_code == 200 and r.json()["packet"]["tokens"] <= BUDGET
                except httpx.HTTPError as exc:
                    ok, r = False, exc
                dt = time.perf_counter() - t0
                with lock:
                    lat.append(dt)
                    if not ok:
                        errors.append(str(getattr(r, "status_code", r)))
                        fivexx += getattr(r, "status_code", 0) >= 500

    t0 = time.perf_counter()
    with ThreadPoolExecutor(clients) as pool:
        list(pool.map(worker, range(clients)))
    wall = time.perf_counter() - t0
    return {"clients": clients, "n": len(lat), "searches_per_s": len(lat) / wall,
            "p50_ms": 1000 * statistics.median(lat), "p95_ms": 1000 * pct(lat, 0.95),
            "errors": len(errors), "5xx": fivexx, "error_kinds": sorted(set(errors))[:5]}


def mixed(server, qs: list[str], seconds: float) -> dict:
    """4 uploads (one job each) while 20 clients search for ``seconds``."""
    from tests.serving import wait_job

    files = sorted((SHARED / "multihop").glob("*.html"))[:4]
    client = server.client(KEY)
    stop_at = time.monotonic() + seconds
    result: dict = {}

    def search():
        result["search"] = run_clients(server.url, qs, 20, stop_at)

    t = threading.Thread(target=search)
    t.start()
    time.sleep(2)
    jobs = []
    for f in files:
        r = client.post("/v1/documents", files=[("files", (f.name, f.read_bytes()))])
        jobs.append(r.json()["job_id"] if r.status_code == 202 else f"refused {r.status_code}")
    t.join()
    done = [wait_job(client, j, timeout=900) for j in jobs if not j.startswith("refused")]
    docs = client.get("/v1/documents", params={"limit": 1000}).json()["items"]
    uploaded = [f["doc_id"] for job in done for f in job["files"]]
    listed = {d: sum(1 for x in docs if x["doc_id"] == d) for d in uploaded}
    result.update({
        "uploads": len(files), "jobs_done": sum(j["state"] == "done" for j in done),
        "files_ingested": sum(f["status"] == "ingested" for j in done for f in j["files"]),
        "listed_once": sum(v == 1 for v in listed.values()), "documents_after": len(docs),
        "ingest_seconds": [round(f["seconds"], 1) for j in done for f in j["files"]]})
    client.close()
    return result


def main() -> None:
    from rich.console import Console
    from rich.table import Table

    from tests.serving import ApiServer

    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--home", type=Path, default=DEV_HOME,
                    help="the embedded store to search (copied first; default: bench/run_all's "
                         "400-page dev store)")
    ap.add_argument("--n", type=int, default=60, help="searches per concurrency level")
    ap.add_argument("--mixed-seconds", type=float, default=60.0)
    ap.add_argument("--json", type=Path)
    args = ap.parse_args()
    if not (args.home / "pilar.sqlite").is_file():
        ap.error(f"--home {args.home}: no embedded store (pilar.sqlite) there; bench/run_all "
                 f"ingests one into {DEV_HOME}")
    console = Console()
    tmp = Path(tempfile.mkdtemp(prefix="api-bench-"))
    home = tmp / "home"
    copy_store(args.home, home)
    qs = questions(args.n + 5)
    from pilar import Pilar

    p = Pilar(home=home)
    n_pages = p.stats()["pages"]
    # no rate limit: this bench sends one key's searches as fast as the server answers
    # the server as deployed: its default processes (one per core) and threads
    server = ApiServer(home, {"PILAR_API_KEYS": KEY, "PILAR_API_RATE_LIMIT": ""},
                       workers=None).start()
    try:
        base, one = side_by_side(p, server.url, qs[:5])  # warm-up, both sides
        base, one = side_by_side(p, server.url, qs[5:])
        console.print(f"in-process Pilar.search: p50 {base['p50_ms']:.0f} ms, "
                      f"p95 {base['p95_ms']:.0f} ms ({base['n']} searches)")
        levels = [one] + [run_clients(server.url, qs[5:], n) for n in (4, 20)]
        mix = mixed(server, qs, args.mixed_seconds)
    finally:
        server.stop()
    table = Table(title=f"REST /v1/search over loopback, {n_pages} pages (budget 4500, k 10)")
    for col in ("clients", "searches", "searches/s", "p50 ms", "p95 ms", "errors", "5xx"):
        table.add_column(col, justify="right")
    for r in levels:
        table.add_row(str(r["clients"]), str(r["n"]), f"{r['searches_per_s']:.2f}",
                      f"{r['p50_ms']:.0f}", f"{r['p95_ms']:.0f}", str(r["errors"]), str(r["5xx"]))
    console.print(table)
    ratio = levels[0]["p50_ms"] / base["p50_ms"]
    console.print(f"1-client p50 / in-process p50 = {ratio:.2f}")
    s = mix["search"]
    console.print(f"mixed: {mix['uploads']} uploads while 20 clients searched "
                  f"{args.mixed_seconds:.0f} s: {s['n']} searches, {s['searches_per_s']:.2f}/s, "
                  f"p50 {s['p50_ms']:.0f} ms, p95 {s['p95_ms']:.0f} ms, {s['errors']} errors, "
                  f"{s['5xx']} 5xx; jobs done {mix['jobs_done']}/{mix['uploads']}, ingested "
                  f"{mix['files_ingested']}, listed exactly once {mix['listed_once']}")
    if args.json:
        args.json.write_text(json.dumps({"pages": n_pages, "in_process": base, "levels": levels, "ratio": ratio,
                                         "mixed": mix}, indent=2))
    shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()
