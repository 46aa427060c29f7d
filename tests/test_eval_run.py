"""pilar.eval end to end: question files, Pilar.evaluate and `pilar eval` on a
real store of five multi-hop documents (../shared/data/multihop)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from pilar import Pilar
from pilar.cli import app
from pilar.errors import QuestionsError, UnknownScopeError
from pilar.eval.questions import load_questions
from pilar.eval.run import QuestionScore, aggregate, markdown_table
from pilar.retrieval.embeddings import Embedder

DOCS = ["ar3_equipment_schedule", "orrin_verta220_datasheet", "orrin_company_wiki",
        "selwyn_ecodrive_datasheet", "gbwa_utility_wiki"]
QIDS = ["mh-s-002", "mh-s-011", "mh-s-021", "mh-s-034", "mh-s-035"]  # 1, 2, 2, 3, 3 hops


@pytest.fixture(scope="module")
def chains(shared_data: Path, tmp_path_factory) -> tuple[Pilar, Path]:
    """A store holding the five documents of QIDS' chains, and those questions as TSV."""
    home = tmp_path_factory.mktemp("eval")
    p = Pilar(home=home / "home")
    results = p.ingest([shared_data / "multihop" / f"{d}.html" for d in DOCS])
    assert [r.status for r in results] == ["ingested"] * 5
    lines = (shared_data / "multihop" / "questions.tsv").read_text(encoding="utf-8").splitlines()
    tsv = home / "questions.tsv"
    tsv.write_text("\n".join([lines[0], *[x for x in lines if x.split("\t")[0] in QIDS]]) + "\n",
                   encoding="utf-8")
    return p, tsv


def test_wtq_questions_keep_lookup_rows_and_sample_with_a_fixed_seed(shared_data: Path):
    path = shared_data / "wtq" / "dev" / "questions.tsv"
    every, problems = load_questions(path)
    assert len(every) == 1886 and problems == []
    first = every[0]
    assert first.gold and len(first.gold) == 1 and first.hops is None and first.answers
    sample, _ = load_questions(path, limit=50)
    again, _ = load_questions(path, limit=50)
    assert len(sample) == 50 and [q.qid for q in sample] == [q.qid for q in again]
    assert [q.qid for q in sample] != [q.qid for q in every[:50]]


def test_multihop_questions_carry_hops_and_chains_in_order(shared_data: Path):
    qs, _ = load_questions(shared_data / "multihop" / "questions.tsv")
    assert len(qs) == 40
    assert sorted({q.hops for q in qs}) == [1, 2, 3]
    q31 = next(q for q in qs if q.qid == "mh-s-031")
    assert q31.gold == ("gbwa_drought_plan", "gbwa_utility_wiki", "ar3_operations_manual")


def test_bad_question_files(tmp_path: Path):
    with pytest.raises(QuestionsError, match="no such file"):
        load_questions(tmp_path / "missing.tsv")
    bad = tmp_path / "bad.tsv"
    bad.write_text("qid\tprompt\tanswers\n1\tx\ty\n", encoding="utf-8")
    with pytest.raises(QuestionsError, match="no 'question' column"):
        load_questions(bad)
    bad.write_bytes(b"question\tanswers\n\xff\xfe\tx\n")
    with pytest.raises(QuestionsError, match="not UTF-8"):
        load_questions(bad)
    rows = tmp_path / "rows.tsv"
    rows.write_text("id\tquestion\tanswers\thops\n1\twho?\tAnn\t2\n2\tshort row\n"
                    "3\twhat?\t\t1\n4\twhen?\t1999\ttwo\n5\twhere?\tOslo | Bergen\t1\n",
                    encoding="utf-8")
    qs, problems = load_questions(rows)
    assert [q.qid for q in qs] == ["1", "5"] and qs[1].answers == ("Oslo", "Bergen")
    assert [p.split(": ", 1)[0] for p in problems] == [f"{rows}:3", f"{rows}:4", f"{rows}:5"]
    assert "hops 'two' is not an integer" in problems[2]


def test_aggregate_and_markdown_table():
    rows = [QuestionScore("a", 1, {"chain@3": 1.0, "delivery@512": 1.0}),
            QuestionScore("b", 2, {"chain@3": 0.0, "delivery@512": 1.0}),
            QuestionScore("c", 2, {"chain@3": 1.0, "delivery@512": 0.0})]
    figures, counts = aggregate(rows)
    assert list(figures) == ["all", "1 hop", "2 hops"]
    assert figures["all"]["chain@3"] == pytest.approx(2 / 3)
    assert figures["2 hops"] == {"chain@3": 0.5, "delivery@512": 0.5}
    assert counts == {"all": 3, "1 hop": 1, "2 hops": 2}


