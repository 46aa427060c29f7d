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

from dataclasses import dataclass, field

from pilar.model import Citation, Packet, PacketItem, RankedPage, Support, Unit
from pilar.packing.selection import ScoredUnit, bm25_scores, tokens
from pilar.packing.tokens import TokenCounter


MAX_EXCERPT_LINES = 64
"""Candidate lines considered per page excerpt (best BM25 first)."""


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


def page_excerpt(question: str, ev: PageEvidence, counter: TokenCounter,
                 limit: int) -> list[PacketItem]:
    """The lines of ``ev.page`` that best match ``question`` (BM25 over its
    supports), printed in document order under the page header, within
    ``limit`` tokens. A first line too long for the limit is truncated."""
    page = ev.page
    lines = [s for s in ev.supports if s.text.strip() and s.kind not in ("table", "heading")]
    header = page_header(page)
    header_cost = counter.count(header) + 1
    if not lines or limit <= header_cost + 8:
        return []
    scores = bm25_scores(tokens(question), [tokens(s.text) for s in lines])
    order = sorted(range(len(lines)), key=lambda i: (-scores[i], i))[:MAX_EXCERPT_LINES]
    costs = dict(zip(order, counter.count_many([lines[i].text for i in order])))
    chosen: dict[int, str] = {}
    spent = header_cost
    for i in order:
        cost = costs[i] + 1
        if spent + cost <= limit:
            chosen[i] = lines[i].text
            spent += cost
        elif not chosen and limit - spent > 16:
            chosen[i] = counter.truncate(lines[i].text, limit - spent - 1)
            spent = limit
        if limit - spent < 8:
            break
    items = []
    for n, i in enumerate(sorted(chosen)):
        text = f"{header}\n{chosen[i]}" if n == 0 else chosen[i]
        items.append(PacketItem(text=text, citation=cite(page, lines[i]),
                                tokens=counter.count(text), page_id=page.page_id))
    return items


def unit_block(selected: list[ScoredUnit], pages: dict[str, RankedPage],
               supports: dict[str, Support], counter: TokenCounter,
               limit: int) -> list[PacketItem]:
    """Tessera §3.5 grouped packing: units chosen by score within ``limit``
    tokens, grouped by (page, context path, table header) so each context and
    header is printed once above its rows; groups in order of their best
    unit, rows in document order."""
    groups: dict[tuple, list[ScoredUnit]] = {}
    header_text: dict[tuple, str] = {}
    spent = counter.count("## Evidence units") + 1
    line_cost = counter.count_many([_line(s.unit) for s in selected])
    for s, cost in zip(selected, line_cost):
        u = s.unit
        page_id = f"{u.doc_id}:{u.page}"
        key = (page_id, u.context, u.headers if u.kind == "row" else ())
        extra = cost + 1
        if key not in groups:
            head = _group_header(u, pages.get(page_id))
            extra += counter.count(head) + 1
        if spent + extra > limit:
            continue
        if key not in groups:
            groups[key] = []
            header_text[key] = head
        groups[key].append(s)
        spent += extra
    items: list[PacketItem] = []
    for key, members in groups.items():
        members.sort(key=lambda s: (s.unit.row_index if s.unit.row_index is not None else -1,
                                    s.unit.unit_id))
        page = pages.get(key[0])
        for n, s in enumerate(members):
            text = _line(s.unit)
            if n == 0:
                text = f"{header_text[key]}\n{text}"
            if not items:
                text = f"## Evidence units\n{text}"
            citation = cite(page, supports.get(s.unit.support_id), s.unit) if page else Citation(
                doc_id=s.unit.doc_id, source="", page=s.unit.page, section_path=s.unit.context,
                support_id=s.unit.support_id, table_index=s.unit.table_index)
            items.append(PacketItem(text=text, citation=citation, tokens=counter.count(text),
                                    page_id=key[0]))
    return items


def _group_header(u: Unit, page: RankedPage | None) -> str:
    where = f" [{page.title or page.source}, page {page.number}]" if page else ""
    head = f"### {' > '.join(u.context) or 'page'}{where}"
    if u.kind == "row" and u.headers:
        head += "\n" + " | ".join(u.headers)
    return head


def _line(u: Unit) -> str:
    if u.kind == "row" and u.cells:
        return " | ".join(c.replace("\n", " / ") for c in u.cells)
    return u.text


def assemble(question: str, ranked: list[RankedPage], evidence: dict[str, PageEvidence],
             selected: list[ScoredUnit], counter: TokenCounter, budget: int, *,
             base_share: float = 0.7, max_expanded: int = 2, item_tokens: int = 1024,
             use_units: bool = True) -> Packet:
    """Build the packet for ``ranked`` pages (best first) within ``budget`` tokens.

    ``evidence`` maps page ids to their supports, ``selected`` are the
    reranked units of the anchor pages (best first). ``use_units=False``
    gives page items only (no unit block).
    """
    expanded = [p for p in ranked if p.trace.get("expanded")][:max_expanded]
    base = [p for p in ranked if not p.trace.get("expanded")]
    base_budget = int(budget * base_share) if expanded else budget
    n_items = max(1, round(base_budget / item_tokens))
    per_item = base_budget // n_items
    base_pages = base[:n_items]
    block_slot = n_items - 1 if use_units and selected else None

    support_by_id = {s.support_id: s for ev in evidence.values() for s in ev.supports}
    items: list[PacketItem] = []
    for i in range(n_items):
        if i == block_slot:
            continue
        if i < len(base_pages):
            items += page_excerpt(question, evidence[base_pages[i].page_id], counter, per_item)
    if block_slot is not None:
        pages = {p.page_id: p for p in ranked}
        used = sum(it.tokens + 1 for it in items)
        limit = max(per_item, base_budget - used)  # equal cost, plus what items left unused
        items += unit_block(selected, pages, support_by_id, counter, limit)
    if expanded:
        share = (budget - base_budget) // len(expanded)
        for p in expanded:
            items += page_excerpt(question, evidence[p.page_id], counter, share)
    return fit(items, counter, budget)


def fit(items: list[PacketItem], counter: TokenCounter, budget: int) -> Packet:
    """Join ``items`` into a packet, dropping the last ones while the joined
    text (counted as a whole: tokenizers are not additive) exceeds ``budget``."""
    text = "\n".join(item.text for item in items)
    total = counter.count(text)
    while total > budget and items:
        items.pop()
        text = "\n".join(item.text for item in items)
        total = counter.count(text)
    return Packet(text=text, items=items, budget=budget, tokens=total, tokenizer=counter.name,
                  estimate=counter.estimate)
