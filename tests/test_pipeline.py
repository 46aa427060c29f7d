"""End-to-end tests of the embedded default: real SQLite file, real
sentence-transformers model, real Wikipedia pages from tests/fixtures/corpus."""

from __future__ import annotations

import shutil
import sqlite3
from pathlib import Path

import pytest

from pilar import Pilar
from pilar.graph.sqlite import SqliteGraphStore
from pilar.migrations import migration_files
from pilar.retrieval.sqlite import SqlitePageIndex
from tests.conftest import FIXTURES

CORPUS = FIXTURES / "corpus"


def _questions() -> list[tuple[str, str, list[str]]]:
    rows = (CORPUS / "questions.tsv").read_text(encoding="utf-8").splitlines()[1:]
    out = []
    for row in rows:
        _qid, question, page_id, answers, _lookup = row.split("\t")
        out.append((question, page_id, answers.split(" | ")))
    return out


@pytest.fixture(scope="module")
def embedded(tmp_path_factory) -> Pilar:
    """A store with the fixture corpus ingested (shared by the read-only tests)."""
    p = Pilar(home=tmp_path_factory.mktemp("pilar"))
    results = p.ingest([CORPUS])
    assert [r.status for r in results if r.path.endswith(".html")] == ["ingested"] * 12, results[0].reason
    return p


def _counts(p: Pilar) -> dict[str, int]:
    return {**p.stats(), "index_pages": p.index.count()}


def test_ingest_stores_pages_supports_and_index(embedded: Pilar):
    stats = embedded.stats()
    assert stats["documents"] == 12
    assert stats["pages"] == 12
    assert stats["supports"] > 12 * 5
    assert stats["provenance"] == stats["supports"]
    assert embedded.index.count() == 12
    stems = {Path(d.uri).stem for d in embedded.docs()}
    assert stems == {path.stem for path in CORPUS.glob("*.html")}
    titles = {d.title for d in embedded.docs()}
    assert "Peter Widén" in titles  # the MediaWiki lead's bold subject (no <title> in the page)


def test_store_file_is_wal_sqlite_with_migrations(embedded: Pilar):
    path = embedded.settings.db_path
    assert path.is_file()
    con = sqlite3.connect(path)
    assert con.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
    versions = [v for v, _ in migration_files("sqlite", ".sql")]
    assert versions[:3] == [1, 2, 3]
    assert con.execute("PRAGMA user_version").fetchone()[0] == versions[-1]
    tokenizer = con.execute("SELECT sql FROM sqlite_master WHERE name='page_fts'").fetchone()[0]
    assert "porter unicode61" in tokenizer


def test_page_vectors_are_normalised_float32(embedded: Pilar):
    import numpy as np

    blob = embedded.index.db.conn.execute("SELECT vector FROM page_vectors LIMIT 1").fetchone()[0]
    vec = np.frombuffer(blob, dtype="<f4")
    assert vec.shape == (384,)
    assert abs(float(np.linalg.norm(vec)) - 1.0) < 1e-4


def test_search_ranks_gold_page_and_packs_cited_excerpts(embedded: Pilar):
    result = embedded.search("what is the tallest building in kanpur?", budget=600, k=5)
    assert result.pages[0].source.endswith("204-541.html")
    assert result.pages[0].score >= result.pages[1].score
    packet = result.packet
    assert 0 < packet.tokens <= 600
    assert "Ratan Planet" in packet.text
    assert all(c.doc_id and c.page >= 1 and c.source for c in packet.citations)
    assert any(c.section_path for c in packet.citations)


def test_retrieval_recall_at_10_on_fixture_questions(embedded: Pilar):
    questions = _questions()
    hits = 0
    for question, page_id, _answers in questions:
        pages = embedded.search(question, k=10).pages
        hits += any(Path(p.source).stem == page_id for p in pages[:10])
    # 12 pages and 63 questions: the gold page must be in the top 10 nearly always
    assert hits / len(questions) >= 0.95


def test_packet_never_exceeds_budget(embedded: Pilar):
    for budget in (50, 200, 1000, 4500):
        result = embedded.search("which broadcaster hosted 3 titles?", budget=budget)
        assert result.packet.tokens <= budget
        assert embedded.tokens.count(result.packet.text) == result.packet.tokens


def test_reingest_same_bytes_is_a_noop(embedded: Pilar):
    before = _counts(embedded)
    results = embedded.ingest([CORPUS / "204-903.html"])
    assert [r.status for r in results] == ["unchanged"]
    assert _counts(embedded) == before


