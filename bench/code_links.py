"""Precision of the links identifier codes make across documents
(:mod:`pilar.ingest.codes`): is a code two to ten documents share one thing?

    python bench/code_links.py [--home STORE] [--n 36] [--labels bench/data/code_link_labels.tsv]

Samples ``--n`` codes (seed 7) among those the store's documents share (the
ones bridge expansion may follow, ``PILAR_BRIDGE_DOCUMENTS``), prints each
with the text of up to three documents mentioning it, for labelling, and,
for the sampled codes the labels file holds (``entity<TAB>1|0<TAB>note``),
the share that name one thing in every document: the links' precision.
The default store is bench/multihop.py's ``all`` (multihop, multihop2 and
the 400 WTQ dev pages).
"""

from __future__ import annotations

import argparse
import random
import sys
from pathlib import Path

from rich.console import Console

sys.path.insert(0, str(Path(__file__).resolve().parent))
from baselines import OUT  # noqa: E402

from pilar import Pilar  # noqa: E402
from pilar.ingest.codes import is_code  # noqa: E402


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--home", type=Path, default=OUT / "home-multihop-all")
    ap.add_argument("--n", type=int, default=36)
    ap.add_argument("--labels", type=Path,
                    default=Path(__file__).resolve().parent / "data" / "code_link_labels.tsv")
    args = ap.parse_args()
    console = Console()
    p = Pilar(home=args.home)
    cap = p.settings.bridge_documents
    pages = [f"{d.doc_id}:{n}" for d in p.docs() for n in range(1, d.n_pages + 1)]
    codes: dict[str, tuple[str, set[str]]] = {}
    supports = p.graph.supports_on_pages(pages)
    sids = [s.support_id for ss in supports.values() for s in ss]
    text = {s.support_id: s.text for ss in supports.values() for s in ss}
    for start in range(0, len(sids), 2000):
        for b in p.graph.bridges(sids[start:start + 2000], cap, 3):
            if is_code(b.entity_id) and 2 <= b.documents <= cap:
                codes.setdefault(b.entity_id, (b.name, set()))[1].update(
                    sid for _, sid, _ in b.pages)
    sample = random.Random(7).sample(sorted(codes), min(args.n, len(codes)))
    labels = {}
    if args.labels.exists():
        for line in args.labels.read_text(encoding="utf-8").splitlines():
            if line and not line.startswith("#"):
                eid, same, *_ = line.split("\t")
                labels[eid] = same == "1"
    console.print(f"{len(codes)} codes shared by 2 to {cap} documents; {len(sample)} sampled")
    for eid in sample:
        name, where = codes[eid]
        mark = {True: "same", False: "DIFFERENT"}.get(labels.get(eid), "unlabelled")
        console.print(f"[bold]{eid}[/] ({name}): {mark}")
        for sid in sorted(where)[:3]:
            console.print(f"    {sid.split(':')[0]}: {text.get(sid, '')[:110]}", markup=False)
    judged = [labels[e] for e in sample if e in labels]
    if judged:
        console.print(f"precision: {sum(judged)} of {len(judged)} labelled codes name one thing "
                      f"({sum(judged) / len(judged):.2f})")


if __name__ == "__main__":
    main()
