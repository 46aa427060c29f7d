"""Searches while an upload ingests: /v1/search p50/p95 at ``--clients``
concurrent clients on an idle server, then while one upload job of every
file in ``--folder`` ingests, for each source tree given (``--tree``, e.g.
main's checkout and a branch's), in one run, on fresh copies of one store.

    python bench/ingest_load.py --home STORE --folder FOLDER --tree A --tree B
                                [--clients 4] [--n 40] [--json OUT]

Each tree's ``pilar serve`` (``PYTHONPATH=TREE``) serves a copy (SQLite
backup) of the embedded store in ``--home``; after 5 warm-up searches and
one warm-up pass of the ``--n`` questions (the searches during the ingest
go round the same questions, so both measures are warm) it answers them
again at ``--clients`` clients (fixed-seed WTQ lookup
questions, budget 4,500 tokens, k 10: bench/api_load.py's), then the files
of ``--folder`` are uploaded as one job and the same clients search until
the job ends (its worker at ``--nice``, default the setting's). Then, with
no search running, the same files are uploaded as one job to a server on
another fresh copy (``--quiet-job``) and ingested by ``pilar ingest`` (the
same tree) into another (``--no-cli`` skips it). Reported per tree: idle and during-ingest p50/p95,
the ratio of the p95s, searches answered during the ingest, the job's
seconds from upload to end and its pages/s, the files ingested, the
quiet job's, and ``pilar ingest``'s seconds and pages/s on the same files
with each job's pages/s as a fraction of them; the load average after each
tree. Every run's models come from one folder
(``PILAR_MODELS_DIR``: the store's ``models`` when it has one), so none
exports a model. Bounded: every request has a 300 s timeout and a job is
waited for at most 1,800 s.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
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


def cli_ingest(tree: Path, store: Path, files: list[Path], tmp: Path, env: dict) -> dict:
    """``pilar ingest`` of ``files`` by ``tree`` into a fresh copy of ``store``:
    its seconds, the pages stored and pages/s."""
    home = tmp / f"cli-{tree.name}"
    copy_store(store, home)
    t0 = time.perf_counter()
    done = subprocess.run([sys.executable, "-m", "pilar", "ingest", *map(str, files),
                           "--home", str(home)], env={**os.environ, **env,
                                                      "PYTHONPATH": str(tree)},
                          capture_output=True, text=True, timeout=3600)
    seconds = time.perf_counter() - t0
    assert done.returncode == 0, done.stderr[-2000:]
    from pilar import Pilar
    from pilar.config import Settings

    before, after = (Pilar(settings=Settings(home=h)) for h in (store, home))
    pages = after.stats()["pages"] - before.stats()["pages"]
    before.close()
    after.close()
    return {"seconds": seconds, "pages": pages, "pages_per_s": pages / seconds}


def upload_job(server: ApiServer, files: list[Path], done: threading.Event) -> dict:
    """Upload ``files`` to ``server`` as one job and wait for its end (then
    set ``done``): its record, seconds from upload to end, pages and pages/s."""
    with server.client(KEY) as client:
        t0 = time.perf_counter()
        r = client.post("/v1/documents", files=[("files", (f.name, f.read_bytes()))
                                                for f in files])
        assert r.status_code == 202, r.text[:300]
        job = wait_job(client, r.json()["job_id"], timeout=1800)
        seconds = time.perf_counter() - t0
    done.set()
    pages = sum(f["n_pages"] for f in job["files"])
    return {"job": job, "seconds": seconds, "pages": pages, "pages_per_s": pages / seconds}


def one_tree(tree: Path, store: Path, files: list[Path], qs: list[str], n: int,
             clients: int, tmp: Path, env: dict, cli: bool, quiet: bool) -> dict:
    """Idle and during-ingest search figures of ``tree``'s server on a copy of
    ``store``; then (``quiet``) the same job with no search, and (``cli``)
    ``pilar ingest`` of the same files, each on a fresh copy."""
    home = tmp / f"home-{tree.name}"
    copy_store(store, home)
    served = {"PILAR_API_KEYS": KEY, "PILAR_API_RATE_LIMIT": "", "PYTHONPATH": str(tree), **env}
    server = ApiServer(home, served).start()
    try:
        run_clients(server.url, qs[:5], 1)  # warm-up (loads the model on a lazy server)
        run_clients(server.url, qs[5:5 + n], clients)  # the questions' pages read once
        idle = run_clients(server.url, qs[5:5 + n], clients)
        done = threading.Event()
        result: dict = {}
        waiter = threading.Thread(target=lambda: result.update(upload_job(server, files, done)))
        waiter.start()
        busy = searches_until(server.url, qs[5:], clients, done)
        waiter.join()
    finally:
        server.stop()
    job = result["job"]
    row = {"tree": str(tree), "idle": idle, "during_ingest": busy,
           "p95_ratio": busy["p95_ms"] / idle["p95_ms"] if busy["p95_ms"] else None,
           "job_seconds": result["seconds"], "pages": result["pages"],
           "pages_per_s": result["pages_per_s"], "job_state": job["state"],
           "counts": job["counts"]}
    if quiet:
        copy_store(store, tmp / f"quiet-{tree.name}")
        server = ApiServer(tmp / f"quiet-{tree.name}", served).start()
        try:
            row["quiet"] = upload_job(server, files, threading.Event())
            row["quiet"]["job"] = row["quiet"]["job"]["counts"]
        finally:
            server.stop()
    if cli:
        row["cli"] = cli_ingest(tree, store, files, tmp, env)
        row["job_vs_cli"] = row["pages_per_s"] / row["cli"]["pages_per_s"]
        if quiet:
            row["quiet_vs_cli"] = row["quiet"]["pages_per_s"] / row["cli"]["pages_per_s"]
    row["loadavg"] = os.getloadavg()
    return row


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
    ap.add_argument("--no-cli", action="store_true", help="skip the pilar ingest run")
    ap.add_argument("--quiet-job", action="store_true",
                    help="also time the job with no search running")
    ap.add_argument("--nice", type=int, help="PILAR_INGEST_NICE of the servers' workers")
    ap.add_argument("--json", type=Path, help="write the figures here")
    args = ap.parse_args()
    files = sorted(f for f in args.folder.iterdir() if f.is_file())
    qs = questions(args.n + 5)
    tmp = Path(tempfile.mkdtemp(prefix="ingest-load-"))
    models = args.home / "models" if (args.home / "models").is_dir() else tmp / "models"
    env = {"PILAR_MODELS_DIR": os.environ.get("PILAR_MODELS_DIR", str(models))}
    if args.nice is not None:
        env["PILAR_INGEST_NICE"] = str(args.nice)
    try:
        rows = [one_tree(t.resolve(), args.home, files, qs, args.n, args.clients, tmp, env,
                         not args.no_cli, args.quiet_job) for t in args.tree]
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    table = Table(title=f"/v1/search at {args.clients} clients, idle vs while {len(files)} "
                        f"files of {args.folder.name} ingest as one upload job")
    for col in ("tree", "idle p50", "idle p95", "ingest p50", "ingest p95", "p95 ratio",
                "searches", "errors", "job s", "pages/s", "job", "quiet job pages/s",
                "cli pages/s", "job/cli", "quiet/cli"):
        table.add_column(col, justify="right")
    for r in rows:
        i, b, c = r["idle"], r["during_ingest"], r.get("cli")
        table.add_row(r["tree"], f"{i['p50_ms']:.0f}", f"{i['p95_ms']:.0f}",
                      f"{b['p50_ms']:.0f}", f"{b['p95_ms']:.0f}", f"{r['p95_ratio']:.2f}",
                      str(b["n"]), str(b["errors"]), f"{r['job_seconds']:.1f}",
                      f"{r['pages_per_s']:.2f}", f"{r['job_state']} {r['counts']}",
                      f"{r['quiet']['pages_per_s']:.2f}" if "quiet" in r else "-",
                      f"{c['pages_per_s']:.2f}" if c else "-",
                      f"{r['job_vs_cli']:.2f}" if c else "-",
                      f"{r['quiet_vs_cli']:.2f}" if "quiet_vs_cli" in r else "-")
    Console().print(table)
    if args.json:
        args.json.write_text(json.dumps(rows, indent=2))


if __name__ == "__main__":
    main()
