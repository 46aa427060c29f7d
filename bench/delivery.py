"""Evidence delivery: is every gold answer in the packet? pilar vs flat chunks
vs page-only, side by side, one tokenizer.

    python bench/delivery.py --pages DIR --questions TSV --budgets 3072,4500
                             [--limit N] [--json OUT] [--home DIR] [--gold-page]

Any folder of documents and a questions file in the format of
``../shared/data/wtq/dev/questions.tsv`` (qid, question, page_id, answers
joined by " | ", lookup); only ``lookup=1`` questions; ``--limit`` takes a
fixed-seed sample. A document is the gold page of a question when its file
stem is the question's ``page_id``.

Methods (all with pilar's token counter, so budgets are comparable):
- ``flat_chunks``: each page's plain text split into 512-token chunks with 64
  overlap, the same hybrid scoring (0.4 BM25 min-max + 0.6 dense) at chunk
  level, chunks added greedily until the budget is full;
- ``page_only``: pilar's base hybrid shortlist, page texts in rank order until
  the budget is full (no graph, no units);
- ``pilar``: ``Pilar.search`` (graph linking, unit selection, grouped packing);
- ``anchor_oracle``: not a method but pilar's ceiling: every gold answer
  somewhere in the full text of pilar's ranked pages, with no budget (what
  a perfect packer could deliver from the same retrieval; Tessera §4.6).

Figures: ``delivery`` (every gold answer, normalised, present in the
normalised packet text) and ``recall@10`` (the gold page among the first 10
ranked pages; for chunks, the pages of the first 10 chunks). ``--gold-page``
adds the gold-page setting: the gold page plus 4 random other pages, ranked
among themselves, packed at 1,024 tokens. JSON: method -> budget -> figures.
"""

from __future__ import annotations

import argparse
import json
import random
import re
import sqlite3
import time
import unicodedata
from pathlib import Path

import numpy as np
from rich.console import Console
from rich.progress import track
from rich.table import Table

from pilar import Pilar
from pilar.retrieval.hybrid import min_max
from pilar.retrieval.sqlite import fts_query

SHARED = Path(__file__).resolve().parents[2] / "shared" / "data"
_SPACE = re.compile(r"\s+")


def norm(text: str) -> str:
    """The dataset's answer normalisation: lowercase, collapse whitespace,
    strip leading/trailing punctuation (ASCII and Unicode P*)."""
    text = _SPACE.sub(" ", text.lower()).strip()
    while text and (unicodedata.category(text[0]).startswith("P") or text[0] in "!\"#$%&'()*+,-./:;<=>?@[\\]^_`{|}~"):
        text = text[1:].strip()
    while text and (unicodedata.category(text[-1]).startswith("P") or text[-1] in "!\"#$%&'()*+,-./:;<=>?@[\\]^_`{|}~"):
        text = text[:-1].strip()
    return text


def delivered(answers: list[str], packet_text: str) -> bool:
    hay = _SPACE.sub(" ", packet_text.lower())
    return all(norm(a) in hay for a in answers)


def load_questions(path: Path, limit: int | None) -> list[tuple[str, str, list[str]]]:
    rows = path.read_text(encoding="utf-8").splitlines()
    head = rows[0].split("\t")
    qi, pi, ai, li = (head.index(c) for c in ("question", "page_id", "answers", "lookup"))
    qs = [(r[qi], r[pi], r[ai].split(" | ")) for r in (x.split("\t") for x in rows[1:])
          if r[li] == "1"]
    if limit and limit < len(qs):
        qs = random.Random(13).sample(qs, limit)
    return qs


