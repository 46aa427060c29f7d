"""Packet assembly under a fixed token budget (PILAR §3.5, App. G.1-G.2;
Tessera §3.1, §3.5).

The budget (reader tokens) is split: about ``base_share`` (70%) for base
pages and the rest for at most ``max_expanded_pages`` (2) pages that graph
expansion brought in; without expanded pages the base pages get it all. The
base share is cut into equal page items (``item_tokens`` each, at least
one); each item is a page excerpt: the page's evidence lines that best match
the question, in document order under a header naming the page. Then the
lowest-ranked base item is replaced, at equal cost, by a unit block: the
selected structure-completed units grouped so that each context path and
table header appears once above its rows. Every line of the packet belongs
to a :class:`~pilar.model.PacketItem` citing its support (document, page,
section path, bbox or table cell); group headers ride on the first row of
their group. The final text never exceeds the budget.
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from dataclasses import dataclass, field, replace

from pilar.config import Settings
from pilar.model import Citation, Packet, PacketItem, RankedPage, Support, Unit
from pilar.packing.selection import ScoredUnit, bm25_scores, tokens
from pilar.packing.statistics import TableKey, line_tokens, table_key, unit_line
from pilar.packing.tokens import TokenCounter


MAX_EXCERPT_LINES = 64
"""Candidate lines considered per page excerpt (best BM25 first)."""

_DEFAULT = {name: f.default for name, f in Settings.model_fields.items()}
"""The packing settings' defaults (:class:`~pilar.config.Settings`), the one
place they are written; :class:`PackingConfig` and :func:`block_order` default to them."""


@dataclass(frozen=True, slots=True)
class PackingConfig:
    """The packing settings (their meaning in :class:`~pilar.config.Settings`):
    budget shares in [0, 1], token sizes in reader tokens, counts of pages,
    units and rows."""

    base_share: float = _DEFAULT["base_share"]
    max_expanded: int = _DEFAULT["max_expanded_pages"]
    item_tokens: int = _DEFAULT["item_tokens"]
    block_tokens: int = _DEFAULT["block_tokens"]
    whole_table_share: float = _DEFAULT["whole_table_share"]
    neighbours: int = _DEFAULT["neighbour_rows"]
    prefilter: int = _DEFAULT["prefilter"]
    page_weight: float = _DEFAULT["unit_page_weight"]
    cues: bool = _DEFAULT["unit_cues"]

    @classmethod
    def of(cls, settings: Settings) -> "PackingConfig":
        """The packing settings of ``settings`` (``PILAR_BASE_SHARE``, ...)."""
        s = settings
        return cls(s.base_share, s.max_expanded_pages, s.item_tokens, s.block_tokens,
                   s.whole_table_share, s.neighbour_rows, s.prefilter, s.unit_page_weight,
                   s.unit_cues)


@dataclass(slots=True)
class PageEvidence:
    """What packing needs of one ranked page: its supports (document order)
    and a map from support id to support for citing units."""

    page: RankedPage
    supports: list[Support] = field(default_factory=list)


def cite(page: RankedPage, support: Support | None, unit: Unit | None = None) -> Citation:
    """The citation of a line from ``support`` (or ``unit``) on ``page``."""
    prov = support.provenance if support else None
    return Citation(
        doc_id=page.doc_id, source=page.source, page=page.number,
        section_path=prov.section_path if prov else (unit.context if unit else ()),
        support_id=support.support_id if support else (unit.support_id if unit else None),
        bbox=prov.bbox if prov else None, css_path=prov.css_path if prov else None,
        table_index=prov.table_index if prov else (unit.table_index if unit else None),
        row=prov.row if prov else (unit.row_index if unit else None),
        col=prov.col if prov else None,
    )


def page_header(page: RankedPage) -> str:
    return f"## {page.title or page.source} (page {page.number})"


def page_excerpt(question: str, ev: PageEvidence, counter: TokenCounter, limit: int,
                 tables: dict[TableKey, list[Unit]] | None = None,
                 skip: frozenset[TableKey] | set[TableKey] = frozenset()) -> list[PacketItem]:
    """The lines of ``ev.page`` that best match ``question`` (BM25 over its
    supports), printed in document order under the page header, within
    ``limit`` tokens. A table row comes under its table's header row (from
    the row units in ``tables``), printed once above the first row taken
    from that table and paid for like a line (Tessera §3.3: a cell without
    its headers is not evidence); rows of the tables in ``skip`` (the unit
    block carries them) are left out. A first line too long for the limit
    is truncated."""
    page = ev.page
    lines = [s for s in ev.supports if s.text.strip() and s.kind not in ("table", "heading")
             and _support_table(s, page) not in skip]
    header = page_header(page)
    header_cost = counter.count_one(header) + 1
    if not lines or limit <= header_cost + 8:
        return []
    heads = {key: head for key in {_support_table(s, page) for s in lines} - {None}
             if (head := _table_header(tables.get(key, ()) if tables else ()))}
    head_cost = dict(zip(heads, counter.count_many(list(heads.values()))))
    scores = bm25_scores(tokens(question), [s.text for s in lines])
    order = sorted(range(len(lines)), key=lambda i: (-scores[i], i))[:MAX_EXCERPT_LINES]
    costs = dict(zip(order, counter.count_many([lines[i].text for i in order])))
    chosen: dict[int, tuple[str, int]] = {}
    headed: set[TableKey] = set()
    spent = header_cost
    for i in order:
        key = _support_table(lines[i], page)
        extra = head_cost[key] + 1 if key in heads and key not in headed else 0
        cost = costs[i] + 1 + extra
        if spent + cost <= limit:
            chosen[i] = (lines[i].text, costs[i])
            spent += cost
            if extra:
                headed.add(key)
        elif not chosen and not extra and limit - spent > 16:
            text = counter.truncate(lines[i].text, limit - spent - 1)
            chosen[i] = (text, counter.count(text))
            spent = limit
        if limit - spent < 8:
            break
    items = []
    printed: set[TableKey] = set()
    for n, i in enumerate(sorted(chosen)):
        text, cost = chosen[i]
        body = 0
        key = _support_table(lines[i], page)
        if key in headed and key not in printed:
            printed.add(key)
            text, cost, body = (f"{heads[key]}\n{text}", cost + head_cost[key] + 1,
                                len(heads[key]) + 1)
        if n == 0:
            text, cost, body = f"{header}\n{text}", cost + header_cost, body + len(header) + 1
        items.append(PacketItem(text=text, citation=cite(page, lines[i]), tokens=cost,
                                page_id=page.page_id, body_start=body))
    return items


def _support_table(s: Support, page: RankedPage) -> TableKey | None:
    """The table a row support belongs to (the key of
    :func:`~pilar.packing.statistics.tables_of`)."""
    t = s.provenance.table_index if s.kind == "row" and s.provenance else None
    return (page.doc_id, page.number, t) if t is not None else None


def _table_header(rows: Iterable[Unit]) -> str:
    """A table's header row as packed above its rows (``"Year | Title"``),
    from its first row unit with column headers; "" when it has none
    (key-value tables, such as infoboxes, carry their keys in the rows)."""
    for u in rows:
        if headers := _shown_headers(u):
            return " | ".join(headers)
    return ""


def _shown_headers(u: Unit) -> tuple[str, ...]:
    """The header paths printed above a row unit: none for a key-value row
    (its key is its first cell) or a row without any header; never an empty
    one (a column without a header shows its position as ``"-"``)."""
    if u.kind != "row" or not any(u.headers):
        return ()
    if u.cells and not u.headers[0] and all(
            h == u.cells[0].replace("\n", " / ").rstrip(" :") for h in u.headers[1:]):
        return ()  # key-value row: ("", key, key...)
    return tuple(h or "-" for h in u.headers)


def block_order(selected: list[ScoredUnit], tables: dict[TableKey, list[Unit]],
                counter: TokenCounter, limit: int,
                whole_table_share: float = _DEFAULT["whole_table_share"],
                neighbours: int = _DEFAULT["neighbour_rows"]) -> list[ScoredUnit]:
    """The order in which units are offered to the unit block.

    The table of the best-scored row comes whole, in document order, when its
    rows cost at most ``whole_table_share`` of ``limit`` tokens (questions
    about a table's first, last, next or largest entry need rows no query
    term names); a bridging row (:attr:`ScoredUnit.bridging`: first for the
    chain it carries, not for its score) is not that row. Then each selected unit in score order, a row followed by
    its ``neighbours`` rows above and below in its table (Tessera §3.5
    packs by score; the neighbours are our addition for ordinal lookups).
    ``tables`` maps a table to its row units in document order."""
    out: list[ScoredUnit] = []
    seen: set[str] = set()

    def offer(s: ScoredUnit) -> None:
        if s.unit.unit_id not in seen:
            seen.add(s.unit.unit_id)
            out.append(s)

    top_table = next(filter(None, (table_key(s.unit) for s in selected if not s.bridging)),
                     None)
    if top_table and tables.get(top_table):
        rows = tables[top_table]
        cost = sum(line_tokens(rows, counter)) + len(rows)
        if cost <= whole_table_share * limit:
            best = next(s for s in selected if table_key(s.unit) == top_table)
            for u in rows:
                offer(ScoredUnit(u, 0.0, best.score, best.page_rank))
    position = {u.unit_id: i for rows in tables.values() for i, u in enumerate(rows)}
    for s in selected:
        offer(s)
        key = table_key(s.unit)
        if key is None or not neighbours or s.unit.unit_id not in position:
            continue
        rows, i = tables[key], position[s.unit.unit_id]
        for j in [*range(i - neighbours, i), *range(i + 1, i + neighbours + 1)]:
            if 0 <= j < len(rows):
                offer(ScoredUnit(rows[j], 0.0, s.score, s.page_rank))
    return out


def unit_block(selected: list[ScoredUnit], pages: dict[str, RankedPage],
               supports: dict[str, Support], counter: TokenCounter,
               limit: int) -> list[PacketItem]:
    """Tessera §3.5 grouped packing: units taken in the given order within
    ``limit`` tokens, grouped by (page, context path) and within that by
    table header, so each context path and each header row is printed once
    above its rows (and paid for once); groups in order of their first
    unit, rows in document order."""
    title = "## Evidence units"
    title_cost = counter.count_one(title) + 1
    spent = title_cost
    line_cost = line_tokens([s.unit for s in selected], counter)
    ctx_keys = [(f"{s.unit.doc_id}:{s.unit.page}", s.unit.context) for s in selected]
    head_keys = [(*ck, _shown_headers(s.unit)) for ck, s in zip(ctx_keys, selected)]
    ctx_text = {}
    for ck, s in zip(ctx_keys, selected):
        if ck not in ctx_text:
            ctx_text[ck] = _group_header(s.unit, pages.get(ck[0]))
    head_text = {hk: " | ".join(hk[2]) for hk in dict.fromkeys(head_keys) if hk[2]}
    ctx_cost = dict(zip(ctx_text, (c + 1 for c in counter.count_many(list(ctx_text.values())))))
    head_cost = dict(zip(head_text, (c + 1 for c in counter.count_many(list(head_text.values())))))
    groups: dict[tuple, dict[tuple, list[tuple[ScoredUnit, int]]]] = {}
    for s, cost, ck, hk in zip(selected, line_cost, ctx_keys, head_keys):
        extra = cost + 1
        if ck not in groups:
            extra += ctx_cost[ck]
        if hk in head_text and hk not in groups.get(ck, {}):
            extra += head_cost[hk]
        if spent + extra > limit:
            continue
        groups.setdefault(ck, {}).setdefault(hk, []).append((s, cost))
        spent += extra
    if not groups and selected:  # nothing fits whole: the best unit, truncated
        s, ck, hk = selected[0], ctx_keys[0], head_keys[0]
        room = limit - spent - ctx_cost[ck] - head_cost.get(hk, 0) - 1
        if room > 16:
            line = counter.truncate(unit_line(s.unit), room)
            cut = ScoredUnit(replace(s.unit, text=line, cells=(), stats=None), s.lexical, s.score,
                             s.page_rank)
            groups[ck] = {hk: [(cut, counter.count(line))]}
    items: list[PacketItem] = []
    for ck, heads in groups.items():
        page = pages.get(ck[0])
        for g, (hk, members) in enumerate(heads.items()):
            members.sort(key=lambda m: (m[0].unit.row_index if m[0].unit.row_index is not None
                                        else -1, m[0].unit.unit_id))
            for n, (s, cost) in enumerate(members):
                text, body = unit_line(s.unit), 0
                if n == 0 and hk in head_text:
                    text, cost, body = (f"{head_text[hk]}\n{text}", cost + head_cost[hk],
                                        len(head_text[hk]) + 1)
                if n == 0 and g == 0:
                    text, cost, body = (f"{ctx_text[ck]}\n{text}", cost + ctx_cost[ck],
                                        body + len(ctx_text[ck]) + 1)
                if not items:
                    text, cost, body = (f"{title}\n{text}", cost + title_cost,
                                        body + len(title) + 1)
                citation = cite(page, supports.get(s.unit.support_id), s.unit) if page else \
                    Citation(doc_id=s.unit.doc_id, source="", page=s.unit.page,
                             section_path=s.unit.context, support_id=s.unit.support_id,
                             table_index=s.unit.table_index)
                items.append(PacketItem(text=text, citation=citation, tokens=cost,
                                        page_id=ck[0], body_start=body))
    return items


def _group_header(u: Unit, page: RankedPage | None) -> str:
    """The context line of a group: its context path, and the page when the
    path does not start with the page's title (or it is not page 1)."""
    where = ""
    if page is not None:
        name = page.title or page.source
        if not u.context or u.context[0] != name:
            where = f" [{name}, page {page.number}]"
        elif page.number != 1:
            where = f" [page {page.number}]"
    return f"### {' > '.join(u.context) or 'page'}{where}"