def test_changed_bytes_replace_the_old_version(tmp_path: Path):
    p = Pilar(home=tmp_path / "home")
    doc = tmp_path / "page.html"
    shutil.copy(CORPUS / "204-903.html", doc)
    first = p.ingest([doc])[0]
    doc.write_bytes(doc.read_bytes().replace(b"Sophie Colquhoun", b"Sophie Q. Colquhoun"))
    second = p.ingest([doc])[0]
    assert (first.status, second.status) == ("ingested", "replaced")
    assert first.doc_id != second.doc_id
    assert [d.doc_id for d in p.docs()] == [second.doc_id]
    assert p.index.count() == 1
    assert "Sophie Q. Colquhoun" in p.search("Sophie Colquhoun").packet.text


def test_a_copy_is_another_source_and_keeps_the_document_when_one_path_changes(tmp_path: Path):
    p = Pilar(home=tmp_path / "home")
    a, b = tmp_path / "a.html", tmp_path / "b.html"
    shutil.copy(CORPUS / "204-903.html", a)
    shutil.copy(a, b)
    first, copy = p.ingest([a, b])
    assert (first.status, copy.status, copy.doc_id, copy.reason) == \
        ("ingested", "new_source", first.doc_id, str(a.resolve()))
    a.write_bytes(a.read_bytes().replace(b"Sophie Colquhoun", b"Sophie Q. Colquhoun"))
    [changed] = p.ingest([a])
    assert changed.status == "replaced"
    # the old bytes are still at b: that document stays, with b as its only source
    assert {d.doc_id: d.sources for d in p.docs()} == \
        {first.doc_id: [str(b.resolve())], changed.doc_id: [str(a.resolve())]}
    assert p.index.count() == 2


def test_the_same_bytes_in_two_collections_are_two_documents(tmp_path: Path):
    """A document belongs to one collection: the same bytes ingested into
    ``default``, ``team-a`` and ``team-b`` are three documents (ids, sources,
    entities of their own); within a collection the duplicate rules hold;
    deleting one leaves the others whole."""
    from pilar.errors import UnknownScopeError
    from pilar.ingest import document_id

    p = Pilar(home=tmp_path / "home")
    a, copy = tmp_path / "a.html", tmp_path / "copy.html"
    shutil.copy(CORPUS / "204-541.html", a)
    shutil.copy(a, copy)
    sha = p.ingest([a])[0]
    runs = {c: p.ingest([a], collection=c) for c in ("team-a", "team-b")}
    assert [r.status for c in runs for r in runs[c]] == ["ingested", "ingested"]
    ids = {"default": sha.doc_id, **{c: r[0].doc_id for c, r in runs.items()}}
    digest = p.docs()[0].sha256
    assert ids == {c: document_id(digest, c) for c in ids} and len(set(ids.values())) == 3
    assert ids["default"] == digest[:16]  # the default collection keeps its ids
    assert [r.status for r in p.ingest([a], collection="team-a")] == ["unchanged"]
    [added] = p.ingest([copy], collection="team-b")
    assert (added.status, added.doc_id, added.reason) == ("new_source", ids["team-b"],
                                                          str(a.resolve()))
    assert {d.collection: d.sources for d in p.docs()} == {
        "default": [str(a.resolve())], "team-a": [str(a.resolve())],
        "team-b": [str(a.resolve()), str(copy.resolve())]}
    q = "what is the tallest building in kanpur?"
    for c in ids:
        found = p.search(q, collections=[c], budget=400)
        assert {pg.doc_id for pg in found.pages} == {ids[c]}
        assert {e.collection for e in p.entities("ratan planet", collections=[c])} == {c}
        assert all(e.entity_id.startswith(f"{c}:") == (c != "default")
                   for e in p.entities("ratan planet", collections=[c]))
    assert p.delete(ids["team-a"]) is True
    assert {d.collection for d in p.docs()} == {"default", "team-b"}
    with pytest.raises(UnknownScopeError):  # its only document is gone
        p.search(q, collections=["team-a"], budget=400)
    for c in ("default", "team-b"):
        assert {pg.doc_id for pg in p.search(q, collections=[c], budget=400).pages} == {ids[c]}
    assert p.entities("ratan planet", collections=["team-a"]) == []


def test_a_limited_search_finding_nothing_says_nothing_of_other_collections(tmp_path: Path):
    """On an empty store and on one holding only another collection, a
    search limited to ``team-a`` gets the same error, before any model loads."""
    from pilar.errors import UnknownScopeError

    p = Pilar(home=tmp_path / "home")
    q = "what is the tallest building in kanpur?"
    told = []
    for _ in range(2):
        with pytest.raises(UnknownScopeError) as caught:
            p.search(q, collections=["team-a"], budget=400)
        told.append(str(caught.value))
        p.ingest([CORPUS / "204-541.html"], collection="team-b")
    assert told == ["no documents in collection 'team-a': list them with `pilar docs` or "
                    "GET /v1/documents"] * 2


