"""The ``pilar`` command line (Typer): ingest, search, docs, delete, stats.

Every command has the same reach as the Python API (:class:`pilar.Pilar`).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Annotated, Optional

import typer
from rich.console import Console
from rich.markup import escape
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn
from rich.table import Table

from pilar.model import to_jsonable

app = typer.Typer(help="pilar: page-grounded evidence for document question answering.",
                  no_args_is_help=True, add_completion=False)
out = Console(soft_wrap=True)
err = Console(stderr=True, soft_wrap=True)  # one line per message, also in logs

HomeOpt = Annotated[Optional[Path], typer.Option("--home", help="store folder (PILAR_HOME)")]
CollectionsOpt = Annotated[Optional[list[str]], typer.Option(
    "--collection", help="only documents of this collection (repeat for several)")]


def _pilar(home: Path | None):
    from pilar import Pilar
    from pilar.errors import PilarError

    from pydantic import ValidationError

    try:
        return Pilar(home=home)
    except PilarError as exc:
        err.print(f"[red]error:[/] {escape(str(exc))}")
        raise typer.Exit(2) from None
    except ValidationError as exc:  # a bad PILAR_* setting in the environment or .env
        for e in exc.errors():
            name = "PILAR_" + "_".join(str(x) for x in e["loc"]).upper()
            err.print(f"[red]error:[/] {name}={escape(repr(e.get('input')))}: {escape(e['msg'])}")
        raise typer.Exit(2) from None


@app.command()
def ingest(paths: Annotated[list[str], typer.Argument(help="files, folders or globs")],
           collection: Annotated[str, typer.Option(
               help="collection the documents belong to")] = "default",
           home: HomeOpt = None) -> None:
    """Ingest PDF and HTML files into the store; exit code 1 if any file failed."""
    from pilar.pipeline import expand_paths

    p = _pilar(home)
    p.recover()
    files = expand_paths(paths)
    if not files:
        err.print("[red]nothing to ingest:[/] no files matched " + escape(" ".join(paths)))
        raise typer.Exit(1)
    counts = {"ingested": 0, "replaced": 0, "unchanged": 0, "failed": 0}
    pages = units = assertions = entities = 0
    with Progress(TextColumn("[bold]ingest"), BarColumn(), MofNCompleteColumn(),
                  TimeElapsedColumn(), TextColumn("{task.description}"), console=err,
                  transient=False) as bar:
        task = bar.add_task("", total=len(files))
        for path in files:
            bar.update(task, description=escape(path.name))
            r = p.ingest_file(path, collection)
            counts[r.status] += 1
            pages += r.n_pages if r.status in ("ingested", "replaced") else 0
            units += r.n_units
            assertions += r.n_assertions
            entities += r.n_entities
            if r.status == "failed":
                bar.console.print(f"[red]failed[/] {escape(str(path))}: {escape(r.reason or '')}")
            for note in r.warnings:
                bar.console.print(f"[yellow]warning[/] {escape(str(path))}: {escape(note)}")
            bar.advance(task)
    err.print(f"{counts['ingested']} ingested, {counts['replaced']} replaced, "
              f"{counts['unchanged']} unchanged, {counts['failed']} failed "
              f"({pages} pages, {units} units, {assertions} assertions, "
              f"{entities} entity records)")
    if counts["failed"]:
        raise typer.Exit(1)


@app.command()
def search(question: str,
           budget: Annotated[Optional[int], typer.Option(help="packet token budget")] = None,
           k: Annotated[Optional[int], typer.Option("--k", help="pages to rank")] = None,
           as_json: Annotated[bool, typer.Option("--json", help="print JSON")] = False,
           explain: Annotated[bool, typer.Option(
               "--explain", help="show each page's score parts and graph path")] = False,
           profile: Annotated[Optional[str], typer.Option(
               help="single-shot (default) or multi-hop")] = None,
           collection: CollectionsOpt = None,
           doc: Annotated[Optional[list[str]], typer.Option(
               "--doc", help="only this document id (repeat for several)")] = None,
           home: HomeOpt = None) -> None:
    """Rank pages for QUESTION and print the evidence packet."""
    from pilar.config import PROFILES

    if profile is not None and profile not in PROFILES:
        raise typer.BadParameter(f"must be one of {', '.join(PROFILES)}", param_hint="--profile")
    from pilar.errors import PilarError

    p = _pilar(home)
    try:
        result = p.search(question, budget=budget, k=k, profile=profile,
                          collections=collection or None, doc_ids=doc or None)
    except (ValueError, PilarError) as exc:
        err.print(f"[red]error:[/] {escape(str(exc))}")
        raise typer.Exit(2) from None
    if as_json:
        data = to_jsonable(result)
        data["packet"]["citations"] = [to_jsonable(c) for c in result.packet.citations]
        out.print_json(json.dumps(data, ensure_ascii=False))
        return
    table = Table(title=f"pages for: {escape(question)}", show_lines=False)
    for col in ("#", "score", "bm25", "dense", "page", "document"):
        table.add_column(col)
    for i, pg in enumerate(result.pages, 1):
        table.add_row(str(i), f"{pg.score:.3f}", f"{pg.bm25:.3f}", f"{pg.dense:.3f}",
                      str(pg.number), escape(pg.title or pg.source))
    out.print(table)
    if not result.pages and not p.docs():
        err.print("the store is empty: add documents with [bold]pilar ingest PATH[/]")
    if explain:
        _explain(result.pages, p.settings)
    pk = result.packet
    out.rule(f"packet: {pk.tokens}/{pk.budget} tokens"
             f"{' (estimate, ' + pk.tokenizer + ')' if pk.estimate else ''}")
    out.print(escape(pk.text), highlight=False)


_PARTS = ("adjacent", "same_section", "alias", "graph")


def _explain(pages, settings) -> None:
    """Print each page's trace: base score, bonuses, seed/expanded, graph paths."""
    wb, wd = settings.bm25_weight, settings.dense_weight
    for i, pg in enumerate(pages, 1):
        t = pg.trace
        bonus = ", ".join(f"{k} +{t[k]:.3f}" for k in _PARTS if k in t) or "no bonus"
        flags = " ".join(f for f in ("seed", "expanded") if t.get(f))
        out.print(f"[bold]{i}. {escape(pg.title or pg.source)}[/] p.{pg.number}  "
                  f"score {pg.score:.3f} = base {t.get('base', pg.score):.3f} "
                  f"({wb:g} x bm25 {pg.bm25:.3f} + {wd:g} x dense {pg.dense:.3f}); {bonus}"
                  f"{'  [' + flags + ']' if flags else ''}")
        for kind, path in t.get("paths", {}).items():
            out.print(f"     {kind}: " + escape(" -> ".join(path)))
        if t.get("gated"):
            out.print(f"     gated (dense < gate): {', '.join(t['gated'])}")
    if pages and pages[0].trace.get("query_entities"):
        out.print("query entities: " + escape(", ".join(pages[0].trace["query_entities"])))


