"""Searches while an upload ingests: /v1/search p50/p95 at ``--clients``
concurrent clients on an idle server, then while one upload job of every
file in ``--folder`` ingests, for each source tree given (``--tree``, e.g.
main's checkout and a branch's), in one run, on fresh copies of one store.

    python bench/ingest_load.py --home STORE --folder FOLDER --tree A --tree B
                                [--clients 4] [--n 40] [--json OUT]

Each tree's ``pilar serve`` (``PYTHONPATH=TREE``) serves a copy (SQLite
backup) of the embedded store in ``--home``; after 5 warm-up searches it
answers ``--n`` searches at ``--clients`` clients (fixed-seed WTQ lookup
questions, budget 4,500 tokens, k 10: bench/api_load.py's), then the files
of ``--folder`` are uploaded as one job and the same clients search until
the job ends. Reported per tree: idle and during-ingest p50/p95, the ratio
of the p95s, searches answered during the ingest, the job's seconds from
upload to end and its pages/s, and the files ingested. Bounded: every
request has a 300 s timeout and a job is waited for at most 1,800 s.
"""

from __future__ import annotations

import argparse
import json
import shutil
import statistics
import tempfile
import threading
import time
from pathlib import Path

from api_load import BUDGET, KEY, K, copy_store, pct, questions, run_clients

from tests.serving import ApiServer, wait_job


def searches_until(url: str, qs: list[str], clients: int, done: threading.Event) -> dict:
    """``clients`` threads search (questions ``qs`` round and round) until
    ``done`` is set; latency figures as :func:`api_load.run_clients`."""
    import httpx

    lat, errors = [], 0
    lock = threading.Lock()

    def worker(seed: int) -> None:
        nonlocal errors
        with httpx.Client(base_url=url, headers={"X-API-Key": KEY}, timeout=300) as c:
            i = seed
            while not done.is_set():
                q = qs[i % len(qs)]
                i += clients
                t0 = time.perf_counter()
                r = c.post("/v1/search", json={"query": q, "budget_tokens": BUDGET, "k": K})
                with lock:
                    lat.append(time.perf_counter() - t0)
                    errors += r.status_code != 200

    threads = [threading.Thread(target=worker, args=(n,)) for n in range(clients)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    return {"n": len(lat), "p50_ms": 1000 * statistics.median(lat) if lat else None,
            "p95_ms": 1000 * pct(lat, 0.95) if lat else None, "errors": errors}


def one_tree(tree: Path, store: Path, files: list[Path], qs: list[str], n: int,
             clients: int, tmp: Path) -> dict:
    """Idle and during-ingest search figures of ``tree``'s server on a copy of ``store``."""
    home = tmp / f"home-{tree.name}"
    copy_store(store, home)
    server = ApiServer(home, {"PILAR_API_KEYS": KEY, "PILAR_API_RATE_LIMIT": "",
                              "PYTHONPATH": str(tree)}).start()
    try:
        run_clients(server.url, qs[:5], 1)  # warm-up (loads the model on a lazy server)
        idle = run_clients(server.url, qs[5:5 + n], clients)
        client = server.client(KEY)
        done = threading.Event()
        result: dict = {}
        t0 = time.perf_counter()
        r = client.post("/v1/documents", files=[("files", (f.name, f.read_bytes()))
                                                for f in files])
        assert r.status_code == 202, r.text[:300]
        job_id = r.json()["job_id"]

        def follow() -> None:
            result["job"] = wait_job(client, job_id, timeout=1800)
            result["seconds"] = time.perf_counter() - t0
            done.set()

        waiter = threading.Thread(target=follow)
        waiter.start()
        busy = searches_until(server.url, qs[5:], clients, done)
        waiter.join()
        client.close()
    finally:
        server.stop()
    job = result["job"]
    pages = sum(f["n_pages"] for f in job["files"])
    return {"tree": str(tree), "idle": idle, "during_ingest": busy,
            "p95_ratio": busy["p95_ms"] / idle["p95_ms"] if busy["p95_ms"] else None,
            "job_seconds": result["seconds"], "pages": pages,
            "pages_per_s": pages / result["seconds"], "job_state": job["state"],
            "counts": job["counts"]}


def main() -> None:
    from rich.console import Console
    from rich.table import Table

    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--home", type=Path, required=True, help="the embedded store searched "
                    "(copied for each tree)")
    ap.add_argument("--folder", type=Path, required=True, help="the files uploaded as one job")
    ap.add_argument("--tree", type=Path, action="append", required=True,
                    help="a pilar source tree to serve (repeat: each in turn)")
    ap.add_argument("--clients", type=int, default=4, help="concurrent searching clients")
    ap.add_argument("--n", type=int, default=40, help="searches of the idle measure")
    ap.add_argument("--json", type=Path, help="write the figures here")
    args = ap.parse_args()
    files = sorted(f for f in args.folder.iterdir() if f.is_file())
    qs = questions(args.n + 5)
    tmp = Path(tempfile.mkdtemp(prefix="ingest-load-"))
    try:
        rows = [one_tree(t.resolve(), args.home, files, qs, args.n, args.clients, tmp)
                for t in args.tree]
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    table = Table(title=f"/v1/search at {args.clients} clients, idle vs while {len(files)} "
                        f"files of {args.folder.name} ingest as one upload job")
    for col in ("tree", "idle p50", "idle p95", "ingest p50", "ingest p95", "p95 ratio",
                "searches", "errors", "job s", "pages/s", "job"):
        table.add_column(col, justify="right")
    for r in rows:
        i, b = r["idle"], r["during_ingest"]
        table.add_row(r["tree"], f"{i['p50_ms']:.0f}", f"{i['p95_ms']:.0f}",
                      f"{b['p50_ms']:.0f}", f"{b['p95_ms']:.0f}", f"{r['p95_ratio']:.2f}",
                      str(b["n"]), str(b["errors"]), f"{r['job_seconds']:.1f}",
                      f"{r['pages_per_s']:.2f}", f"{r['job_state']} {r['counts']}")
    Console().print(table)
    if args.json:
        args.json.write_text(json.dumps(rows, indent=2))


if __name__ == "__main__":
    main()