def test_a_document_of_another_collection_is_told_as_an_unknown_id(tmp_path: Path):
    """A search limited to ``team-b`` naming a ``team-a`` document hears what
    an id nobody has gets, not that ``team-b`` (which holds a document) is empty."""
    from pilar.errors import UnknownScopeError

    p = Pilar(home=tmp_path / "home")
    other = p.ingest([CORPUS / "204-541.html"], collection="team-a")[0].doc_id
    p.ingest([CORPUS / "204-903.html"], collection="team-b")
    told = []
    for doc_id in (other, "0123456789abcdef"):
        with pytest.raises(UnknownScopeError) as caught:
            p.search("what is the tallest building in kanpur?", collections=["team-b"],
                     doc_ids=[doc_id], budget=400)
        told.append(str(caught.value))
    assert told == [f"no document with id {d!r} in the collections given: list them with "
                    "`pilar docs` or GET /v1/documents" for d in (other, "0123456789abcdef")]


def test_files_in_folders_that_are_not_documents_are_reported_skipped(tmp_path: Path):
    folder = tmp_path / "docs"
    folder.mkdir()
    shutil.copy(CORPUS / "204-903.html", folder / "page.html")
    (folder / "README.md").write_text("notes")
    results = Pilar(home=tmp_path / "home").ingest([folder / "page.html", folder])
    assert [(Path(r.path).name, r.status, r.reason) for r in results] == [
        ("README.md", "skipped", "not a document (.md)"), ("page.html", "ingested", None)]


def test_search_on_an_empty_store_raises_before_loading_a_model(tmp_path: Path):
    from pilar.errors import EmptyStoreError

    p = Pilar(home=tmp_path)
    with pytest.raises(EmptyStoreError, match="the store holds no documents"):
        p.search("kanpur")
    assert "model" not in p.embedder.__dict__      # the cached_property was never filled


def test_a_store_emptied_after_searches_says_so_again(tmp_path: Path):
    from pilar.errors import EmptyStoreError

    p = Pilar(home=tmp_path)
    (r,) = p.ingest([CORPUS / "204-903.html"])
    assert p.search("what year was the first album released?").pages
    assert p.delete(r.doc_id)
    with pytest.raises(EmptyStoreError, match="the store holds no documents"):
        p.search("what year was the first album released?")


def test_read_only_open_needs_an_existing_store(tmp_path: Path):
    from pilar.errors import ConfigError, EmptyStoreError

    with pytest.raises(EmptyStoreError, match=f"no store at {tmp_path / 'none'}"):
        Pilar(home=tmp_path / "none", create=False)
    assert not (tmp_path / "none").exists()
    (tmp_path / "file").write_text("x")
    with pytest.raises(ConfigError, match="is a file, not a folder"):
        Pilar(home=tmp_path / "file")


def test_delete_removes_graph_and_index_rows(tmp_path: Path):
    p = Pilar(home=tmp_path)
    r = p.ingest([CORPUS / "204-268.html", CORPUS / "204-133.html"])
    assert p.delete(r[0].doc_id) is True
    assert p.delete(r[0].doc_id) is False
    assert [d.doc_id for d in p.docs()] == [r[1].doc_id]
    assert p.stats()["pages"] == 1 and p.index.count() == 1
    con = p.index.db.conn
    assert con.execute("SELECT count(*) FROM page_fts WHERE page_fts MATCH 'Maurice'").fetchone()[0] == 0


@pytest.mark.parametrize("where", ["graph", "index"])
def test_failure_mid_document_leaves_store_unchanged(tmp_path: Path, monkeypatch, where):
    p = Pilar(home=tmp_path)
    p.ingest([CORPUS / "204-268.html"])
    before = _counts(p)
    docs_before = p.docs()

    if where == "graph":
        original = SqliteGraphStore.write_document

        def broken(self, parsed, replaces=()):
            original(self, parsed, replaces)  # every graph row written...
            raise sqlite3.OperationalError("disk I/O error (injected)")  # ...then a failure

        monkeypatch.setattr(SqliteGraphStore, "write_document", broken)
    else:
        original = SqlitePageIndex.add_pages

        def broken(self, pages, vectors, unit_ids=None, **kwargs):
            original(self, pages[:1], vectors[:1], unit_ids[:1] if unit_ids else None, **kwargs)
            raise sqlite3.OperationalError("disk I/O error (injected)")

        monkeypatch.setattr(SqlitePageIndex, "add_pages", broken)

    results = p.ingest([CORPUS / "204-133.html", CORPUS / "204-445.html"])
    assert [r.status for r in results] == ["failed", "failed"]
    assert "injected" in results[0].reason
    assert _counts(p) == before
    assert p.docs() == docs_before
    monkeypatch.undo()
    assert [r.status for r in p.ingest([CORPUS / "204-133.html"])] == ["ingested"]


