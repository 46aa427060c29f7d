"""The evaluation loop shared by ``pilar eval``, :meth:`pilar.Pilar.evaluate`
and ``bench/``: one retrieval method run over questions, each figure computed
with :mod:`pilar.eval.metrics`, aggregated overall and per hop count.

:class:`EvalReport` and :class:`QuestionScore` are pydantic dataclasses,
declared once: the same records are the REST API's eval job ``report``
(:class:`pilar.api.models.Job`) and what ``pilar eval --json`` writes
(:func:`report_json`).

A *method* is a callable ``(Question) -> Retrieved``: pilar's search
(:class:`SearchMethod`, for :meth:`pilar.Pilar.evaluate` and ``bench/``
alike), or a baseline in ``bench/`` (flat chunks, page-only), so all of them
are scored by the same code.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from pydantic import TypeAdapter
from pydantic.dataclasses import dataclass as record

from pilar.eval.metrics import (RECALL_KS, answer_figures, chain_coverage, delivered, mean_recall,
                                mrr, recall_at_k)
from pilar.errors import LLMError
from pilar.eval.questions import Question, load_questions
from pilar.model import Answer, Packet, RankedPage

if TYPE_CHECKING:
    from pilar.reader import Reader

RANK_DEPTH = max(RECALL_KS)
"""Pages ranked per question for recall@1..10 and MRR@10."""
CHAIN_KS = (3, 5, 10)
"""Depths at which support-chain coverage is always reported (besides ``--k``)."""


@dataclass(slots=True)
class Retrieved:
    """What a method returns for one question: ``pages`` ranked best first (at
    least :data:`RANK_DEPTH` when the store has them), the packet ``text``
    built from the first ``k`` of them within the budget, and, with a reader,
    its ``prediction`` and the texts of the supports it cites."""

    pages: list[RankedPage]
    text: str
    prediction: str | None = None
    cited: list[str] | None = None


Method = Callable[[Question], Retrieved]


@dataclass(slots=True)
class SearchMethod:
    """pilar's search as a :data:`Method`: ``rank(question, depth)`` gives
    the ranked pages (at least :data:`RANK_DEPTH` asked for), the first ``k``
    are packed by ``pack(question, pages, budget)`` within ``budget``
    tokens; with ``read(question, packet)`` each packet is also answered,
    and a reader that fails (:class:`~pilar.errors.LLMError`) leaves the
    question without answer figures and a line in ``failures``."""

    rank: Callable[[str, int], list[RankedPage]]
    pack: Callable[[str, list[RankedPage], int], Packet]
    k: int
    budget: int
    read: Callable[[str, Packet], Answer] | None = None
    failures: list[str] = field(default_factory=list)

    @classmethod
    def of(cls, rank: Callable[[str, int], list[RankedPage]],
           pack: Callable[[str, list[RankedPage], int], Packet], k: int, budget: int,
           reader: "Reader | None" = None,
           reply: Callable[[str, Packet, int], Answer] | None = None) -> "SearchMethod":
        """The method of pilar's search; with ``reader`` (a
        :class:`~pilar.reader.Reader`) each packet is built within its text
        share of ``budget`` (:meth:`~pilar.reader.Reader.text_budget`) and
        answered by ``reply(question, packet, budget)``, as
        :meth:`pilar.Pilar.ask` answers."""
        if reader is None:
            return cls(rank, pack, k, budget)
        return cls(rank, pack, k, reader.text_budget(budget),
                   lambda question, packet: reply(question, packet, budget))

    def __call__(self, q: Question) -> Retrieved:
        return self.retrieved(q.question, self.rank(q.question, max(self.k, RANK_DEPTH)), q.qid)

    def retrieved(self, question: str, pages: list[RankedPage], qid: str = "") -> Retrieved:
        """What this method returns for ``question`` given its ranked ``pages``."""
        packet = self.pack(question, pages[:self.k], self.budget)
        got = Retrieved(pages, packet.text)
        if self.read is not None:
            try:
                answer = self.read(question, packet)
            except LLMError as exc:
                self.failures.append(f"{qid}: {exc}")
            else:
                got.prediction = answer.short
                got.cited = [c.text for c in answer.citations]
        return got


@record(slots=True)
class QuestionScore:
    """One question's figures (name -> value in [0, 1]) and the gold-matched
    ids of its first :data:`RANK_DEPTH` ranked documents or pages."""

    qid: str
    hops: int | None
    figures: dict[str, float]
    ranked: list[str] = field(default_factory=list)


@record(slots=True)
class EvalReport:
    """A method's figures over a questions file.

    ``figures``: group -> figure name -> mean over the questions of the group
    that have that figure (``all``, then ``1 hop``, ``2 hops``, ... when the
    file has hop counts); ``counts``: group -> questions; ``rows``: one
    :class:`QuestionScore` per question; ``budget`` in tokens, ``k`` pages
    packed, ``seconds`` of wall-clock time; ``notes``: what was not measured
    and why (e.g. EM/ANLS without a reader). Fields are validated (figures
    as floats); ``pilar eval --json`` and the API emit it as is.
    """

    method: str
    questions: str
    budget: int
    k: int
    figures: dict[str, dict[str, float]]
    counts: dict[str, int]
    rows: list[QuestionScore]
    seconds: float
    profile: str | None = None
    notes: list[str] = field(default_factory=list)


def report_json(report: EvalReport, indent: int | None = None) -> str:
    """``report`` as JSON, the shape of the REST API's eval job ``report``."""
    return _REPORT.dump_json(report, indent=indent).decode()


