"""The named alternatives the benches run side by side with pilar, as
:data:`pilar.eval.run.Method`-style retrievals scored by
:func:`pilar.eval.run.score_question` (so every figure is computed in one place).

All use pilar's token counter, so budgets are comparable:

- :class:`FlatChunks`: each page's plain text split into ``size``-token
  chunks with ``overlap``, the same hybrid scoring (0.4 BM25 min-max + 0.6
  dense, same embedder) at chunk level, chunks added greedily until the
  budget is full. Its ranked pages are the pages of its first 10 chunks.
- :func:`page_only`: pilar's base hybrid shortlist (no graph, no units), page
  texts in rank order until the budget is full.
- :func:`pilar_search`: ``Pilar``'s graph-linking retriever and packer.
"""

from __future__ import annotations

import sqlite3
from pathlib import Path

import numpy as np
from rich.progress import track

from pilar import Pilar
from pilar.eval.run import RANK_DEPTH, Retrieved, SearchMethod
from pilar.model import RankedPage
from pilar.retrieval.hybrid import min_max
from pilar.retrieval.sqlite import fts_query

SHARED = Path(__file__).resolve().parents[2] / "shared" / "data"
OUT = Path(__file__).resolve().parent / "out"
"""Where benchmarks keep stores, caches and results, whatever the working directory."""


def ingest(p: Pilar, folder: Path, pattern: str = "*") -> tuple[int, int]:
    """Ingest the files of ``folder`` matching ``pattern`` (a no-op for those
    already stored); returns (files, failed)."""
    files = sorted(f for f in folder.glob(pattern) if f.is_file())
    results = [p.ingest_file(f) for f in track(files, description=f"ingest {folder.name}")]
    return len(files), sum(r.status == "failed" for r in results)


def all_pages(p: Pilar) -> dict[str, RankedPage]:
    """Every stored page as an unscored :class:`RankedPage` (``doc_id:number``)."""
    out = {}
    for d in p.docs():
        for n in range(1, d.n_pages + 1):
            out[f"{d.doc_id}:{n}"] = RankedPage(f"{d.doc_id}:{n}", d.doc_id, n, 0.0, d.uri,
                                                d.title)
    return out


class FlatChunks:
    """The flat-chunk baseline (see the module docstring); its chunk table is
    its own in-memory FTS5 index, the chunk vectors are cached under ``cache``."""

    def __init__(self, p: Pilar, size: int = 512, overlap: int = 64, cache: Path | None = None):
        self.p = p
        self.size, self.overlap = size, overlap
        self.counter = p.tokens
        self.db = sqlite3.connect(":memory:")
        self.db.execute("CREATE VIRTUAL TABLE chunks USING fts5(text, tokenize='porter unicode61')")
        self.meta: list[tuple[str, str]] = []  # (page_id, text)
        self.page_rec = all_pages(p)
        tok = self.counter.tokenizer
        pages = p.graph.pages(list(self.page_rec))
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
        key = f"{size}-{overlap}-{len(self.meta)}-{sum(len(t) for _, t in self.meta)}"
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

    @property
    def name(self) -> str:
        return f"flat chunks ({self.size}/{self.overlap})"

    def rank(self, question: str, allowed: set[str] | None = None, pool: int = 80) -> list[int]:
        """Chunk indexes, best first: the union of the BM25 and dense top
        ``pool`` (or every chunk of the ``allowed`` pages), hybrid-scored."""
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
        """Chunks in ``order``, each added when it still fits (greedy)."""
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

    def pages(self, order: list[int]) -> list[RankedPage]:
        """The distinct pages of the first :data:`RANK_DEPTH` chunks, in order."""
        pids = dict.fromkeys(self.meta[i][0] for i in order[:RANK_DEPTH])
        return [self.page_rec[pid] for pid in pids]

    def retrieve(self, question: str, budget: int, allowed: set[str] | None = None) -> Retrieved:
        order = self.rank(question, allowed)
        return Retrieved(self.pages(order), self.packet(order, budget))


def page_only_packet(p: Pilar, ranked: list[RankedPage], budget: int) -> str:
    """Page texts of ``ranked`` in order, the last one truncated to fit."""
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


def page_only(p: Pilar, question: str, budget: int, k: int | None = None,
              allowed: list[str] | None = None) -> Retrieved:
    """Page-only: the hybrid shortlist (or ``allowed`` ranked among
    themselves), the first ``k`` pages (all when None) packed as plain text."""
    base = p.hybrid.shortlist(question) if allowed is None else p.hybrid.rank(question, allowed)
    return Retrieved(base, page_only_packet(p, base if k is None else base[:k], budget))


def pilar_search(p: Pilar, question: str, budget: int, k: int, profile: str | None = None,
                 ranked: list[RankedPage] | None = None) -> Retrieved:
    """pilar: the graph-linking retriever (``ranked`` when given, e.g. a
    gold-page candidate set) and the packer on its first ``k`` pages, as
    :meth:`Pilar.evaluate` runs them (:class:`pilar.eval.run.SearchMethod`)."""
    method = SearchMethod(lambda q, depth: p.retriever(profile).search(q, depth), p.pack, k,
                          budget)
    if ranked is None:
        ranked = method.rank(question, max(k, RANK_DEPTH))
    return method.retrieved(question, ranked)
