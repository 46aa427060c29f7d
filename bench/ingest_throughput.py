"""Ingest throughput: pages/s, seconds per stage and peak RSS, this tree vs
another (default ``main``), side by side in one run.

    python bench/ingest_throughput.py [--corpora html,pdf,scanned] [--graphs sqlite,neo4j]
                                      [--limit N] [--pdf-limit N] [--against REF|DIR|none]
                                      [--workers N] [--json OUT]

Corpora (from ``../shared/data``): ``html`` the dev Wikipedia pages
(``wtq/dev/pages``, a fixed-seed sample of ``--limit``), ``pdf`` born-digital
PDFs (``pdf/wiki`` sample of ``--pdf-limit`` plus ``pdf/real``), ``scanned``
image-only PDFs (``pdf/scanned``, OCR). Stores (``--graphs``): ``sqlite``
(the embedded store), ``neo4j`` (needs ``NEO4J_URI``; the page index stays
embedded) and ``neo4j+es``, the production stack (Neo4j and, with
``ELASTICSEARCH_URL``, an Elasticsearch page index of its own per run,
dropped after it).

Every (tree, corpus, graph) run is its own process with a fresh
``PILAR_HOME`` (on Neo4j the stored documents are deleted first), so peak RSS
(``ru_maxrss`` of the process and of its worker processes) is per run, and
so is ``cpu_s`` (user + system seconds of the process and its workers
during the ingest, the workers read from the forkserver that reaps them; ``pages_per_cpu_s`` and its ``cpu_ratio`` are the figures
to trust on a machine shared with other work, where wall time is not). The
embedding model is loaded and warmed before the clock starts (its load and,
for a built-at-first-use model, build time are reported as ``warm_s``).

Stages (seconds summed over files, so with parallel workers they can exceed
the wall time): ``read`` (file bytes), ``parse`` (HTML/PDF -> pages,
supports, tables, units; OCR included), ``graph`` (assertions and entities),
``embed`` (dense vectors), ``write`` (linking across documents and the store
transaction). A tree whose :class:`~pilar.model.IngestResult` carries
``stages`` reports them itself; for an older tree the stage functions are
wrapped with timers. The other tree is exported with ``git archive`` to a
temporary folder and run with ``PYTHONPATH`` pointing there, from the
run's fresh home folder: Python 3.11's forkserver, which the parse workers
start from, puts its working directory first on ``sys.path`` and ignores
the caller's, so a run started inside this checkout gave the other tree's
workers this tree's ``pilar`` and none of them started.
"""

from __future__ import annotations

import argparse
import inspect
import json
import os
import random
import resource
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SHARED = ROOT.parent / "shared" / "data"
STAGES = ("read", "parse", "graph", "embed", "write")


def corpus_files(name: str, limit: int | None, pdf_limit: int | None) -> list[str]:
    """The files of corpus ``name`` (sorted; fixed-seed samples under limits)."""
    def sample(files: list[Path], n: int | None) -> list[Path]:
        files = sorted(files)
        return sorted(random.Random(13).sample(files, n)) if n and n < len(files) else files

    if name == "html":
        files = sample(list((SHARED / "wtq" / "dev" / "pages").glob("*.html")), limit)
    elif name == "pdf":
        files = sample(list((SHARED / "pdf" / "wiki").glob("*.pdf")), pdf_limit) + \
            sorted((SHARED / "pdf" / "real").glob("*.pdf"))
    elif name == "scanned":
        files = sorted((SHARED / "pdf" / "scanned").glob("*.pdf"))
    else:
        raise SystemExit(f"unknown corpus {name!r} (html, pdf, scanned)")
    return [str(f) for f in files]


# -- the measured process ------------------------------------------------------
class _Timers:
    """Stage timers for a tree whose results carry no ``stages``: wraps the
    stage functions (read_source, parse_html/parse_pdf, build_graph,
    Pilar._embed, Pilar._store) of the imported ``pilar``."""

    def __init__(self):
        self.total = dict.fromkeys(STAGES, 0.0)

    def wrap(self, owner, attr: str, stage: str, minus: str | None = None):
        fn = getattr(owner, attr)

        def timed(*a, **kw):
            before = self.total[minus] if minus else 0.0
            t = time.perf_counter()
            try:
                return fn(*a, **kw)
            finally:
                spent = time.perf_counter() - t
                self.total[stage] += spent - ((self.total[minus] - before) if minus else 0.0)
        setattr(owner, attr, timed)

    def install(self):
        import pilar.ingest as ingest
        import pilar.ingest.html as html
        import pilar.ingest.pdf as pdf
        import pilar.pipeline as pipeline

        self.wrap(pipeline, "read_source", "read")
        self.wrap(html, "parse_html", "parse")
        self.wrap(pdf, "parse_pdf", "parse")
        self.wrap(ingest, "build_graph", "graph")
        self.wrap(pipeline.Pilar, "_embed", "embed")
        self.wrap(pipeline.Pilar, "_store", "write", minus="embed")


