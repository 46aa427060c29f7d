"""The ``pilar`` command line (Typer): ingest, search, ask, docs, delete, stats,
migrate, cypher, eval.

Every command has the same reach as the Python API (:class:`pilar.Pilar`)
and turns pilar's errors into one ``error:`` line on stderr (:func:`reported`)
with an exit code: 0 done; 1 the command ran but failed (a file failed, no
store, an empty store, a store that cannot be reached); 2 bad arguments or
settings (the line names the setting).
"""

from __future__ import annotations

import functools
import json
import time
from collections import Counter
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Annotated, NoReturn, Optional

import typer
from rich.console import Console
from rich.markup import escape
from rich.progress import (BarColumn, MofNCompleteColumn, Progress, TextColumn,
                           TimeElapsedColumn, TimeRemainingColumn)
from rich.table import Table

from pilar.config import MIN_BUDGET, PROFILES, Settings
from pilar.graph.neo4j_guard import RULES

app = typer.Typer(help="pilar: page-grounded evidence for document question answering.",
                  no_args_is_help=True, add_completion=False, rich_markup_mode=None)
out = Console(soft_wrap=True)
err = Console(stderr=True, soft_wrap=True)  # one line per message, also in logs

HomeOpt = Annotated[Optional[Path], typer.Option(
    "--home", metavar="DIR", help="store folder (default: PILAR_HOME, else ~/.local/share/pilar)")]
CollectionsOpt = Annotated[Optional[list[str]], typer.Option(
    "--collection", metavar="NAME", help="only documents of this collection (repeat for several)")]
ECHO_CHARS = 80
"""Characters of a question echoed in the search header."""


def _default(name: str):
    """The built-in default of setting ``name`` (for help texts)."""
    return Settings.model_fields[name].default


BudgetOpt = Annotated[Optional[int], typer.Option(
    metavar="TOKENS", help=f"packet token budget, at least {MIN_BUDGET} "
                           f"[default: PILAR_BUDGET or {_default('budget')}]")]
KOpt = Annotated[Optional[int], typer.Option(
    "--k", metavar="N", help=f"pages to rank, at least 1 "
                             f"[default: PILAR_TOP_K or {_default('top_k')}]")]
ProfileOpt = Annotated[Optional[str], typer.Option(
    metavar="PROFILE", help=f"{' or '.join(PROFILES)} [default: PILAR_PROFILE or "
                            f"{_default('profile')}]")]


def fail(message: str, code: int = 1) -> NoReturn:
    """Print ``error: message`` (one line) on stderr and exit with ``code``."""
    err.print(f"[red]error:[/] {escape(message)}")
    raise typer.Exit(code)


@contextmanager
def reported() -> Iterator[None]:
    """Turn pilar's errors into one ``error:`` line each and the exit code:
    a bad setting (pydantic's validation, :class:`ConfigError`) exits 2,
    any other :class:`PilarError` (no store, an empty store, a store that
    cannot be opened) exits 1, Ctrl-C exits 130."""
    from pydantic import ValidationError

    from pilar.errors import ConfigError, PilarError

    try:
        yield
    except ValidationError as exc:  # a bad PILAR_* setting in the environment or .env
        for e in exc.errors():
            name = "PILAR_" + "_".join(str(x) for x in e["loc"]).upper()
            err.print(f"[red]error:[/] {name}={escape(repr(e.get('input')))}: {escape(e['msg'])}")
        raise typer.Exit(2) from None
    except ConfigError as exc:
        fail(str(exc), 2)
    except PilarError as exc:
        fail(str(exc), 1)
    except KeyboardInterrupt:  # Ctrl-C: documents written so far stay, whole
        fail("interrupted", 130)


def command(*args, **kwargs):
    """``app.command(...)`` whose body runs under :func:`reported`."""
    def register(fn):
        @functools.wraps(fn)
        def run(*a, **kw):
            with reported():
                return fn(*a, **kw)
        return app.command(*args, **kwargs)(run)
    return register


def _collections(names: list[str] | None, option: str = "--collection") -> None:
    """End the command (exit 2, one ``error:`` line naming ``option``) unless
    every one of ``names`` is a collection name (:func:`pilar.model.check_collection`)."""
    from pilar.model import check_collection

    for name in names or ():
        try:
            check_collection(name, option)
        except ValueError as exc:
            fail(str(exc), 2)


def _open(home: Path | None, create: bool = True):
    """A :class:`Pilar` on ``home``; raises pilar's errors (see :func:`reported`)."""
    from pilar import Pilar

    return Pilar(home=home, create=create)


def _pilar(home: Path | None, create: bool = True):
    """A :class:`Pilar` on ``home``; a bad setting or a missing store (when
    ``create`` is False) ends the command with one ``error:`` line."""
    with reported():
        return _open(home, create)


def _version(value: bool) -> None:
    if value:
        from pilar import __version__

        out.print(f"pilar {__version__}")
        raise typer.Exit()


@app.callback()
def main_options(version: Annotated[bool, typer.Option(
        "--version", callback=_version, is_eager=True,
        help="print the version and exit")] = False) -> None:
    """pilar: page-grounded evidence for document question answering."""


def clip(text: str, limit: int = ECHO_CHARS) -> str:
    """``text`` on one line, cut to ``limit`` characters with a note of the
    rest; a control or format character is shown escaped (``\\x1b``), never
    sent to the terminal."""
    flat = "".join(c if c.isprintable() else repr(c)[1:-1] for c in " ".join(text.split()))
    if len(flat) <= limit:
        return flat
    return f"{flat[:limit]}... ({len(flat):,} characters)"


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
    from pilar.graph.explore import CypherError

    params = dict(_param(p) for p in param or [])
    try:
        result = _open(home, create=False).cypher(query, params, timeout=timeout, row_cap=limit)
    except CypherError as exc:
        fail(str(exc), 2 if exc.is_client_error and not exc.timed_out else 1)
    out.print_json(json.dumps({"columns": result.columns, "rows": result.rows}, ensure_ascii=False))
    if result.message:
        err.print(f"[yellow]{escape(result.message)}[/]")


# the commands of the other faces register themselves on ``app``
from pilar import cli_eval, cli_serve  # noqa: E402,F401


def main() -> None:
    app()
