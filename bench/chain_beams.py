"""Where a multi-hop chain is lost: in the chain search, or in the ranking.

    python bench/chain_beams.py [--stores all] [--beams 12,24] [--json OUT]

For every question of 2 or more hops (``../shared/data/multihop`` and
``multihop2``, on the stores of ``bench/multihop.py``), the multi-hop
profile's bridge expansion (:mod:`pilar.retrieval.bridges`) is watched
through :attr:`BridgeExpander.on_chains
<pilar.retrieval.bridges.BridgeExpander.on_chains>` and its beam of as many
hops as the question's chain has is compared with the gold chain (its
documents, in any order). Per hop count:

- ``in beam``: the gold chain is one of the beam's chains (the search
  found it; when it is not, a link or an anchor is missing, not a weight);
- ``best``: it is the beam's best chain (the chain score picks it);
- ``top 3``: it is among the beam's three best;
- ``chain@5``: every gold document among the first 5 pages returned.

Each ``--beams`` width (``bridge_beam``) runs side by side in one run: a
wider beam that finds no more gold chains says the misses are links, not
the beam's width.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from rich.console import Console
from rich.table import Table

sys.path.insert(0, str(Path(__file__).resolve().parent))
from results import write  # noqa: E402
from baselines import OUT  # noqa: E402
from multihop import STORES, open_store, questions_of  # noqa: E402

from pilar import Pilar  # noqa: E402
from pilar.retrieval.expansion import GraphRetriever  # noqa: E402

FIGURES = ("in beam", "best", "top 3", "chain@5")


def watch(p: Pilar, questions, beam: int) -> dict[int, dict[str, list[float]]]:
    """``{hops: {figure: [0/1 per question]}}`` for the questions of 2 or
    more hops, with ``bridge_beam`` set to ``beam``."""
    settings = p.settings.model_copy(update={"profile": "multi-hop", "bridge_beam": beam})
    retriever = GraphRetriever(p.graph, p.index, p.retrievers.hybrid, settings.profiled())
    seen: dict[str, list[list[tuple[str, ...]]]] = {}

    def on_chains(question, depths, by_id):
        seen[question] = [[tuple(Path(by_id[pid].source).stem for pid in c.pages) for c in d]
                          for d in depths]

    retriever.bridges.on_chains = on_chains
    out: dict[int, dict[str, list[float]]] = {}
    for q in questions:
        if q.hops < 2:
            continue
        ranked = [Path(r.source).stem for r in retriever.search(q.question, 10)]
        gold = set(q.gold)
        depths = seen.get(q.question, [])
        chains = [set(c) for c in depths[q.hops - 1]] if len(depths) >= q.hops else []
        place = next((i for i, c in enumerate(chains) if c == gold), None)
        row = out.setdefault(q.hops, {f: [] for f in FIGURES})
        row["in beam"].append(float(place is not None))
        row["best"].append(float(place == 0))
        row["top 3"].append(float(place is not None and place < 3))
        row["chain@5"].append(float(gold <= set(ranked[:5])))
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--stores", default="all", help=f"comma-separated, of {', '.join(STORES)}")
    ap.add_argument("--beams", default="12,24", help="bridge_beam widths, side by side")
    ap.add_argument("--out", type=Path, default=OUT, help="where the stores live")
    ap.add_argument("--json", type=Path)
    args = ap.parse_args()
    console = Console()
    beams = [int(b) for b in args.beams.split(",")]
    result: dict = {}
    for store in args.stores.split(","):
        p = open_store(store, args.out, console)
        for s in STORES[store]:
            questions = questions_of(s)
            p.embedder.prime([q.question for q in questions])
            table = Table(title=f"{s} questions on store {store}: the gold chain in the beam")
            for column in ("hops", "n", "bridge_beam", *FIGURES):
                table.add_column(column, justify="left" if column == "hops" else "right")
            runs = {b: watch(p, questions, b) for b in beams}
            for hops in sorted(runs[beams[0]]):
                n = len(runs[beams[0]][hops]["best"])
                for b in beams:
                    table.add_row(str(hops), str(n), str(b),
                                  *(f"{sum(runs[b][hops][f]) / n:.2f}" for f in FIGURES))
            console.print(table)
            result.setdefault(store, {})[s] = {
                str(b): {str(h): {f: sum(v) / len(v) for f, v in runs[b][h].items()}
                         for h in sorted(runs[b])} for b in beams}
        p.close()
    write(result, args.json, indent=1)


if __name__ == "__main__":
    main()