def _cpu_s() -> float:
    """CPU seconds (user + system) of this process, its ended children and
    the forkserver the parse workers are forked from with its ended children
    (the workers, which are the forkserver's children, not this process's):
    unlike wall time, barely moved by other load on a shared machine."""
    own, kids = (resource.getrusage(w) for w in (resource.RUSAGE_SELF, resource.RUSAGE_CHILDREN))
    return own.ru_utime + own.ru_stime + kids.ru_utime + kids.ru_stime + _forkserver_cpu_s()


def _forkserver_cpu_s() -> float:
    """CPU seconds of the running forkserver and of the children it reaped
    (``/proc/PID/stat`` utime, stime, cutime, cstime); 0 without one."""
    from multiprocessing import forkserver

    pid = getattr(forkserver._forkserver, "_forkserver_pid", None)
    try:
        with open(f"/proc/{pid}/stat") as f:
            fields = f.read().rpartition(")")[2].split()
    except (OSError, TypeError):
        return 0.0
    return sum(int(x) for x in fields[11:15]) / os.sysconf("SC_CLK_TCK")


def child(spec: dict) -> dict:
    """Ingest ``spec["files"]`` into a fresh store; the figures as a dict."""
    from pilar import Pilar
    from pilar.model import IngestResult

    p = Pilar(home=spec["home"])
    for d in p.docs() if spec["graph"] != "sqlite" else []:
        p.delete(d.doc_id)
    t = time.perf_counter()
    p.embedder.encode(["warm up the embedding model"])
    warm = time.perf_counter() - t
    own_stages = "stages" in {f.name for f in IngestResult.__dataclass_fields__.values()}
    timers = None if own_stages else _Timers()
    if timers:
        timers.install()
    kwargs = {}
    if "workers" in inspect.signature(p.ingest).parameters and spec.get("workers") is not None:
        kwargs["workers"] = spec["workers"]
    cpu0 = _cpu_s()
    t0 = time.perf_counter()
    results = p.ingest(spec["files"], **kwargs)
    wall = time.perf_counter() - t0
    cpu = _cpu_s() - cpu0
    ok = [r for r in results if r.status in ("ingested", "replaced")]
    if own_stages:
        stages = {s: sum(r.stages.get(s, 0.0) for r in results) for s in STAGES}
    else:
        stages = timers.total
    pages = sum(r.n_pages for r in ok)
    if p.index.name == "elasticsearch":
        p.index.drop()  # the run's own indexes
    return {"files": len(results), "failed": sum(r.status == "failed" for r in results),
            "pages": pages, "units": sum(r.n_units for r in ok), "wall_s": round(wall, 3),
            "pages_per_s": round(pages / wall, 3) if wall else 0.0, "cpu_s": round(cpu, 2),
            "pages_per_cpu_s": round(pages / cpu, 3) if cpu else 0.0, "warm_s": round(warm, 2),
            "stages_s": {k: round(v, 3) for k, v in stages.items()},
            "peak_rss_mb": round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, 1),
            "peak_rss_workers_mb": round(
                resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024, 1)}


# -- the orchestrator ----------------------------------------------------------
def export_tree(ref: str, tmp: Path) -> Path:
    """A folder holding ``ref``: the folder itself when it exists, else
    ``git archive ref`` of this repository unpacked under ``tmp``."""
    if Path(ref).is_dir():
        return Path(ref).resolve()
    sha = subprocess.run(["git", "-C", str(ROOT), "rev-parse", "--short", ref], check=True,
                         capture_output=True, text=True).stdout.strip()
    out = tmp / f"tree-{sha}"
    if not out.exists():
        out.mkdir(parents=True)
        archive = subprocess.run(["git", "-C", str(ROOT), "archive", ref], check=True,
                                 capture_output=True).stdout
        subprocess.run(["tar", "-x", "-C", str(out)], input=archive, check=True)
    return out