def _gold_keys(page: RankedPage) -> tuple[str, str, str]:
    return page.page_id, page.doc_id, Path(page.source).stem


def ranked_ids(pages: Sequence[RankedPage], gold: Iterable[str]) -> list[str]:
    """The ranking as ids comparable with ``gold``: each page becomes the gold
    id it matches (its page id, doc id or source file stem), else its page id;
    repeats are dropped, so a document counts at its best page's rank."""
    gold = tuple(gold)
    keys = (next((g for g in gold if g in _gold_keys(p)), p.page_id) for p in pages)
    return list(dict.fromkeys(keys))


def rank_figures(ranked: Sequence[str], gold: Sequence[str], k: int) -> dict[str, float]:
    """Ranking figures of one question (``ranked`` as :func:`ranked_ids` gives
    it, at most :data:`RANK_DEPTH` ids): ``recall@1``, ``recall@5``,
    ``recall@10``, ``recall@1-10`` (the mean over k = 1..10, PILAR App. C),
    ``MRR@10``, ``chain@k`` for ``k`` and :data:`CHAIN_KS` (every gold id in
    the first ``k``, App. J.8) and ``chain@1-10``, chain coverage averaged
    over k = 1..10 (the all-gold-documents-in-top-k of the PILAR code)."""
    figures = {f"recall@{kk}": recall_at_k(ranked, gold, kk) for kk in (1, 5, 10)}
    figures["recall@1-10"] = mean_recall(ranked, gold)
    figures["MRR@10"] = mrr(ranked, gold, k=RANK_DEPTH)
    chains = {kk: chain_coverage(ranked, gold, kk) for kk in RECALL_KS}
    for kk in sorted({k, *CHAIN_KS}):
        figures[f"chain@{kk}"] = chains[kk] if kk in chains else chain_coverage(ranked, gold, kk)
    figures["chain@1-10"] = sum(chains.values()) / len(chains)
    return figures


def score_question(q: Question, got: Retrieved, budget: int, k: int) -> QuestionScore:
    """Figures of one question: with gold ids, :func:`rank_figures`;
    always ``delivery@budget`` (Tessera §4.4); with a prediction, the
    answer's figures (:func:`~pilar.eval.metrics.answer_figures`: ``EM``,
    ``ANLS`` and, with cited texts, ``citation support``)."""
    ranked = ranked_ids(got.pages[:RANK_DEPTH], q.gold)
    figures = rank_figures(ranked, q.gold, k) if q.gold else {}
    figures[f"delivery@{budget}"] = float(delivered(q.answers, got.text))
    if got.prediction is not None:
        figures |= answer_figures(got.prediction, q.answers, got.cited)
    return QuestionScore(q.qid, q.hops, figures, ranked)


def group_of(hops: int | None) -> str | None:
    """Report group of a hop count: ``1 hop``, ``2 hops``, ...; None without one."""
    return None if hops is None else f"{hops} hop{'s' if hops != 1 else ''}"


