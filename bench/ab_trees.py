"""Two source trees side by side in one run: search latency (embedded store,
warm) and the packets of the delivery questions, question by question.

    python bench/ab_trees.py --tree A=/work/main:HOME_A --tree B=.:HOME_B
                             [--n 200] [--delivery 300] [--budgets 1024,3072]
                             [--neo4j-uri URI [--es-url URL --es-prefix P]]
                             [--api-clients 20 --api-n 100 --api-rounds 4] [--json OUT]

Each tree runs in its own worker process (``PYTHONPATH`` = the tree) on its
own copy of a store (a tree may migrate the store it opens, so give each its
own). Latency: the same ``--n`` lookup questions as bench/query_latency.py
(seed 13), all run once untimed, then each question timed in one tree and at
once in the other (the order swapped every question, the query-vector cache
emptied before each), so both see the same load of a shared machine; besides
wall time, the CPU time of the tree's process per search (all its threads:
what a loaded machine inflates least).
Packets: the ``--delivery`` questions of bench/delivery.py (fixed-seed
sample, those whose gold page the store holds), ranked as that bench ranks
them, packed at each budget in both trees; a packet is the same when its
text, token count and citations are byte-identical. Every difference is
listed with each side's delivery (every gold answer in the packet text).
With ``--neo4j-uri`` the graph is on that Neo4j (filled from the first
tree's store); with ``--es-url`` too the page index is on that
Elasticsearch under ``--es-prefix`` (the production stack, already holding
the corpus: ``bench/backend_parity.py --fill``), both trees on the same servers.
With ``--api-clients`` each tree also serves its store (``pilar serve`` as
that tree deploys it) and the servers take turns under that many clients
(:func:`api_load`).
"""

from __future__ import annotations

import argparse
import json
import os
import random
import statistics
import subprocess
import sys
import time
from pathlib import Path

from results import write

ROOT = Path(__file__).resolve().parents[1]
SHARED = ROOT.parent / "shared" / "data"
QUESTIONS = SHARED / "wtq" / "dev" / "questions.tsv"

WORKER = r"""
import json, sys, time
from pathlib import Path
from pilar import Pilar
from pilar.config import Settings
from pilar.model import to_jsonable
settings = Settings(**json.loads(sys.argv[2])) if len(sys.argv) > 2 else None
p = Pilar(home=sys.argv[1], settings=settings, create=False)
print(json.dumps({"ready": True}), flush=True)
for line in sys.stdin:
    req = json.loads(line)
    if req["op"] == "search":
        p.embedder._queries.clear()
        t, c = time.perf_counter(), time.process_time()
        p.search(req["q"])
        out = {"ms": 1000 * (time.perf_counter() - t), "cpu_ms": 1000 * (time.process_time() - c)}
    elif req["op"] == "packets":
        ranked = p.retriever().search(req["q"], p.settings.top_k)
        out = {"ranked": [r.page_id for r in ranked], "packets": {}}
        for b in req["budgets"]:
            pk = p.pack(req["q"], ranked, b)
            out["packets"][str(b)] = {
                "text": pk.text, "tokens": pk.tokens,
                "citations": to_jsonable(pk.citations)}
    print(json.dumps(out), flush=True)
"""


class Tree:
    """One tree's worker process: ``ask(request) -> reply`` over JSON lines."""

    def __init__(self, name: str, path: Path, home: Path, servers: dict | None = None):
        self.name = name
        env = {**os.environ, "PYTHONPATH": str(path), "HF_HUB_OFFLINE": "1",
               "TRANSFORMERS_OFFLINE": "1"}
        args = [json.dumps(servers)] if servers else []
        self.proc = subprocess.Popen([sys.executable, "-c", WORKER, str(home), *args], cwd=path,
                                     env=env, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                     text=True)
        assert json.loads(self.proc.stdout.readline())["ready"]

    def ask(self, **req) -> dict:
        self.proc.stdin.write(json.dumps(req) + "\n")
        self.proc.stdin.flush()
        return json.loads(self.proc.stdout.readline())

    def close(self) -> None:
        self.proc.stdin.close()
        self.proc.wait(timeout=60)