def run(tree: Path, spec: dict, tmp: Path) -> dict:
    """Run :func:`child` in a new process importing pilar from ``tree``."""
    home = Path(tempfile.mkdtemp(prefix="home-", dir=tmp))
    graph, _, index = spec["graph"].partition("+")
    env = {**os.environ, "PYTHONPATH": str(tree), "PILAR_GRAPH": graph,
           "PYTHONDONTWRITEBYTECODE": "1"}
    if index == "es":
        env.update(PILAR_INDEX="elasticsearch", PILAR_ELASTICSEARCH_INDEX=f"bench-{home.name}")
    # cwd: the forkserver's sys.path starts with it (see the module docstring)
    proc = subprocess.run([sys.executable, str(Path(__file__).resolve()), "--child",
                           json.dumps({**spec, "home": str(home)})],
                          env=env, capture_output=True, text=True, cwd=home)
    shutil.rmtree(home, ignore_errors=True)
    if proc.returncode != 0:
        raise SystemExit(f"run failed ({tree}, {spec['corpus']}, {spec['graph']}):\n"
                         + proc.stderr[-3000:])
    return json.loads(proc.stdout.strip().splitlines()[-1])


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--corpora", default="html,pdf,scanned")
    ap.add_argument("--graphs", default="sqlite")
    ap.add_argument("--limit", type=int, default=40, help="HTML pages (0 = all 400)")
    ap.add_argument("--pdf-limit", type=int, default=8, help="pdf/wiki files (0 = all 80)")
    ap.add_argument("--against", default="main", help="git ref or folder; 'none' to skip")
    ap.add_argument("--workers", type=int, default=None, help="ingest workers of this tree")
    ap.add_argument("--json", type=Path)
    ap.add_argument("--child", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.child:
        print(json.dumps(child(json.loads(args.child))))
        return

    from rich.console import Console
    from rich.table import Table

    console = Console()
    tmp = Path(tempfile.mkdtemp(prefix="pilar-ingest-bench-"))
    trees = {"this": ROOT}
    if args.against != "none":
        trees[args.against] = export_tree(args.against, tmp)
    report: dict = {"runs": []}
    try:
        for corpus in args.corpora.split(","):
            files = corpus_files(corpus, args.limit or None, args.pdf_limit or None)
            for graph in args.graphs.split(","):
                for name, tree in trees.items():
                    spec = {"files": files, "graph": graph, "corpus": corpus,
                            "workers": args.workers if name == "this" else None}
                    fig = run(tree, spec, tmp)
                    report["runs"].append({"tree": name, "corpus": corpus, "graph": graph,
                                           **fig})
                    console.print(f"{name} {corpus} {graph}: {fig['pages']} pages, "
                                  f"{fig['pages_per_s']} pages/s")
    finally:
        shutil.rmtree(tmp, ignore_errors=True)

    table = Table(title="ingest throughput (stage seconds summed over files)")
    for col in ("tree", "corpus", "graph", "files", "pages", "pages/s", "ratio", "pages/cpu-s",
                "cpu ratio", *STAGES,
                "warm s", "RSS MB", "workers MB"):
        table.add_column(col)
    base = {(r["corpus"], r["graph"]): r for r in report["runs"] if r["tree"] == args.against}
    for r in report["runs"]:
        other = base.get((r["corpus"], r["graph"]))
        ratio = r["pages_per_s"] / other["pages_per_s"] if other and other["pages_per_s"] else None
        r["ratio"] = round(ratio, 2) if ratio else None
        cpu_ratio = r["pages_per_cpu_s"] / other["pages_per_cpu_s"] \
            if other and other.get("pages_per_cpu_s") else None
        r["cpu_ratio"] = round(cpu_ratio, 2) if cpu_ratio else None
        table.add_row(r["tree"], r["corpus"], r["graph"], f"{r['files']} ({r['failed']} failed)",
                      str(r["pages"]), f"{r['pages_per_s']:.2f}",
                      f"{ratio:.2f}x" if ratio else "", f"{r['pages_per_cpu_s']:.2f}",
                      f"{cpu_ratio:.2f}x" if cpu_ratio else "", *[f"{r['stages_s'][s]:.1f}" for s in STAGES],
                      f"{r['warm_s']:.1f}", f"{r['peak_rss_mb']:.0f}",
                      f"{r['peak_rss_workers_mb']:.0f}")
    console.print(table)
    if args.json:
        args.json.parent.mkdir(parents=True, exist_ok=True)
        args.json.write_text(json.dumps(report, indent=2))


if __name__ == "__main__":
    main()
