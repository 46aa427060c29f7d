"""Store commands: ``pilar ingest``, ``docs``, ``delete``, ``stats``,
``migrate`` and ``cypher``."""

from __future__ import annotations

import json
import time
from collections import Counter
from pathlib import Path
from typing import Annotated, Optional

import typer
from rich.markup import escape
from rich.progress import (BarColumn, MofNCompleteColumn, Progress, TextColumn,
                           TimeElapsedColumn, TimeRemainingColumn)
from rich.table import Table

from pilar.cli.base import CollectionsOpt, HomeOpt, _collections, _open, clip, command, err, fail, out
from pilar.graph.neo4j_guard import RULES


@command()
def ingest(paths: Annotated[list[str], typer.Argument(
               metavar="PATH", help="files, folders or globs")],
           verbose: Annotated[bool, typer.Option(
               "--verbose", "-v", help="list each file skipped in a folder and why")] = False,
           collection: Annotated[str, typer.Option(
               metavar="NAME", help="collection the documents belong to")] = "default",
           workers: Annotated[Optional[int], typer.Option(
               "--workers", min=0, metavar="N", help="parse processes (default: the CPU cores; 0 = none)")] = None,
           ray: Annotated[Optional[str], typer.Option(
               "--ray", metavar="ADDRESS", help="run parse and embed on a Ray cluster: ADDRESS or auto "
               "(extra pilar[ray])")] = None,
           home: HomeOpt = None) -> None:
    """Ingest PDF and HTML files into the store; exit code 1 if any file failed.

    Folders are walked; files in them that are not documents (notes, data,
    hidden files) are skipped and counted."""
    from pilar.ingest.files import select_files

    _collections([collection])
    p = _open(home)
    p.recover()
    files, skipped = select_files(paths)
    if verbose:
        for path, why in skipped:
            err.print(f"[dim]skipped[/] {escape(str(path))}: {escape(why)}")
    if not files:
        fail("nothing to ingest: no documents matched " + clip(" ".join(paths))
             + (f" ({_skipped_note(skipped)})" if skipped else ""))
    counts = Counter({"ingested": 0, "replaced": 0, "unchanged": 0, "new_source": 0,
                      "failed": 0})
    totals = {"pages": 0, "units": 0, "assertions": 0, "entities": 0}
    with Progress(TextColumn("[bold]ingest"), BarColumn(), MofNCompleteColumn(),
                  TextColumn("{task.fields[rate]}"), TimeElapsedColumn(), TextColumn("eta"),
                  TimeRemainingColumn(), TextColumn("{task.description}"), console=err,
                  disable=not err.is_terminal) as bar:  # logs get the lines, no bar
        task = bar.add_task("", total=len(files), rate="")
        t0 = time.perf_counter()
        finished = 0

        def on_page(path: str, done_pages: int, total: int) -> None:
            # a PDF's pages as they are parsed (here or in a worker)
            bar.update(task, completed=max(bar.tasks[0].completed, finished + done_pages / total),
                       description=f"{escape(Path(path).name)} page {done_pages}/{total}")

        def done(r) -> None:
            nonlocal finished
            counts[r.status] += 1
            totals["pages"] += r.n_pages if r.status in ("ingested", "replaced") else 0
            totals["units"] += r.n_units
            totals["assertions"] += r.n_assertions
            totals["entities"] += r.n_entities
            if r.status == "failed":
                bar.console.print(f"[red]failed[/] {escape(r.path)}: {escape(r.reason or '')}")
            elif r.status == "new_source":
                bar.console.print(f"[cyan]new source[/] {escape(r.path)}: same bytes as "
                                  f"{escape(r.reason or '')} (document {r.doc_id}); "
                                  "both paths recorded")
            for note in r.warnings:
                bar.console.print(f"[yellow]warning[/] {escape(r.path)}: {escape(note)}")
            finished += 1
            rate = totals["pages"] / max(time.perf_counter() - t0, 1e-9)
            bar.update(task, completed=finished, description=escape(Path(r.path).name),
                       rate=f"{rate:.2f} pages/s")

        p.ingest(files, progress=done, collection=collection, workers=workers, ray=ray,
                 on_page=on_page)
    if skipped and not verbose:
        err.print(f"skipped {_skipped_note(skipped)}; --verbose lists them")
    err.print(f"{counts['ingested']} ingested, {counts['replaced']} replaced, "
              f"{counts['unchanged']} unchanged, {counts['new_source']} new source, "
              f"{counts['failed']} failed, {len(skipped)} skipped "
              f"({totals['pages']} pages, {totals['units']} units, {totals['assertions']} "
              f"assertions, {totals['entities']} entity records) in {p.settings.home}")
    if counts["failed"]:
        raise typer.Exit(1)


