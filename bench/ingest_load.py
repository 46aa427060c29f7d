"""Searches while an upload ingests: /v1/search p50/p95 at ``--clients``
concurrent clients on an idle server, then while one upload job of every
file in ``--folder`` ingests, for each source tree given (``--tree``, e.g.
main's checkout and a branch's) and each worker niceness (``--nice``,
repeatable: default the setting's), in one run, on fresh copies of one store.

    python bench/ingest_load.py --home STORE --folder FOLDER --tree A [--tree B]
                                [--nice 10 --nice 0] [--clients 4] [--n 40]
                                [--quiet-job] [--no-cli] [--json OUT]

Each tree's ``pilar serve`` (``PYTHONPATH=TREE``, its ingest worker at the
niceness of the row) serves a copy (SQLite backup) of the embedded store in
``--home``; after 5 warm-up searches and one warm-up pass of the ``--n``
questions (the searches during the ingest go round the same questions, so
both measures are warm) it answers them again at ``--clients`` clients
(fixed-seed WTQ lookup questions, budget 4,500 tokens, k 10:
bench/api_load.py's). Then, on a tree's first row, ``pilar ingest`` (the same
tree, niceness 0 as a command runs) ingests the files into another fresh
copy while the same clients search that server without pause: the fair
yardstick for the job, which runs under the same load (``--no-cli`` skips
it). Then the files are uploaded as one job and the same clients search
until it ends. With ``--quiet-job`` the same files are also uploaded as one
job to a server on another fresh copy with no search running, and ingested
by ``pilar ingest`` with no search running. Reported per row: idle and
during-ingest p50/p95, the ratio of the p95s, searches answered during the
ingest, the job's seconds from upload to end and its pages/s, ``pilar
ingest``'s pages/s under the same search load and the job's as a fraction
of it (issue 31: at least 0.8), and (``--quiet-job``) the quiet job's and
the quiet ``pilar ingest``'s; the load average after each row. Every run's
models come from one folder (``PILAR_MODELS_DIR``: the store's ``models``
when it has one), so none exports a model. Bounded: every request has a
300 s timeout and a job is waited for at most 1,800 s.
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


def cli_ingest(tree: Path, store: Path, files: list[Path], home: Path, env: dict,
               done: threading.Event | None = None) -> dict:
    """``pilar ingest`` of ``files`` by ``tree`` into ``home``, a fresh copy of
    ``store`` (then ``done`` is set): its seconds, the pages stored and pages/s."""
    copy_store(store, home)
    t0 = time.perf_counter()
    try:
        ran = subprocess.run([sys.executable, "-m", "pilar", "ingest", *map(str, files),
                              "--home", str(home)], env={**os.environ, **env,
                                                         "PYTHONPATH": str(tree)},
                             capture_output=True, text=True, timeout=3600)
    finally:
        if done is not None:
            done.set()
    seconds = time.perf_counter() - t0
    assert ran.returncode == 0, ran.stderr[-2000:]
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


def during(work, url: str, qs: list[str], clients: int) -> tuple[dict, dict]:
    """``work(done)`` (which sets ``done`` when it ends) while ``clients``
    search ``url`` without pause: ``(work's result, the searches' figures)``."""
    done = threading.Event()
    result: dict = {}
    runner = threading.Thread(target=lambda: result.update(work(done)))
    runner.start()
    busy = searches_until(url, qs, clients, done)
    runner.join()
    return result, busy


def one_row(tree: Path, store: Path, files: list[Path], qs: list[str], n: int, clients: int,
            tmp: Path, env: dict, nice: int | None, cli: bool, quiet: bool) -> dict:
    """Idle and during-ingest search figures of ``tree``'s server on a copy of
    ``store``, its worker at niceness ``nice`` (None: the setting's); with
    ``cli``, first ``pilar ingest`` of the same files under the same search
    load; with ``quiet``, the same job and ``pilar ingest`` with no search.
    Each ingest on a fresh copy."""
    name = f"{tree.name}-nice{nice}"
    home = tmp / f"home-{name}"
    copy_store(store, home)
    served = {"PILAR_API_KEYS": KEY, "PILAR_API_RATE_LIMIT": "", "PYTHONPATH": str(tree), **env}
    if nice is not None:
        served["PILAR_INGEST_NICE"] = str(nice)
    row: dict = {"tree": str(tree), "nice": nice}
    server = ApiServer(home, served).start()
    try:
        run_clients(server.url, qs[:5], 1)  # warm-up (loads the model on a lazy server)
        run_clients(server.url, qs[5:5 + n], clients)  # the questions' pages read once
        row["idle"] = run_clients(server.url, qs[5:5 + n], clients)
        if cli:
            row["cli"], row["during_cli"] = during(
                lambda done: cli_ingest(tree, store, files, tmp / f"cli-{name}", env, done),
                server.url, qs[5:], clients)
        result, row["during_ingest"] = during(lambda done: upload_job(server, files, done),
                                              server.url, qs[5:], clients)
    finally:
        server.stop()
    busy, job = row["during_ingest"], result["job"]
    row.update({"p95_ratio": busy["p95_ms"] / row["idle"]["p95_ms"] if busy["p95_ms"] else None,
                "job_seconds": result["seconds"], "pages": result["pages"],
                "pages_per_s": result["pages_per_s"], "job_state": job["state"],
                "counts": job["counts"]})
    if cli:
        row["job_vs_cli"] = row["pages_per_s"] / row["cli"]["pages_per_s"]
    if quiet:
        copy_store(store, tmp / f"quiet-{name}")
        server = ApiServer(tmp / f"quiet-{name}", served).start()
        try:
            row["quiet"] = upload_job(server, files, threading.Event())
            row["quiet"]["job"] = row["quiet"]["job"]["counts"]
        finally:
            server.stop()
        row["quiet_cli"] = cli_ingest(tree, store, files, tmp / f"quiet-cli-{name}", env)
        row["quiet_vs_cli"] = row["quiet"]["pages_per_s"] / row["quiet_cli"]["pages_per_s"]
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
    ap.add_argument("--no-cli", action="store_true",
                    help="skip the pilar ingest run under the same search load")
    ap.add_argument("--quiet-job", action="store_true",
                    help="also time the job and pilar ingest with no search running")
    ap.add_argument("--nice", type=int, action="append",
                    help="PILAR_INGEST_NICE of the servers' workers (repeat: a row each; "
                         "default the setting's)")
    ap.add_argument("--json", type=Path, help="write the figures here")
    args = ap.parse_args()
    files = sorted(f for f in args.folder.iterdir() if f.is_file())
    qs = questions(args.n + 5)
    tmp = Path(tempfile.mkdtemp(prefix="ingest-load-"))
    models = args.home / "models" if (args.home / "models").is_dir() else tmp / "models"
    env = {"PILAR_MODELS_DIR": os.environ.get("PILAR_MODELS_DIR", str(models))}
    try:
        rows = [one_row(t.resolve(), args.home, files, qs, args.n, args.clients, tmp, env, nice,
                        not args.no_cli, args.quiet_job)
                for t in args.tree for nice in args.nice or [None]]
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    table = Table(title=f"/v1/search at {args.clients} clients, idle vs while {len(files)} "
                        f"files of {args.folder.name} ingest (a job, or pilar ingest)")
    for col in ("tree", "nice", "idle p95", "job p95", "p95 ratio", "searches", "errors",
                "job pages/s", "cli pages/s (same load)", "cli p95", "job/cli", "quiet job",
                "quiet cli", "quiet job/cli", "load"):
        table.add_column(col, justify="right")
    for r in rows:
        i, b, c = r["idle"], r["during_ingest"], r.get("cli")
        table.add_row(Path(r["tree"]).name, "default" if r["nice"] is None else str(r["nice"]),
                      f"{i['p95_ms']:.0f}", f"{b['p95_ms']:.0f}", f"{r['p95_ratio']:.2f}",
                      str(b["n"]), str(b["errors"]),
                      f"{r['pages_per_s']:.3f} ({r['job_state']})",
                      f"{c['pages_per_s']:.3f}" if c else "-",
                      f"{r['during_cli']['p95_ms']:.0f}" if c else "-",
                      f"{r['job_vs_cli']:.2f}" if c else "-",
                      f"{r['quiet']['pages_per_s']:.3f}" if "quiet" in r else "-",
                      f"{r['quiet_cli']['pages_per_s']:.3f}" if "quiet" in r else "-",
                      f"{r['quiet_vs_cli']:.2f}" if "quiet" in r else "-",
                      f"{r['loadavg'][0]:.1f}")
    Console().print(table)
    if args.json:
        args.json.write_text(json.dumps(rows, indent=2))


if __name__ == "__main__":
    main()