def test_bad_files_get_one_clear_reason_and_the_batch_goes_on(tmp_path: Path, hostile: Path):
    bad = tmp_path / "bad"
    bad.mkdir()
    shutil.copy(hostile / "empty-0.pdf", bad / "a-empty.pdf")
    shutil.copy(hostile / "binary-named-html-0.html", bad / "b-binary.html")
    shutil.copy(hostile / "docx-named-pdf-0.pdf", bad / "c-docx.pdf")
    shutil.copy(hostile / "encrypted-user-0.pdf", bad / "d-encrypted.pdf")
    shutil.copy(hostile / "truncated-0.pdf", bad / "e-truncated.pdf")
    shutil.copy(CORPUS / "204-268.html", bad / "f-good.html")
    p = Pilar(home=tmp_path / "home")
    results = {Path(r.path).name: r for r in p.ingest([bad, bad / "missing.pdf"])}
    assert results["a-empty.pdf"].reason == "empty file"
    assert "unsupported file type" in results["b-binary.html"].reason
    assert "ZIP" in results["c-docx.pdf"].reason
    assert "encrypt" in results["d-encrypted.pdf"].reason.lower()
    assert results["e-truncated.pdf"].reason.startswith("corrupt PDF: truncated or damaged")
    assert results["f-good.html"].status == "ingested"
    assert results["missing.pdf"].reason == "no such file"
    for r in results.values():
        if r.status == "failed":
            assert r.reason and "\n" not in r.reason
    assert [Path(d.uri).name for d in p.docs()] == ["f-good.html"]


@pytest.mark.parametrize("kwargs, message", [
    ({"question": "  "}, "question is empty"),
    ({"question": "?!., -- ..."}, "the question has no words"),
    ({"question": "\x01\x1b\x7f\u200b\u202e\u0301"}, "the question has no words"),
    ({"question": "kanpur", "budget": 0}, "budget must be at least 32"),
    ({"question": "kanpur", "budget": -5}, "budget must be at least 32"),
    ({"question": "kanpur", "k": 0}, "k must be at least 1"),
    ({"question": "kanpur", "k": -1}, "k must be at least 1"),
    ({"question": "kanpur", "profile": "bogus"}, "profile must be one of single-shot, multi-hop"),
    ({"question": "k" * 4001}, "the question is 4,001 characters, over the 4,000-character limit"),
])
def test_search_rejects_bad_arguments(embedded: Pilar, kwargs, message):
    with pytest.raises(ValueError, match=message):
        embedded.search(**kwargs)


@pytest.mark.parametrize("kwargs", [{"budget": "300"}, {"budget": 100.7}, {"budget": True},
                                    {"k": 2.5}])
def test_search_wants_integer_budget_and_k(embedded: Pilar, kwargs):
    name = next(iter(kwargs))
    with pytest.raises(TypeError, match=f"{name} must be an integer, got {kwargs[name]!r}"):
        embedded.search("kanpur", **kwargs)


def test_bm25_part_is_zero_when_no_page_matches(embedded: Pilar):
    pages = embedded.search("zzzqqq xyzzy").pages
    assert pages and all(p.bm25 == 0.0 and p.trace["bm25_raw"] == 0.0 for p in pages)
    assert all(p.trace["base"] == pytest.approx(0.6 * p.dense, abs=1e-5) for p in pages
               if not p.trace["expanded"])


def test_parser_warnings_reach_the_ingest_result(tmp_path: Path, hostile: Path):
    p = Pilar(home=tmp_path)
    [result] = p.ingest([hostile / "span-bomb-0.html"])
    assert result.status == "ingested"
    assert any("span" in w for w in result.warnings), result.warnings


def test_blank_pages_get_no_vectors_and_are_never_dense_hits(tmp_path: Path, hostile: Path):
    import pymupdf as fitz

    src = fitz.open(hostile / "many-blank-pages-0.pdf")
    doc = fitz.open()
    doc.insert_pdf(src, from_page=0, to_page=19)
    small = tmp_path / "blank-20.pdf"
    doc.save(small)
    p = Pilar(home=tmp_path / "home")
    [result] = p.ingest([small])
    assert result.status == "ingested" and result.n_pages == 20 and result.n_units == 0
    assert p.index.db.conn.execute("SELECT count(*) FROM page_vectors").fetchone()[0] == 0
    assert p.index.dense_top(p.embedder.query("many blank pages"), 5) == {}


def test_cli_reports_every_bad_setting(tmp_path: Path):
    from typer.testing import CliRunner

    from pilar.cli import app

    bad = CliRunner().invoke(app, ["search", "kanpur", "--home", str(tmp_path)],
                             env={"PILAR_PROFILE": "bogus", "PILAR_BUDGET": "abc"})
    assert bad.exit_code == 2
    assert "PILAR_PROFILE='bogus'" in bad.output and "PILAR_BUDGET='abc'" in bad.output
    assert "Traceback" not in bad.output
