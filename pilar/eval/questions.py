"""Question files for ``pilar eval`` and ``bench/``.

A questions file is tab-separated UTF-8 with a header row and no quoting (the
format of ``../shared/data/wtq/dev/questions.tsv`` and
``../shared/data/multihop/questions.tsv``). Columns, by header name:

- ``qid`` or ``id``: the question's id (default: its row number);
- ``question`` (required);
- ``answers`` (required): the gold answer's parts joined by `` | `` (a list
  answer needs every part);
- optional gold evidence: ``doc_ids``, ``doc_id``, ``page_ids`` or
  ``page_id``, joined by `` | `` in reasoning order; each id is a page id
  (``doc_id:number``), a doc id, or a file stem of the ingested source
  (``203-733`` for ``.../203-733.html``);
- optional ``hops``: figures are also reported per hop count;
- optional ``lookup``: when present only rows with ``1`` are kept (their
  answers occur verbatim in the documents, so delivery can be checked by
  substring; see ``../shared/data/README.md``).

Other columns are ignored.
"""

from __future__ import annotations

import random
from dataclasses import dataclass
from pathlib import Path

from pilar.errors import QuestionsError

GOLD_COLUMNS = ("doc_ids", "doc_id", "page_ids", "page_id")
SAMPLE_SEED = 13
"""Seed of the fixed sample ``--limit N`` takes (the benches' ``random.Random(13)``)."""


@dataclass(slots=True, frozen=True)
class Question:
    """One evaluation question.

    ``answers``: parts of the gold answer (all required); ``gold``: gold
    evidence ids in reasoning order (empty when the file has none);
    ``hops``: the hop count when the file gives one.
    """

    qid: str
    question: str
    answers: tuple[str, ...]
    gold: tuple[str, ...] = ()
    hops: int | None = None


def _split(value: str) -> tuple[str, ...]:
    return tuple(x.strip() for x in value.split(" | ") if x.strip())


def load_questions(path: str | Path, limit: int | None = None,
                   seed: int = SAMPLE_SEED) -> tuple[list[Question], list[str]]:
    """Read ``path`` (format in the module docstring); with ``limit``, a
    fixed-seed sample of that many questions (``random.Random(seed).sample``,
    in sampled order), else all in file order.

    Returns ``(questions, problems)``: a bad row (too few fields, empty
    question or answers, a non-integer ``hops``) is skipped with a one-line
    problem naming the file, line and field. Raises :class:`QuestionsError`
    when the file is missing, not UTF-8, empty, or lacks a required column.
    """
    path = Path(path)
    try:
        lines = path.read_text(encoding="utf-8").splitlines()
    except FileNotFoundError:
        raise QuestionsError(f"{path}: no such file") from None
    except UnicodeDecodeError as exc:
        raise QuestionsError(f"{path}: not UTF-8 text ({exc.reason} at byte {exc.start})") from None
    except OSError as exc:
        raise QuestionsError(f"{path}: cannot read ({exc.strerror})") from None
    if not lines:
        raise QuestionsError(f"{path}: empty file, expected a header row")
    head = [h.strip().lower() for h in lines[0].split("\t")]
    for need in ("question", "answers"):
        if need not in head:
            raise QuestionsError(f"{path}: no '{need}' column in the header "
                                 f"(columns: {', '.join(head)})")
    col = {name: i for i, name in enumerate(head)}
    qid_col = col.get("qid", col.get("id"))
    gold_col = next((col[c] for c in GOLD_COLUMNS if c in col), None)
    questions: list[Question] = []
    problems: list[str] = []
    for line_no, line in enumerate(lines[1:], 2):
        if not line.strip():
            continue
        row = line.split("\t")
        where = f"{path}:{line_no}"
        if len(row) < len(head):
            problems.append(f"{where}: {len(row)} fields, the header has {len(head)}; row skipped")
            continue
        if "lookup" in col and row[col["lookup"]].strip() != "1":
            continue
        text, answers = row[col["question"]].strip(), _split(row[col["answers"]])
        if not text or not answers:
            problems.append(f"{where}: empty {'question' if not text else 'answers'}; row skipped")
            continue
        hops = None
        if "hops" in col:
            try:
                hops = int(row[col["hops"]])
            except ValueError:
                problems.append(f"{where}: hops {row[col['hops']]!r} is not an integer; "
                                "row skipped")
                continue
        qid = row[qid_col].strip() if qid_col is not None else str(line_no - 1)
        gold = _split(row[gold_col]) if gold_col is not None else ()
        questions.append(Question(qid, text, answers, gold, hops))
    if limit is not None and limit < len(questions):
        questions = random.Random(seed).sample(questions, limit)
    return questions, problems