def aggregate(rows: Sequence[QuestionScore]) -> tuple[dict[str, dict[str, float]], dict[str, int]]:
    """Means per group (``all`` first, then hop groups in hop order) of every
    figure over the rows that have it; and the rows per group."""
    groups: dict[str, list[QuestionScore]] = {"all": list(rows)}
    for row in sorted(rows, key=lambda r: r.hops or 0):
        g = group_of(row.hops)
        if g is not None:
            groups.setdefault(g, []).append(row)
    figures: dict[str, dict[str, float]] = {}
    for name, members in groups.items():
        sums: dict[str, list[float]] = {}
        for r in members:
            for fig, value in r.figures.items():
                sums.setdefault(fig, []).append(value)
        figures[name] = {fig: sum(v) / len(v) for fig, v in sums.items()}
    return figures, {name: len(m) for name, m in groups.items()}


def evaluate(questions: Sequence[Question], method: Method, *, name: str, source: str,
             budget: int, k: int, profile: str | None = None,
             progress: Callable[[int, int], None] | None = None,
             notes: Sequence[str] = (),
             prepare: Callable[[Sequence[Question]], None] | None = None,
             batch: int = 128) -> EvalReport:
    """Run ``method`` on every question and score it (:func:`score_question`).

    ``budget`` (tokens) and ``k`` (pages packed) only label the figures: the
    method applies them. ``prepare(questions)``, when given, is called with
    each run of ``batch`` questions before their searches (e.g. to embed
    them in one batch). ``progress(done, total)`` is called after each
    question. Exceptions of the method propagate.
    """
    t0 = time.perf_counter()
    rows = []
    for start in range(0, len(questions), batch):
        chunk = questions[start:start + batch]
        if prepare:
            prepare(chunk)
        for q in chunk:
            rows.append(score_question(q, method(q), budget, k))
            if progress:
                progress(len(rows), len(questions))
    figures, counts = aggregate(rows)
    return EvalReport(name, source, budget, k, figures, counts, rows,
                      time.perf_counter() - t0, profile, list(notes))


def evaluate_search(questions: str | Path | list[Question], method: SearchMethod, *,
                    budget: int, k: int, profile: str | None = None,
                    limit: int | None = None,
                    progress: Callable[[int, int], None] | None = None,
                    prepare: Callable[[Sequence[Question]], None] | None = None,
                    batch: int = 128) -> EvalReport:
    """:func:`evaluate` of pilar's search over a questions file (format in
    :mod:`pilar.eval.questions`; ``limit``: a fixed-seed sample, bad rows
    skipped and listed in ``notes``) or a list (``limit``: its first). The
    notes also say when EM, ANLS and citation support were not measured
    (no reader) and how many questions the reader failed on. Raises
    :class:`~pilar.errors.QuestionsError` for an unreadable file."""
    notes: list[str] = []
    source = "questions"
    if isinstance(questions, (str, Path)):
        source = str(questions)
        questions, notes = load_questions(questions, limit)
    elif limit is not None:
        questions = questions[:limit]
    if method.read is None:
        notes.append("EM, ANLS and citation support need answers: evaluate with a reader "
                     "(reader=True, `pilar eval --reader`)")
    report = evaluate(questions, method, name="pilar", source=source, budget=budget, k=k,
                      profile=profile, progress=progress, notes=notes, prepare=prepare,
                      batch=batch)
    if method.failures:
        report.notes.append(f"the reader failed on {len(method.failures)} question(s), left "
                            f"out of EM, ANLS and citation support; first: {method.failures[0]}")
    return report


_REPORT = TypeAdapter(EvalReport)


def markdown_table(report: EvalReport) -> str:
    """The report as a GitHub Markdown table: one row per group (``all``, then
    hop counts), one column per figure, values to three decimals."""
    names = list(dict.fromkeys(f for g in report.figures.values() for f in g))
    lines = ["| questions | n | " + " | ".join(names) + " |",
             "|---|---:|" + "---:|" * len(names)]
    for group, figs in report.figures.items():
        cells = [f"{figs[n]:.3f}" if n in figs else "" for n in names]
        lines.append(f"| {group} | {report.counts[group]} | " + " | ".join(cells) + " |")
    return "\n".join(lines)
