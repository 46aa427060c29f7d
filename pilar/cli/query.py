"""Query commands: ``pilar search`` (ranked pages and the packet) and
``pilar ask`` (the reader's cited answer)."""

from __future__ import annotations

import json
from typing import Annotated

import typer
from rich.markup import escape
from rich.table import Table

from pilar.cli.base import (BudgetOpt, CollectionsOpt, DocsOpt, HomeOpt, KOpt, ProfileOpt,
                            _collections, _open, _pilar, clip, command, err, fail, out)


@command()
def search(question: Annotated[str, typer.Argument(metavar="QUESTION",
                                                   help="what to find evidence for")],
           budget: BudgetOpt = None,
           k: KOpt = None,
           as_json: Annotated[bool, typer.Option("--json", help="print JSON")] = False,
           explain: Annotated[bool, typer.Option(
               "--explain", help="show each page's score parts and graph path")] = False,
           profile: ProfileOpt = None,
           collection: CollectionsOpt = None,
           doc: DocsOpt = None,
           home: HomeOpt = None) -> None:
    """Rank pages for QUESTION and print the evidence packet; exit code 1
    when there is no store, it holds no documents, or none in the
    collections or with the ids given."""
    from pilar.errors import EmptyStoreError

    _checked(question, budget, k, profile, collection, doc)
    try:
        p = _open(home, create=False)
        result = p.search(question, budget=budget, k=k, profile=profile,
                          collections=collection or None, doc_ids=doc or None)
    except EmptyStoreError as exc:  # the store, or the scope asked for, holds nothing
        if as_json:
            out.print_json(json.dumps({"question": question, "pages": [], "packet": None,
                                       "error": str(exc)}, ensure_ascii=False))
        raise
    if as_json:
        from pilar.api.models import search_response  # the REST API's response model

        out.print_json(search_response(result).model_dump_json())
        return
    table = Table(title=f"pages for: {escape(clip(question))}", show_lines=False)
    for col in ("#", "score", "bm25", "dense", "page", "document"):
        table.add_column(col)
    for i, pg in enumerate(result.pages, 1):
        table.add_row(str(i), f"{pg.score:.3f}", f"{pg.bm25:.3f}", f"{pg.dense:.3f}",
                      str(pg.number), escape(pg.title or pg.source))
    out.print(table)
    if explain:
        _explain(result.pages, p.settings)
    pk = result.packet
    out.rule(f"packet: {pk.tokens}/{pk.budget} tokens"
             f"{' (estimate, ' + pk.tokenizer + ')' if pk.estimate else ''}")
    out.print(escape(pk.text), highlight=False)


def _checked(question: str, budget, k, profile, collections, doc_ids) -> None:
    """End the command (exit 2, one ``error:`` line) unless the request is
    valid (:meth:`pilar.query.Query.of`: the limits and messages of every
    face), before a store is opened or a model loaded."""
    from pilar.config import Settings
    from pilar.query import Query

    _collections(collections)
    settings = Settings()  # a bad setting: exit 2 naming it (reported)
    try:
        Query.of(settings, question, budget, k, profile, collections or None, doc_ids or None)
    except (ValueError, TypeError) as exc:
        fail(str(exc), 2)


def _where(c) -> str:
    """Where a citation points, on one short line: ``page 3, Results >
    Table 2, table 0 row 4 col 1, bbox (72, 90, 540, 130)`` (a
    :class:`~pilar.api.models.CitationOut`, as an answer's citations are)."""
    parts = [f"page {c.page}"]
    if c.section_path:
        parts.append(" > ".join(c.section_path))
    if c.table_index is not None:
        cell = f"table {c.table_index}"
        cell += f" row {c.row}" if c.row is not None else ""
        cell += f" col {c.col}" if c.col is not None else ""
        parts.append(cell)
    if c.bbox:
        parts.append("bbox (" + ", ".join(f"{v:.0f}" for v in c.bbox) + ")")
    return ", ".join(parts)


FLAG_NOTES = {
    "no_citation": "the answer cites no item of the packet",
    "unknown_citation": "the answer cites numbers the packet lacks: {unknown}",
    "not_in_evidence": "the reader found no answer in the packet",
    "truncated": "the answer was cut at the new-token limit (PILAR_READER_MAX_TOKENS)",
}