@app.command()
def docs(as_json: Annotated[bool, typer.Option("--json", help="print JSON")] = False,
         collection: CollectionsOpt = None, home: HomeOpt = None) -> None:
    """List stored documents."""
    documents = _pilar(home).docs(collections=collection or None)
    if as_json:
        out.print_json(json.dumps(to_jsonable(documents), ensure_ascii=False))
        return
    table = Table(title=f"{len(documents)} documents")
    for col in ("doc_id", "collection", "type", "pages", "title", "source"):
        table.add_column(col)
    for d in documents:
        table.add_row(d.doc_id, escape(d.collection), d.media_type.split("/")[-1], str(d.n_pages),
                      escape(d.title), escape(d.uri))
    out.print(table)


@app.command()
def delete(doc_id: str, home: HomeOpt = None) -> None:
    """Delete a document (by DOC_ID, see `pilar docs`)."""
    if not _pilar(home).delete(doc_id):
        err.print(f"[red]no document {escape(doc_id)}[/]")
        raise typer.Exit(1)
    err.print(f"deleted {escape(doc_id)}")


@app.command()
def stats(home: HomeOpt = None) -> None:
    """Counts of documents, pages, supports and the other layers."""
    out.print_json(json.dumps(_pilar(home).stats()))


@app.command()
def migrate(home: HomeOpt = None) -> None:
    """Apply pending schema migrations (idempotent)."""
    out.print_json(json.dumps(_pilar(home).migrate()))


def _param(text: str) -> tuple[str, object]:
    key, sep, value = text.partition("=")
    if not sep or not key:
        raise typer.BadParameter(f"expected KEY=VALUE, got {text!r}")
    try:
        return key, json.loads(value)
    except json.JSONDecodeError:
        return key, value


@app.command()
def cypher(query: str,
           param: Annotated[Optional[list[str]], typer.Option(
               "--param", "-p", help="KEY=VALUE (VALUE read as JSON when it parses)")] = None,
           timeout: Annotated[float, typer.Option(help="seconds before the server aborts")] = 30.0,
           limit: Annotated[int, typer.Option(help="row cap")] = 1000,
           home: HomeOpt = None) -> None:
    """Run a READ-ONLY Cypher query on the Neo4j graph and print JSON rows."""
    from pilar.errors import PilarError
    from pilar.graph.explore import CypherError

    params = dict(_param(p) for p in param or [])
    try:
        result = _pilar(home).cypher(query, params, timeout=timeout, row_cap=limit)
    except CypherError as exc:
        kind = "refused (client error)" if exc.is_client_error else "failed"
        err.print(f"[red]query {kind}:[/] {escape(str(exc))}")
        raise typer.Exit(1) from None
    except PilarError as exc:
        err.print(f"[red]error:[/] {escape(str(exc))}")
        raise typer.Exit(2) from None
    out.print_json(json.dumps({"columns": result.columns, "rows": result.rows}, ensure_ascii=False))
    if result.truncated:
        err.print(f"[yellow]cut at the row cap of {result.row_cap} rows; "
                  f"use --limit or LIMIT to see more[/]")


def main() -> None:
    app()