def pct(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[int(q * (len(ordered) - 1))]


def fill_neo4j(home: Path, uri: str) -> int:
    """Write the graph of every document of the embedded store in ``home`` to
    the Neo4j at ``uri`` (parsed again, as bench/query_latency.py does;
    documents already there are skipped); returns how many were written."""
    sys.path.insert(0, str(ROOT))
    from pilar import Pilar
    from pilar.config import Settings
    from pilar.graph.linking import link_across
    from pilar.ingest import parse

    embedded = Pilar(home=home, create=False)
    neo = Pilar(home=home, settings=Settings(graph="neo4j", neo4j_uri=uri))
    stored = {d.doc_id for d in neo.graph.documents()}
    written = 0
    for doc in embedded.docs():
        if doc.doc_id not in stored:
            parsed = parse(Path(doc.uri), settings=neo.settings)
            parsed.same_as = link_across(parsed, neo.graph, neo.settings)
            neo.graph.write_document(parsed)
            written += 1
    neo.close()
    embedded.close()
    return written


def latency(trees: list[Tree], n: int) -> dict:
    rows = [r.split("\t") for r in QUESTIONS.read_text(encoding="utf-8").splitlines()[1:]]
    qs = random.Random(13).sample([r[1] for r in rows if r[4] == "1"], n)
    for t in trees:
        for q in qs:
            t.ask(op="search", q=q)
    ms: dict[str, list[float]] = {t.name: [] for t in trees}
    cpu: dict[str, list[float]] = {t.name: [] for t in trees}
    load = os.getloadavg()[0]
    for i, q in enumerate(qs):
        for t in (trees if i % 2 == 0 else trees[::-1]):
            got = t.ask(op="search", q=q)
            ms[t.name].append(got["ms"])
            cpu[t.name].append(got["cpu_ms"])
    return {name: {"p50_ms": round(statistics.median(v), 1), "p95_ms": round(pct(v, 0.95), 1),
                   "mean_ms": round(statistics.fmean(v), 1), "n": len(v),
                   "cpu_p50_ms": round(statistics.median(cpu[name]), 1),
                   "cpu_mean_ms": round(statistics.fmean(cpu[name]), 1)}
            for name, v in ms.items()} | {"load_before": load, "load_after": os.getloadavg()[0]}


def packets(trees: list[Tree], limit: int, budgets: list[int]) -> dict:
    sys.path.insert(0, str(ROOT))
    from pilar.eval.metrics import delivered
    from pilar.eval.questions import load_questions

    questions, _ = load_questions(QUESTIONS, limit)
    same = {str(b): 0 for b in budgets}
    diffs = []
    delivery = {t.name: {str(b): 0 for b in budgets} for t in trees}
    for q in questions:
        got = [t.ask(op="packets", q=q.question, budgets=budgets) for t in trees]
        for b in map(str, budgets):
            packs = [g["packets"][b] for g in got]
            hits = [delivered(q.answers, pk["text"]) for pk in packs]
            for t, h in zip(trees, hits):
                delivery[t.name][b] += h
            if all(pk == packs[0] for pk in packs) and all(g["ranked"] == got[0]["ranked"]
                                                           for g in got):
                same[b] += 1
            else:
                diffs.append({"qid": q.qid, "budget": int(b),
                              "ranked_same": got[0]["ranked"] == got[1]["ranked"],
                              "text_same": packs[0]["text"] == packs[1]["text"],
                              "tokens": [pk["tokens"] for pk in packs],
                              "delivery": dict(zip((t.name for t in trees), hits))})
    return {"questions": len(questions), "identical": same, "delivery": delivery,
            "differences": diffs}


def api_load(specs: list[tuple[str, str, str]], clients: int, n: int, rounds: int) -> dict:
    """``POST /v1/search`` at ``clients`` concurrent clients against one
    ``pilar serve`` per tree (each as that tree serves by default), ``n``
    searches per round (budget 4,500, k 10, bench/api_load.py's questions),
    the trees taking turns for ``rounds`` rounds after a warm-up round each
    (the idle server costs nothing meanwhile): searches/s, p50, p95 over all
    rounds, errors, and the 1-minute load average before and after."""
    sys.path.insert(0, str(ROOT / "bench"))
    from api_load import KEY, questions, run_clients  # noqa: E402
    from tests.serving import free_port  # noqa: E402

    import httpx

    qs = questions(n)
    servers = {}
    try:
        for name, path, home in specs:
            port = free_port()
            env = {**os.environ, "PYTHONPATH": str(Path(path).resolve()), "HF_HUB_OFFLINE": "1",
                   "TRANSFORMERS_OFFLINE": "1", "PILAR_HOME": str(Path(home).resolve()),
                   "PILAR_API_KEYS": KEY, "PILAR_API_RATE_LIMIT": ""}
            log = open(Path(home) / "ab-server.log", "ab")
            proc = subprocess.Popen([sys.executable, "-m", "pilar", "serve", "--port", str(port)],
                                    env=env, cwd=Path(path).resolve(), stdout=log,
                                    stderr=subprocess.STDOUT)
            servers[name] = (proc, f"http://127.0.0.1:{port}")
        for name, (proc, url) in servers.items():
            for _ in range(600):
                try:
                    if httpx.get(url + "/readyz", timeout=2).status_code == 200:
                        break
                except httpx.HTTPError:
                    pass
                time.sleep(0.5)
            run_clients(url, qs, clients)  # warm-up: every process's caches
        runs: dict[str, list[dict]] = {name: [] for name in servers}
        load = os.getloadavg()[0]
        for r in range(rounds):
            for name in (list(servers) if r % 2 == 0 else list(servers)[::-1]):
                runs[name].append(run_clients(servers[name][1], qs, clients))
    finally:
        for proc, _ in servers.values():
            proc.terminate()
            proc.wait(60)
    out: dict = {"load_before": load, "load_after": os.getloadavg()[0]}
    for name, rs in runs.items():
        total = sum(x["n"] for x in rs)
        out[name] = {"clients": clients, "searches": total,
                     "searches_per_s": round(total / sum(x["n"] / x["searches_per_s"]
                                                         for x in rs), 2),
                     "p50_ms_of_rounds": [round(x["p50_ms"]) for x in rs],
                     "p95_ms_of_rounds": [round(x["p95_ms"]) for x in rs],
                     "errors": sum(x["errors"] for x in rs)}
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--tree", action="append", required=True, metavar="NAME=PATH:HOME")
    ap.add_argument("--n", type=int, default=200)
    ap.add_argument("--delivery", type=int, default=300)
    ap.add_argument("--budgets", default="1024,3072")
    ap.add_argument("--neo4j-uri", help="the graph on this Neo4j (one for both trees, "
                    "filled from the first tree's store), the page index embedded")
    ap.add_argument("--es-url", help="with --neo4j-uri: the page index on this Elasticsearch")
    ap.add_argument("--es-prefix", default="pilar", help="its alias prefix")
    ap.add_argument("--api-clients", type=int, default=0,
                    help="also load each tree's served API with this many clients")
    ap.add_argument("--api-n", type=int, default=100, help="searches per API round")
    ap.add_argument("--api-rounds", type=int, default=4)
    ap.add_argument("--json", type=Path)
    args = ap.parse_args()
    specs = [(s.partition("=")[0], *s.partition("=")[2].split(":")) for s in args.tree]
    report: dict = {"trees": {name: f"{path} ({home})" for name, path, home in specs}}
    servers = None
    if args.neo4j_uri and args.es_url:
        servers = {"graph": "neo4j", "neo4j_uri": args.neo4j_uri, "index": "elasticsearch",
                   "elasticsearch_url": args.es_url, "elasticsearch_index": args.es_prefix}
    elif args.neo4j_uri:
        servers = {"graph": "neo4j", "neo4j_uri": args.neo4j_uri}
        report["neo4j_filled"] = fill_neo4j(Path(specs[0][2]).resolve(), args.neo4j_uri)
    if args.api_clients:
        report["api"] = api_load(specs, args.api_clients, args.api_n, args.api_rounds)
        print(json.dumps(report["api"], indent=1), flush=True)
    trees = [Tree(name, Path(path).resolve(), Path(home).resolve(), servers)
             for name, path, home in specs] if args.n or args.delivery else []
    t0 = time.perf_counter()
    try:
        if args.n:
            report["latency"] = latency(trees, args.n)
            print(json.dumps(report["latency"], indent=1), flush=True)
        if args.delivery:
            report["packets"] = packets(trees, args.delivery,
                                        [int(b) for b in args.budgets.split(",")])
            shown = {k: v for k, v in report["packets"].items() if k != "differences"}
            print(json.dumps(shown, indent=1))
            for d in report["packets"]["differences"]:
                print(json.dumps(d))
    finally:
        for t in trees:
            t.close()
    report["seconds"] = round(time.perf_counter() - t0)
    write(report, args.json, indent=1)


if __name__ == "__main__":
    main()