def test_evaluate_reports_chain_coverage_per_hop_count(chains):
    p, tsv = chains
    wide = p.evaluate(tsv, budget=4500, k=5)
    assert wide.counts == {"all": 5, "1 hop": 1, "2 hops": 2, "3 hops": 2}
    # five documents in the store: every chain is inside the top 5 and the packet
    assert wide.figures["all"]["recall@10"] == 1.0
    assert wide.figures["all"]["chain@5"] == 1.0
    assert wide.figures["all"]["delivery@4500"] == 1.0
    assert "EM" not in wide.figures["all"] and any("reader" in n for n in wide.notes)
    narrow = p.evaluate(tsv, budget=64, k=1)
    # one page cannot hold a chain of two or three documents
    assert narrow.figures["2 hops"]["chain@1"] == 0.0
    assert narrow.figures["3 hops"]["chain@1"] == 0.0
    assert narrow.figures["2 hops"]["recall@1"] <= 0.5
    assert narrow.figures["1 hop"]["chain@1"] == narrow.figures["1 hop"]["recall@1"]
    one = next(r for r in narrow.rows if r.qid == "mh-s-002")
    assert len(one.ranked) == 5 and "orrin_verta220_datasheet" in one.ranked
    table = markdown_table(narrow)
    assert table.splitlines()[0].startswith("| questions | n | recall@1 |")
    assert "| 3 hops | 2 |" in table


def test_cli_eval_prints_the_table_and_writes_json(chains, tmp_path: Path):
    p, tsv = chains
    home = str(p.settings.home)
    out = tmp_path / "report.json"
    runner = CliRunner()
    ok = runner.invoke(app, ["eval", str(tsv), "--home", home, "--budget", "512", "--k", "3",
                             "--json", str(out)])
    assert ok.exit_code == 0, ok.output
    assert "| all | 5 |" in ok.output and "| 2 hops | 2 |" in ok.output
    report = json.loads(out.read_text())
    assert report["budget"] == 512 and report["k"] == 3 and len(report["rows"]) == 5
    assert set(report["figures"]["all"]) >= {"chain@3", "delivery@512", "MRR@10", "recall@1-10"}
    missing = runner.invoke(app, ["eval", str(tmp_path / "nope.tsv"), "--home", home])
    assert missing.exit_code == 2 and "no such file" in missing.output
    assert "Traceback" not in missing.output
    bad = runner.invoke(app, ["eval", str(tsv), "--home", home, "--budget", "8"])
    assert bad.exit_code == 2 and "budget must be at least 32" in bad.output


def test_eval_with_reader_needs_one_and_collections_limit_the_pages(chains, tmp_path: Path,
                                                                   monkeypatch):
    p, tsv = chains
    for var in ("PILAR_LLM_BASE_URL", "PILAR_READER_BASE_URL"):
        monkeypatch.delenv(var, raising=False)
    no_reader = CliRunner().invoke(app, ["eval", str(tsv), "--home", str(p.settings.home),
                                         "--reader"])
    assert no_reader.exit_code == 2, no_reader.output
    assert "no reader is configured: set PILAR_LLM_BASE_URL" in no_reader.output
    assert "Traceback" not in no_reader.output
    # a collection that holds nothing is refused before any question runs, as on every face
    with pytest.raises(UnknownScopeError, match="no documents in collection 'elsewhere'"):
        p.evaluate(tsv, budget=512, k=3, collections=["elsewhere"])
    mine = p.evaluate(tsv, budget=512, k=3, collections=["default"])
    assert mine.figures["all"]["recall@10"] == 1.0


def test_primed_query_vectors_match_single_encodes(chains):
    p, _ = chains
    texts = ["which pump has a 25 bar rating?", "who chairs Orrin Hydraulics?"]
    fresh = Embedder.of(p.settings, cache=False)  # its own query cache: each text alone
    single = [fresh.query(t) for t in texts]
    p.embedder.prime(texts)
    for t, v in zip(texts, single):
        assert abs(float(p.embedder.query(t) @ v) - 1.0) < 1e-5