def assemble(question: str, ranked: list[RankedPage], evidence: dict[str, PageEvidence],
             selected: list[ScoredUnit], counter: TokenCounter, budget: int,
             config: PackingConfig = PackingConfig(), *, use_units: bool = True,
             tables: dict[TableKey, list[Unit]] | None = None) -> Packet:
    """Build the packet for ``ranked`` pages (best first) within ``budget`` tokens.

    ``evidence`` maps page ids to their supports, ``selected`` are the
    reranked units of the anchor pages (best first), ``tables`` their tables'
    rows (see :func:`block_order`); ``config`` holds the packing settings.
    The base share is cut into items of about ``item_tokens``; the
    lowest-ranked items worth ``block_tokens`` (0: one item) are replaced by
    the unit block, which also takes what the page excerpts leave unused. A
    table is carried once: tables of the block are left out of the page
    excerpts (whose rows come under their header row otherwise,
    :func:`page_excerpt`); ``whole_table_share`` and ``neighbours`` shape its
    order (:func:`block_order`). ``use_units=False`` gives page items only.
    """
    c = config
    expanded = [p for p in ranked if p.trace.get("expanded")][:c.max_expanded]
    base = [p for p in ranked if not p.trace.get("expanded")]
    base_budget = int(budget * c.base_share) if expanded else budget
    n_items = max(1, round(base_budget / c.item_tokens))
    per_item = base_budget // n_items
    n_block = 0
    if use_units and selected:
        n_block = min(n_items, max(1, math.ceil((c.block_tokens or per_item) / per_item - 1e-9)))

    support_by_id = {s.support_id: s for ev in evidence.values() for s in ev.supports}
    tables = tables or {}
    pages = {p.page_id: p for p in ranked}
    excerpt_pages = base[: n_items - n_block]

    def excerpts(skip: set[TableKey], limits: dict[str, int] | None = None
                 ) -> list[PacketItem]:
        return [item for page in excerpt_pages for item in page_excerpt(
            question, evidence[page.page_id], counter,
            per_item if limits is None else limits.get(page.page_id, 0), tables, skip)]

    def block_for(limit: int) -> list[PacketItem]:
        order = block_order(selected, tables, counter, limit, c.whole_table_share,
                            c.neighbours)
        return unit_block(order, pages, support_by_id, counter, limit)

    items: list[PacketItem] = []
    if n_block:
        # The packet never carries a table twice: the block's tables are left
        # out of the page excerpts, and the block gets what that saves.
        block = block_for(base_budget - per_item * len(excerpt_pages))
        items = excerpts(_tables_in(block))
        limit = base_budget - sum(it.tokens + 1 for it in items)
        block = block_for(limit)
        carried = _tables_in(block)
        if carried & _tables_in(items):  # the larger block took a table an excerpt has
            spent: dict[str, int] = {}
            for it in items:
                spent[it.page_id] = spent.get(it.page_id, 0) + it.tokens + 1
            items = excerpts(carried, spent)  # each page within what it spent before
        items += block
        if not block and base:  # units too big for the block: the next page's excerpt
            page = base[min(n_items - n_block, len(base) - 1)]
            items += page_excerpt(question, evidence[page.page_id], counter, limit, tables)
    else:
        carried = set()
        items = excerpts(carried)
    if expanded:
        share = (budget - base_budget) // len(expanded)
        for p in expanded:
            items += page_excerpt(question, evidence[p.page_id], counter, share, tables,
                                  carried)
    return fit(items, counter, budget)


def _item_table(item: PacketItem) -> TableKey | None:
    c = item.citation
    return (c.doc_id, c.page, c.table_index) if c.table_index is not None else None


def _tables_in(items: list[PacketItem]) -> set[TableKey]:
    return {key for item in items if (key := _item_table(item)) is not None}


def fit(items: list[PacketItem], counter: TokenCounter, budget: int) -> Packet:
    """Join ``items`` into a packet, dropping the last ones while the joined
    text (counted as a whole, :meth:`~pilar.packing.tokens.TokenCounter.count_joined`)
    exceeds ``budget``."""
    text = "\n".join(item.text for item in items)
    total = counter.count_joined(text)
    while total > budget and items:
        items.pop()
        text = "\n".join(item.text for item in items)
        total = counter.count_joined(text)
    return Packet(text=text, items=items, budget=budget, tokens=total, tokenizer=counter.name,
                  estimate=counter.estimate)
