"""Query commands: ``pilar search`` (ranked pages and the packet) and
``pilar ask`` (the reader's cited answer)."""

from __future__ import annotations

import json
from typing import Annotated, Optional

import typer
from rich.markup import escape
from rich.table import Table

from pilar.cli.base import (BudgetOpt, CollectionsOpt, HomeOpt, KOpt, ProfileOpt, _collections,
                            _open, _pilar, clip, command, err, fail, out)
from pilar.config import PROFILES


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
           doc: Annotated[Optional[list[str]], typer.Option(
               "--doc", metavar="DOC_ID", help="only this document id (repeat for several)")] = None,
           home: HomeOpt = None) -> None:
    """Rank pages for QUESTION and print the evidence packet; exit code 1
    when there is no store, it holds no documents, or none in the
    collections or with the ids given."""
    from pilar.errors import EmptyStoreError

    if profile is not None and profile not in PROFILES:
        raise typer.BadParameter(f"must be one of {', '.join(PROFILES)}", param_hint="--profile")
    _collections(collection)
    try:
        p = _open(home, create=False)
        missing = _empty_scope(p, collection, doc)
        if missing:
            raise EmptyStoreError(missing)
        try:
            result = p.search(question, budget=budget, k=k, profile=profile,
                              collections=collection or None, doc_ids=doc or None)
        except (ValueError, TypeError) as exc:
            fail(str(exc), 2)
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


def _empty_scope(p, collections: list[str] | None, doc_ids: list[str] | None) -> str | None:
    """Why a search limited to ``collections`` / ``doc_ids`` cannot find
    anything (no stored document is in them), or None; read before any
    model loads, so a mistyped name is told at once instead of an empty table."""
    if not collections and not doc_ids:
        return None
    stored = p.docs(collections=collections or None)
    if collections:
        found = {d.collection for d in stored}
        if absent := [c for c in collections if c not in found]:
            return (f"no documents in collection{'s' * (len(absent) > 1)} "
                    f"{', '.join(map(repr, absent))}: `pilar docs` lists them")
    if doc_ids:
        found = {d.doc_id for d in stored}
        if absent := [d for d in doc_ids if d not in found]:
            where = " in the collections given" if collections else ""
            return (f"no document with id{'s' * (len(absent) > 1)} "
                    f"{', '.join(map(repr, absent))}{where}: `pilar docs` lists them")
    return None


FLAG_NOTES = {
    "no_citation": "the answer cites no item of the packet",
    "unknown_citation": "the answer cites numbers the packet lacks: {unknown}",
    "not_in_evidence": "the reader found no answer in the packet",
    "truncated": "the answer was cut at the new-token limit (PILAR_READER_MAX_TOKENS)",
}


def _where(c) -> str:
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


@command()
def ask(question: Annotated[str, typer.Argument(metavar="QUESTION",
                                                help="the question to answer")],
        budget: BudgetOpt = None,
        k: KOpt = None,
        as_json: Annotated[bool, typer.Option("--json", help="print JSON")] = False,
        stream: Annotated[bool, typer.Option(
            "--stream", help="print the answer as it is generated")] = False,
        profile: ProfileOpt = None,
        home: HomeOpt = None) -> None:
    """Answer QUESTION from the evidence packet, citing its items as [n]
    (needs PILAR_LLM_BASE_URL: an OpenAI-compatible model server)."""
    from pilar.config import PROFILES
    from pilar.errors import ConfigError, LLMError

    if profile is not None and profile not in PROFILES:
        raise typer.BadParameter(f"must be one of {', '.join(PROFILES)}", param_hint="--profile")
    p = _pilar(home, create=False)
    try:
        result = p.ask(question, budget=budget, k=k, profile=profile, stream=stream)
        if stream:
            for delta in result:
                if not as_json:
                    out.print(delta, end="", highlight=False, markup=False)
            if not as_json:
                out.print()
            answer = result.answer
        else:
            answer = result
    except (ValueError, ConfigError) as exc:
        err.print(f"[red]error:[/] {escape(str(exc))}")
        raise typer.Exit(2) from None
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
profile's score flowing along bridges; ``sibling_of_chain`` is subtracted)."""


def _explain(pages, settings) -> None:
    """Print each page's trace: base score, bonuses, seed/expanded, graph paths."""
    wb, wd = settings.bm25_weight, settings.dense_weight
    for i, pg in enumerate(pages, 1):
        t = pg.trace
        parts = [f"{k} +{t[k]:.3f}" for k in _PARTS if k in t]
        if "sibling_of_chain" in t:
            parts.append(f"sibling of a chained page -{t['sibling_of_chain']:.3f}")
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