@command()
def ask(question: Annotated[str, typer.Argument(metavar="QUESTION",
                                                help="the question to answer")],
        budget: BudgetOpt = None,
        k: KOpt = None,
        as_json: Annotated[bool, typer.Option("--json", help="print JSON")] = False,
        stream: Annotated[bool, typer.Option(
            "--stream", help="print the answer as it is generated")] = False,
        profile: ProfileOpt = None,
        collection: CollectionsOpt = None,
        doc: DocsOpt = None,
        home: HomeOpt = None) -> None:
    """Answer QUESTION from the evidence packet, citing its items as [n]
    (needs PILAR_LLM_BASE_URL: an OpenAI-compatible model server); exit
    code 1 when the reader fails or there is nothing to read, as for search."""
    from pilar.errors import LLMError

    _checked(question, budget, k, profile, collection, doc)
    p = _pilar(home, create=False)
    try:
        result = p.ask(question, budget=budget, k=k, profile=profile,
                       collections=collection or None, doc_ids=doc or None, stream=stream)
        if stream:
            for delta in result:
                if not as_json:
                    out.print(delta, end="", highlight=False, markup=False)
            if not as_json:
                out.print()
            answer = result.answer
        else:
            answer = result
    except LLMError as exc:
        err.print(f"[red]reader failed:[/] {escape(str(exc))}")
        raise typer.Exit(1) from None
    if as_json:
        from pilar.api.models import answer_response  # the REST API's response model

        out.print_json(answer_response(answer).model_dump_json())
        return
    if not stream:
        out.print(escape(answer.text.strip()), highlight=False)
    for c in answer.citations:
        out.print(f"[bold][{c.n}][/] {escape(c.citation.source)}, {escape(_where(c.citation))}",
                  highlight=False)
    for flag in answer.flags:
        err.print("[yellow]note:[/] " + escape(FLAG_NOTES[flag].format(
            unknown=", ".join(map(str, answer.unknown)))))
    pk = answer.packet
    err.print(f"packet: {len(pk.items)} items, {pk.tokens}/{pk.budget} tokens"
              f"{' (estimate, ' + pk.tokenizer + ')' if pk.estimate else ''}"
              f"{', ' + str(len(answer.images)) + ' crops' if answer.images else ''}; "
              f"model {escape(answer.model)}")


_PARTS = ("adjacent", "same_section", "alias", "graph", "chain")
"""Bonuses of a page's trace, in the order shown (``chain``: the multi-hop
profile's score flowing along bridges, shown with how likely its chains
leave their start, :func:`~pilar.retrieval.chains.leaving`;
``sibling_of_chain`` and ``second_of_series`` are subtracted)."""


def _explain(pages, settings) -> None:
    """Print each page's trace: base score, bonuses, seed/expanded, graph paths."""
    wb, wd = settings.bm25_weight, settings.dense_weight
    for i, pg in enumerate(pages, 1):
        t = pg.trace
        parts = [f"{k} +{t[k]:.3f}" + (f" (chains leave their start {t['leaving']:.2f})"
                                        if k == "chain" and "leaving" in t else "")
                 for k in _PARTS if k in t]
        if "sibling_of_chain" in t:
            parts.append(f"sibling of a chained page -{t['sibling_of_chain']:.3f}")
        if "second_of_series" in t:
            parts.append(f"second of its series -{t['second_of_series']:.3f}")
        bonus = ", ".join(parts) or "no bonus"
        flags = " ".join(f for f in ("seed", "expanded") if t.get(f))
        out.print(f"[bold]{i}. {escape(pg.title or pg.source)}[/] p.{pg.number}  "
                  f"score {pg.score:.3f} = base {t.get('base', pg.score):.3f} "
                  f"({wb:g} x bm25 {pg.bm25:.3f} + {wd:g} x dense {pg.dense:.3f}); {bonus}"
                  f"{'  [' + flags + ']' if flags else ''}")
        for kind, path in t.get("paths", {}).items():
            out.print(f"     {kind}: " + escape(" -> ".join(path)))
        if t.get("bridge_path"):
            out.print(f"     bridge (hop {t.get('hop')}): " + escape(" -> ".join(t["bridge_path"])))
        if t.get("gated"):
            out.print(f"     gated (dense < gate): {', '.join(t['gated'])}")
    if pages and pages[0].trace.get("query_entities"):
        out.print("query entities: " + escape(", ".join(pages[0].trace["query_entities"])))
    if pages and pages[0].trace.get("hub_entities"):
        out.print("hub entities (not expanded from): "
                  + escape(", ".join(pages[0].trace["hub_entities"])))


