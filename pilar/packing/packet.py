"""Packet assembly: ranked page excerpts within a token budget.

A first page-grounded packet (PILAR §3.5, App. G.1): pages in rank order,
each contributing its evidence lines that best match the question (units'
completed text when the page has units, else its supports), each line citing
document, page, section path and bbox or table cell. The whole packet text,
headers and newlines included, never exceeds the budget.
"""

from __future__ import annotations

import re

from pilar.model import Citation, Packet, PacketItem, RankedPage, Support, Unit
from pilar.packing.tokens import TokenCounter

_WORD = re.compile(r"\w+", re.UNICODE)
_STOP = frozenset("a an and are as at be by did do does for from had has have how in is it its "
                  "of on or that the their there this to was were what when where which who "
                  "why with".split())


def terms(text: str) -> set[str]:
    """Lower-cased content words of ``text`` with a crude suffix strip."""
    return {_stem(w) for w in _WORD.findall(text.lower()) if w not in _STOP}


def _stem(w: str) -> str:
    for suf in ("ing", "es", "s", "ed"):
        if len(w) > len(suf) + 2 and w.endswith(suf):
            return w[: -len(suf)]
    return w


def _citation(page: RankedPage, support: Support | None, unit: Unit | None) -> Citation:
    prov = support.provenance if support else None
    cell = (prov.row, prov.col) if prov and prov.row is not None else None
    return Citation(
        doc_id=page.doc_id, source=page.source, page=page.number,
        section_path=prov.section_path if prov else (unit.context if unit else ()),
        support_id=support.support_id if support else (unit.support_id if unit else None),
        bbox=prov.bbox if prov else None, css_path=prov.css_path if prov else None,
        cell=cell, table_index=prov.table_index if prov else (unit.table_index if unit else None),
    )


def build_packet(question: str, pages: list[RankedPage], units: dict[str, list[Unit]],
                 supports: dict[str, list[Support]], counter: TokenCounter,
                 budget: int) -> Packet:
    """Pack excerpts of ``pages`` (best first) into at most ``budget`` tokens.

    ``units`` and ``supports`` map page ids to that page's records. Each page
    gets an equal share of the budget first; what a page leaves unused flows
    to the next. Lines within a page are ranked by the number of question
    terms they contain and printed in document order.
    """
    q = terms(question)
    support_by_id = {s.support_id: s for ss in supports.values() for s in ss}
    items: list[PacketItem] = []
    used = 0
    remaining_pages = len(pages)
    for page in pages:
        share = (budget - used) // max(remaining_pages, 1)
        remaining_pages -= 1
        header = f"## {page.title or page.source} (page {page.number})"
        header_cost = counter.count(header) + 1
        if share <= header_cost + 8:
            continue
        candidates = _candidates(page, units.get(page.page_id, []),
                                 supports.get(page.page_id, []), support_by_id)
        if not candidates:
            continue
        scored = sorted(
            ((len(q & terms(text)), i) for i, (text, _, _) in enumerate(candidates)),
            key=lambda t: (-t[0], t[1]),
        )
        costs = counter.count_many([c[0] for c in candidates])
        chosen, spent = [], header_cost
        for hits, i in scored:
            if hits == 0 and chosen:
                break
            cost = costs[i] + 1
            if spent + cost > share:
                if not chosen and share - spent > 16:  # truncate a first long line
                    text = counter.truncate(candidates[i][0], share - spent - 1)
                    candidates[i] = (text, *candidates[i][1:])
                    costs[i] = counter.count(text)
                    chosen.append(i)
                    spent += costs[i] + 1
                continue
            chosen.append(i)
            spent += cost
        if not chosen:
            continue
        first = True
        for i in sorted(chosen):
            text, support, unit = candidates[i]
            line = f"{header}\n{text}" if first else text
            items.append(PacketItem(text=line, citation=_citation(page, support, unit),
                                    tokens=costs[i] + (header_cost if first else 0),
                                    page_id=page.page_id))
            first = False
        used += spent
    text = "\n".join(item.text for item in items)
    total = counter.count(text)
    while total > budget and items:  # tokenizers are not additive at joins: trim to fit
        items.pop()
        text = "\n".join(item.text for item in items)
        total = counter.count(text)
    return Packet(text=text, items=items, budget=budget, tokens=total, tokenizer=counter.name,
                  estimate=counter.estimate)


def _candidates(page: RankedPage, units: list[Unit], supports: list[Support],
                support_by_id: dict[str, Support]) -> list[tuple[str, Support | None, Unit | None]]:
    if units:
        return [(u.completed_text, support_by_id.get(u.support_id), u) for u in units
                if u.completed_text.strip()]
    return [(s.text, s, None) for s in supports if s.text.strip() and s.kind != "table"]