def _skipped_note(skipped: list[tuple[Path, str]]) -> str:
    """``"3 files in folders: 2 not a document (.md), 1 hidden"``."""
    by_reason = Counter(why for _, why in skipped)
    parts = ", ".join(f"{n} {why}" for why, n in by_reason.most_common())
    return f"{len(skipped)} file{'s' * (len(skipped) != 1)} in folders: {parts}"


@command()
def docs(as_json: Annotated[bool, typer.Option("--json", help="print JSON")] = False,
         collection: CollectionsOpt = None, home: HomeOpt = None) -> None:
    """List stored documents (with every path each was found at)."""
    _collections(collection)
    documents = _open(home, create=False).docs(collections=collection or None)
    if as_json:
        from pilar.api.models import DocumentOut

        out.print_json(json.dumps([DocumentOut.model_validate(d).model_dump() for d in documents],
                                  ensure_ascii=False))
        return
    n = len(documents)
    table = Table(title=f"{n} document{'s' * (n != 1)}")
    # ids and paths are what `pilar delete` and `--doc` take: whole, on any width
    table.add_column("doc_id", no_wrap=True, min_width=max((len(d.doc_id) for d in documents),
                                                            default=6))
    for col in ("collection", "type", "pages", "title"):
        table.add_column(col)
    table.add_column("source", overflow="fold")
    for d in documents:
        more = f" (+{len(d.sources) - 1} more)" if len(d.sources) > 1 else ""
        table.add_row(d.doc_id, escape(d.collection), d.media_type.split("/")[-1], str(d.n_pages),
                      escape(d.title), escape(d.uri) + more)
    out.print(table)


@command()
def delete(doc_id: Annotated[str, typer.Argument(metavar="DOC_ID",
                                                 help="a doc_id from `pilar docs`")],
           home: HomeOpt = None) -> None:
    """Delete a document (by DOC_ID, see `pilar docs`)."""
    if not doc_id.strip():
        fail("the document id is empty (see `pilar docs`)", 2)
    if not _open(home, create=False).delete(doc_id):
        fail(f"no document {doc_id}")
    err.print(f"deleted {escape(doc_id)}")


@command()
def stats(home: HomeOpt = None) -> None:
    """Counts of documents, pages, supports and the other layers."""
    out.print_json(json.dumps(_open(home, create=False).stats()))


@command()
def migrate(home: HomeOpt = None) -> None:
    """Apply pending schema migrations (idempotent; creates the store if missing)."""
    out.print_json(json.dumps(_open(home).migrate()))


def _param(text: str) -> tuple[str, object]:
    key, sep, value = text.partition("=")
    if not sep or not key:
        raise typer.BadParameter(f"expected KEY=VALUE, got {text!r}")
    try:
        return key, json.loads(value)
    except json.JSONDecodeError:
        return key, value


@command(help="Run a READ-ONLY Cypher query on the Neo4j graph and print JSON rows: "
              f"{RULES}, else it is refused (exit 2). Rows are cut at --limit and at "
              "PILAR_CYPHER_MAX_BYTES; a query past --timeout is ended by the server (exit 1).")
def cypher(query: Annotated[str, typer.Argument(metavar="QUERY", help="a read-only Cypher query")],
           param: Annotated[Optional[list[str]], typer.Option(
               "--param", "-p", metavar="KEY=VALUE", help="KEY=VALUE (VALUE read as JSON when it parses)")] = None,
           timeout: Annotated[float, typer.Option(
               metavar="SECONDS", help="seconds before the server aborts")] = 30.0,
           limit: Annotated[int, typer.Option(min=1, max=10_000, metavar="ROWS",
                                              help="row cap")] = 1000,
           home: HomeOpt = None) -> None:
    """Run a read-only Cypher query (help text above: it names the refused kinds)."""
    from pilar.errors import CypherError

    params = dict(_param(p) for p in param or [])
    try:
        result = _open(home, create=False).cypher(query, params, timeout=timeout, row_cap=limit)
    except CypherError as exc:
        fail(str(exc), 2 if exc.is_client_error and not exc.timed_out else 1)
    out.print_json(json.dumps({"columns": result.columns, "rows": result.rows}, ensure_ascii=False))
    if result.message:
        err.print(f"[yellow]{escape(result.message)}[/]")