class FlatChunks:
    """The flat-chunk baseline: 512-token chunks (64 overlap) of each page's
    plain text, FTS5 BM25 + dense (the same embedder), greedy packing."""

    def __init__(self, p: Pilar, size: int = 512, overlap: int = 64, cache: Path | None = None):
        self.p = p
        self.counter = p.tokens
        self.db = sqlite3.connect(":memory:")
        self.db.execute("CREATE VIRTUAL TABLE chunks USING fts5(text, tokenize='porter unicode61')")
        self.meta: list[tuple[str, str]] = []  # (page_id, text)
        tok = self.counter.tokenizer
        page_ids = [r[0] for r in p.index.db.conn.execute("SELECT page_id FROM index_pages")]
        pages = p.graph.pages(page_ids)
        for pid in track(sorted(pages), description="chunk"):
            text = pages[pid].text
            enc = tok(text, add_special_tokens=False, return_offsets_mapping=True, verbose=False)
            offs = enc["offset_mapping"]
            step = size - overlap
            for start in range(0, max(len(offs), 1), step):
                window = offs[start:start + size]
                if not window:
                    break
                chunk = text[window[0][0]:window[-1][1]]
                self.meta.append((pid, chunk))
                if start + size >= len(offs):
                    break
        self.db.executemany("INSERT INTO chunks(rowid, text) VALUES (?, ?)",
                            [(i, t) for i, (_, t) in enumerate(self.meta)])
        key = f"{len(self.meta)}-{sum(len(t) for _, t in self.meta)}"
        cached = cache / f"chunk-vectors-{key}.npy" if cache else None
        if cached and cached.exists():
            self.vectors = np.load(cached)
        else:
            texts = [t for _, t in self.meta]
            self.vectors = np.concatenate([p.embedder.encode(texts[i:i + 256])
                                           for i in track(range(0, len(texts), 256),
                                                          description="embed chunks")])
            if cached:
                cached.parent.mkdir(parents=True, exist_ok=True)
                np.save(cached, self.vectors)

    def rank(self, question: str, allowed: set[str] | None = None, pool: int = 80) -> list[int]:
        q = self.p.embedder.query(question)
        dense_all = self.vectors @ q
        ids = None
        if allowed is not None:
            ids = [i for i, (pid, _) in enumerate(self.meta) if pid in allowed]
        match = fts_query(question)
        bm25: dict[int, float] = {}
        if match:
            sql = "SELECT rowid, -bm25(chunks) FROM chunks WHERE chunks MATCH ? ORDER BY bm25(chunks)"
            rows = self.db.execute(sql + ("" if ids is not None else f" LIMIT {pool}"),
                                   (match,)).fetchall()
            bm25 = {r: s for r, s in rows if ids is None or r in set(ids)}
        if ids is None:
            dense_top = np.argpartition(-dense_all, min(pool, len(dense_all) - 1))[:pool]
            cands = list(dict.fromkeys([*bm25, *map(int, dense_top)]))
        else:
            cands = ids
        normed = min_max({c: bm25.get(c, 0.0) for c in cands})
        return sorted(cands, key=lambda c: -(0.4 * normed[c] + 0.6 * float(dense_all[c])))

    def packet(self, order: list[int], budget: int) -> str:
        parts, used = [], 0
        for i in order:
            text = self.meta[i][1]
            cost = self.counter.count(text) + 1
            if used + cost > budget:
                continue  # greedy: try the next chunk
            parts.append(text)
            used += cost
            if budget - used < 32:
                break
        return "\n".join(parts)


