"""``pilar eval``: evaluate search (and answers) on a questions TSV over the
current store, as a Markdown table (:mod:`pilar.eval`; PILAR App. C)."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Annotated, Optional

import typer
from rich.markup import escape
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

from pilar.cli.base import (BudgetOpt, CollectionsOpt, HomeOpt, ProfileOpt, _collections, _default,
                            _pilar, command, err, fail, out)
from pilar.config import Settings
from pilar.errors import QuestionsError
from pilar.query import options
from pilar.eval.run import markdown_table, report_json

EVAL_LIMIT = 300
"""Questions `pilar eval` samples by default (fixed seed; --limit 0 for all)."""


@command("eval")
def eval_(questions: Annotated[Path, typer.Argument(
              metavar="QUESTIONS", help="questions TSV: qid, question, answers ' | '-joined, optional gold "
                   "page_id/doc_ids, hops, lookup (as ../shared/data/wtq/dev/questions.tsv)")],
          budget: BudgetOpt = None,
          k: Annotated[Optional[int], typer.Option(
              "--k", metavar="N", help="pages packed and checked for support-chain coverage, "
              f"1 to PILAR_MAX_K ({_default('max_k')}) [default: PILAR_TOP_K or "
              f"{_default('top_k')}]")
              ] = None,
          profile: ProfileOpt = None,
          limit: Annotated[Optional[int], typer.Option(
              metavar="N", help=f"fixed-seed sample of N questions (default {EVAL_LIMIT}; 0 = all)")] = None,
          json_out: Annotated[Optional[Path], typer.Option(
              "--json", metavar="FILE", help="write the report (figures and per-question rows) as JSON")] = None,
          reader: Annotated[bool, typer.Option(
              "--reader", help="also answer each question (needs PILAR_LLM_BASE_URL; slow) "
                               "and report EM, ANLS and citation support")] = False,
          collection: CollectionsOpt = None,
          home: HomeOpt = None) -> None:
    """Evaluate search on QUESTIONS over the current store: recall@k, MRR,
    support-chain coverage and evidence delivery (with --reader also EM,
    ANLS and citation support of the answers), as a Markdown table."""
    _collections(collection)
    settings = Settings()  # a bad setting: exit 2 naming it (reported)
    try:  # the checks of every request (pilar.query), before a store is opened
        options(settings, budget, k, profile, collection or None)
    except (ValueError, TypeError) as exc:
        fail(str(exc), 2)
    if limit is not None and limit < 0:
        raise typer.BadParameter("must be 0 (all) or more", param_hint="--limit")
    if json_out is not None:
        _check_writable(json_out, "--json")
    p = _pilar(home, create=False)
    if not p.docs():
        from pilar.retrieval.profiles import EMPTY_STORE

        fail(EMPTY_STORE)
    with Progress(TextColumn("[bold]eval"), BarColumn(), MofNCompleteColumn(),
                  TimeElapsedColumn(), console=err,
                  disable=not err.is_terminal) as bar:  # logs get the lines, no bar
        task = bar.add_task("", total=None)
        try:
            report = p.evaluate(questions, budget=budget, k=k, profile=profile,
                                limit=EVAL_LIMIT if limit is None else (limit or None),
                                reader=reader, collections=collection or None,
                                progress=lambda done, total: bar.update(task, completed=done,
                                                                        total=total))
        except (QuestionsError, ValueError, TypeError) as exc:  # bad input: exit 2
            bar.stop()
            fail(str(exc), 2)
    for note in report.notes:
        err.print(f"[yellow]note[/] {escape(note)}")
    out.print(f"{report.method} on {escape(report.questions)}: {report.counts['all']} questions, "
              f"budget {report.budget} tokens, k {report.k}, profile {report.profile}, "
              f"{report.seconds:.0f} s\n", highlight=False)
    out.print(markdown_table(report), highlight=False, markup=False)
    if json_out:
        try:
            json_out.write_text(report_json(report, indent=1), encoding="utf-8")
        except OSError as exc:
            fail(f"--json {json_out}: cannot write the report: {exc.strerror or exc}")
        err.print(f"wrote {escape(str(json_out))}")


def _check_writable(path: Path, option: str) -> None:
    """End the command (exit code 2) unless a file can be written at
    ``path`` (its folder is created if missing), before any work is done."""
    if path.is_dir():
        fail(f"{option} {path}: is a folder, not a file", 2)
    above = next((p for p in path.parents if p.exists()), None)
    if above is not None and not above.is_dir():
        fail(f"{option} {path}: {above} is a file, not a folder", 2)
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        fail(f"{option} {path}: cannot create its folder: {exc.strerror or exc}", 2)
    if not os.access(path.parent, os.W_OK) or (path.exists() and not os.access(path, os.W_OK)):
        fail(f"{option} {path}: not writable", 2)