def page_only_packet(p: Pilar, ranked, budget: int) -> str:
    pages = p.graph.pages([r.page_id for r in ranked])
    parts, used = [], 0
    for r in ranked:
        text = pages[r.page_id].text
        left = budget - used - 1
        if left < 16:
            break
        cost = p.tokens.count(text)
        if cost > left:
            text = p.tokens.truncate(text, left)
            cost = p.tokens.count(text)
        parts.append(text)
        used += cost + 1
    return "\n".join(parts)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--pages", type=Path, default=SHARED / "wtq" / "dev" / "pages")
    ap.add_argument("--questions", type=Path, default=SHARED / "wtq" / "dev" / "questions.tsv")
    ap.add_argument("--budgets", default="3072,4500")
    ap.add_argument("--limit", type=int)
    ap.add_argument("--home", type=Path, default=Path("bench/out/home-dev"))
    ap.add_argument("--json", type=Path)
    ap.add_argument("--gold-page", action="store_true", help="also run the gold-page setting")
    args = ap.parse_args()
    console = Console()
    budgets = [int(b) for b in args.budgets.split(",")]

    p = Pilar(home=args.home)
    files = sorted(f for f in args.pages.iterdir() if f.is_file())
    t0 = time.perf_counter()
    results = [p.ingest_file(f) for f in track(files, description="ingest")]
    console.print(f"ingest: {len(files)} files ({sum(r.status == 'failed' for r in results)} "
                  f"failed) in {time.perf_counter() - t0:.0f} s; tokenizer {p.tokens.name}"
                  f"{' (estimate)' if p.tokens.estimate else ''}")
    stem_of = {d.doc_id: Path(d.uri).stem for d in p.docs()}
    page_of = {}
    for pid in (r[0] for r in p.index.db.conn.execute("SELECT page_id FROM index_pages")):
        page_of.setdefault(stem_of.get(pid.rpartition(":")[0]), pid)
    questions = [q for q in load_questions(args.questions, args.limit) if q[1] in page_of]
    flat = FlatChunks(p, cache=Path("bench/out"))

    figures: dict[str, dict[str, dict[str, float]]] = {}
    settings = [("open", b) for b in budgets] + ([("gold", 1024)] if args.gold_page else [])
    rng = random.Random(13)
    all_pages = sorted(page_of.values())
    for setting, budget in settings:
        hits = {m: 0 for m in ("flat_chunks", "page_only", "pilar", "anchor_oracle")}
        rec = {m: 0 for m in hits}
        for question, gold, answers in track(questions, description=f"{setting} {budget}"):
            gold_pid = page_of[gold]
            if setting == "open":
                order = flat.rank(question)
                base = p.hybrid.shortlist(question)
                ranked = p.retriever().search(question, p.settings.top_k)
            else:
                others = rng.sample([x for x in all_pages if x != gold_pid], 4)
                allowed = [gold_pid, *others]
                order = flat.rank(question, set(allowed))
                base = p.hybrid.rank(question, allowed)
                ranked = base
            texts = {"flat_chunks": flat.packet(order, budget),
                     "page_only": page_only_packet(p, base, budget),
                     "pilar": p.pack(question, ranked, budget).text}
            top_pages = {
                "flat_chunks": list(dict.fromkeys(flat.meta[i][0] for i in order[:10])),
                "page_only": [r.page_id for r in base[:10]],
                "pilar": [r.page_id for r in ranked[:10]],
            }
            for m, text in texts.items():
                assert p.tokens.count(text) <= budget, (m, budget)
                hits[m] += delivered(answers, text)
                rec[m] += gold_pid in top_pages[m]
            anchors = p.graph.pages([r.page_id for r in ranked])
            hits["anchor_oracle"] += delivered(answers, "\n".join(x.text for x in anchors.values()))
            rec["anchor_oracle"] += gold_pid in top_pages["pilar"]
        label = str(budget) if setting == "open" else f"gold-{budget}"
        for m in hits:
            figures.setdefault(m, {})[label] = {"delivery": round(hits[m] / len(questions), 4),
                                                "recall@10": round(rec[m] / len(questions), 4),
                                                "n": len(questions)}

    table = Table(title=f"evidence delivery, {len(questions)} lookup questions, "
                        f"{len(stem_of)} documents")
    labels = list(next(iter(figures.values())))
    table.add_column("method")
    for label in labels:
        table.add_column(f"delivery {label}")
        table.add_column(f"recall@10 {label}")
    for m, by in figures.items():
        table.add_row(m, *[f"{by[l][k]:.3f}" for l in labels for k in ("delivery", "recall@10")])
    console.print(table)
    if args.json:
        args.json.parent.mkdir(parents=True, exist_ok=True)
        args.json.write_text(json.dumps(figures, indent=2))


if __name__ == "__main__":
    main()
