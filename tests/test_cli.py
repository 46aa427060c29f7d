"""The ``pilar`` command as a new user meets it: the real entry point in a
subprocess (PYTHONPATH pointing at this tree), real SQLite stores, the real
embedding model. Each test asserts the exit code and the exact first line."""

from __future__ import annotations

import json
import os
import shutil
import signal
import sqlite3
import subprocess
import time
from dataclasses import dataclass
from pathlib import Path

import pytest

from tests.conftest import FIXTURES, ROOT

CORPUS = FIXTURES / "corpus"
KANPUR = CORPUS / "204-541.html"
PILAR = shutil.which("pilar")


@dataclass
class Run:
    code: int
    stdout: str
    stderr: str

    @property
    def first(self) -> str:
        """The first line of stderr (where errors and reports go)."""
        return (self.stderr.splitlines() or [""])[0]


def pilar(*args: str, cwd: Path, env: dict[str, str] | None = None) -> Run:
    """Run ``pilar ARGS`` with this tree on PYTHONPATH, no PILAR_* settings
    from the caller's environment, in ``cwd`` (so no stray ``.env`` is read)."""
    assert PILAR, "the pilar entry point is not installed (pip install -e .)"
    proc = subprocess.run([PILAR, *args], cwd=cwd, env=_env(env), capture_output=True, text=True)
    return Run(proc.returncode, proc.stdout, proc.stderr)


def _env(extra: dict[str, str] | None = None) -> dict[str, str]:
    """The environment ``pilar`` runs in: this tree on PYTHONPATH, offline
    models, 200 columns, no PILAR_* settings of the caller's but the session's
    exported models (PILAR_MODELS_DIR, conftest), then ``extra``."""
    env = {k: v for k, v in os.environ.items()
           if not k.startswith("PILAR_") or k == "PILAR_MODELS_DIR"}
    env.update(PYTHONPATH=str(ROOT), HF_HUB_OFFLINE="1", TRANSFORMERS_OFFLINE="1",
               COLUMNS="200")
    return env | (extra or {})


@pytest.fixture(scope="module")
def store(tmp_path_factory) -> Path:
    """A home with the Kanpur page ingested (read by the tests that search)."""
    home = tmp_path_factory.mktemp("cli-store")
    r = pilar("ingest", str(KANPUR), "--home", str(home), cwd=home)
    assert r.code == 0, r.stderr
    return home


# -- setting errors: one line naming the setting, exit code 2 ------------------------------
COMMANDS = [["ingest", str(KANPUR)], ["search", "kanpur"], ["docs"], ["stats"],
            ["delete", "abc"], ["migrate"]]


@pytest.mark.parametrize("command", COMMANDS, ids=lambda c: c[0])
def test_home_that_is_a_file_is_one_setting_error(tmp_path: Path, command):
    home = tmp_path / "file"
    home.write_text("not a folder")
    r = pilar(*command, cwd=tmp_path, env={"PILAR_HOME": str(home)})
    assert (r.code, r.stderr.splitlines()) == \
        (2, [f"error: PILAR_HOME='{home}': is a file, not a folder"])


def test_home_below_a_file_is_one_setting_error(tmp_path: Path):
    (tmp_path / "file").write_text("x")
    home = tmp_path / "file" / "store"
    for r in (pilar("docs", cwd=tmp_path, env={"PILAR_HOME": str(home)}),
              pilar("docs", "--home", str(home), cwd=tmp_path)):
        assert (r.code, r.stderr.splitlines()) == \
            (2, [f"error: PILAR_HOME='{home}': {tmp_path / 'file'} is a file, not a folder"])


def test_empty_home_setting_is_the_default_home(tmp_path: Path):
    r = pilar("docs", cwd=tmp_path, env={"PILAR_HOME": "", "XDG_DATA_HOME": str(tmp_path / "xdg")})
    assert (r.code, r.stderr.splitlines()) == \
        (1, [f"error: no store at {tmp_path / 'xdg' / 'pilar'} (PILAR_HOME or --home): "
             "add documents with `pilar ingest PATH`"])


def test_unloadable_embedding_model_is_one_setting_error(store: Path, tmp_path: Path):
    empty = tmp_path / "empty-model"           # a folder, but no model in it
    empty.mkdir()
    r = pilar("search", "kanpur", "--home", str(store), cwd=tmp_path,
              env={"PILAR_EMBEDDING_MODEL": str(empty)})
    assert r.code == 2, r.stderr
    assert r.first.startswith(f"error: PILAR_EMBEDDING_MODEL='{empty}': cannot load the model (")
    assert len(r.stderr.splitlines()) == 1, r.stderr
    missing = tmp_path / "no-such-model"
    r = pilar("ingest", str(CORPUS / "204-865.html"), "--home", str(store), cwd=tmp_path,
              env={"PILAR_EMBEDDING_MODEL": str(missing)})
    assert (r.code, r.stderr.splitlines()) == \
        (2, [f"error: PILAR_EMBEDDING_MODEL='{missing}': no such model folder"])


def test_unloadable_reranker_is_one_setting_error(store: Path, tmp_path: Path):
    missing = tmp_path / "no-such-reranker"
    r = pilar("search", "kanpur", "--home", str(store), cwd=tmp_path,
              env={"PILAR_RERANKER_MODEL": str(missing)})
    assert (r.code, r.stderr.splitlines()) == \
        (2, [f"error: PILAR_RERANKER_MODEL='{missing}': no such model folder"])


@pytest.mark.parametrize("name, value, message", [
    ("PILAR_BM25_WEIGHT", "-3", "Input should be greater than or equal to 0"),
    ("PILAR_TOP_K", "0", "Input should be greater than or equal to 1"),
    ("PILAR_GATE", "2", "Input should be less than or equal to 1"),
    ("PILAR_READER_IMAGE_PATCH", "0", "Input should be greater than or equal to 1"),
    ("PILAR_READER_TIMEOUT", "-5", "Input should be greater than 0"),
    ("PILAR_API_MAX_BODY_BYTES", "-1", "Input should be greater than or equal to 1"),
    ("PILAR_API_MAX_UPLOAD_FILES", "0", "Input should be greater than or equal to 1"),
])
def test_out_of_range_setting_is_one_error(tmp_path: Path, name, value, message):
    r = pilar("search", "kanpur", "--home", str(tmp_path), cwd=tmp_path, env={name: value})
    assert (r.code, r.stderr.splitlines()) == (2, [f"error: {name}='{value}': {message}"])


def test_every_numeric_setting_has_a_lower_bound():
    import annotated_types

    from pilar.config import Settings

    unbounded = [name for name, f in Settings.model_fields.items()
                 if f.annotation in (int, float, int | None, float | None)
                 and not any(isinstance(m, (annotated_types.Ge, annotated_types.Gt))
                             for m in f.metadata)]
    assert unbounded == []


# -- quiet, honest output ---------------------------------------------------------------------
def test_search_is_quiet_on_stderr_and_echoes_a_clipped_question(store: Path, tmp_path: Path):
    question = "what is the tallest building in kanpur? " * 8
    r = pilar("search", question, "--home", str(store), cwd=tmp_path)
    assert r.code == 0, r.stderr
    assert r.stderr == ""                     # no nanobind leak report at exit
    flat = " ".join(question.split())
    assert r.stdout.splitlines()[0].strip() == \
        f"pages for: {flat[:80]}... ({len(flat):,} characters)"
    assert "Kanpur" in r.stdout


def test_control_characters_in_a_question_are_echoed_escaped(store: Path, tmp_path: Path):
    r = pilar("search", "kanpur \x1b[31m tallest\u202e", "--home", str(store), cwd=tmp_path)
    assert r.code == 0, r.stderr
    assert r.stdout.splitlines()[0].strip() == "pages for: kanpur \\x1b[31m tallest\\u202e"
    assert "\x1b" not in r.stdout and "\u202e" not in r.stdout


def test_an_empty_document_id_is_a_bad_argument(store: Path, tmp_path: Path):
    r = pilar("delete", " ", "--home", str(store), cwd=tmp_path)
    assert (r.code, r.stderr.splitlines()) == \
        (2, ["error: the document id is empty (see `pilar docs`)"])


def test_overlong_question_is_refused(store: Path, tmp_path: Path):
    r = pilar("search", "x" * 5000, "--home", str(store), cwd=tmp_path)
    assert (r.code, r.first) == (2, "error: the question is 5,000 characters, over the "
                                    "4,000-character limit (PILAR_MAX_QUERY_CHARS)")
    assert r.stdout == ""


def test_file_size_limit_is_worded_in_human_sizes(tmp_path: Path):
    size = KANPUR.stat().st_size
    r = pilar("ingest", str(KANPUR), "--home", str(tmp_path / "h"), cwd=tmp_path,
              env={"PILAR_MAX_FILE_BYTES": "100"})
    assert r.code == 1
    assert r.first == (f"failed {KANPUR}: file is {size / 1024:.0f} KiB, over the 100 B limit "
                       "(PILAR_MAX_FILE_BYTES)")


def test_folder_files_that_are_not_documents_are_counted_and_listed(tmp_path: Path):
    folder = tmp_path / "docs"
    folder.mkdir()
    shutil.copy(KANPUR, folder / "kanpur.html")
    (folder / "notes.md").write_text("# notes")
    (folder / ".draft.html").write_bytes(KANPUR.read_bytes())
    home = tmp_path / "h"
    r = pilar("ingest", str(folder), "--verbose", "--home", str(home), cwd=tmp_path)
    assert r.code == 0, r.stderr
    lines = r.stderr.splitlines()
    assert lines[:2] == [f"skipped {folder / '.draft.html'}: hidden",
                         f"skipped {folder / 'notes.md'}: not a document (.md)"]
    assert lines[-1].startswith("1 ingested, 0 replaced, 0 unchanged, 0 new source, 0 failed, "
                                "2 skipped (1 pages, ")
    assert lines[-1].endswith(f" in {home}")
    quiet = pilar("ingest", str(folder), "--home", str(home), cwd=tmp_path)
    assert quiet.code == 0
    assert quiet.stderr.splitlines()[-2:] == [
        "skipped 2 files in folders: 1 hidden, 1 not a document (.md); --verbose lists them",
        f"0 ingested, 0 replaced, 1 unchanged, 0 new source, 0 failed, 2 skipped (0 pages, "
        f"0 units, 0 assertions, 0 entity records) in {home}"]


def test_empty_files_and_broken_links_each_get_their_own_reason(tmp_path: Path):
    folder = tmp_path / "docs"
    folder.mkdir()
    (folder / "a.pdf").write_bytes(b"")
    (folder / "b.html").write_bytes(b"")
    (folder / "c.pdf").symlink_to(tmp_path / "gone.pdf")
    home = tmp_path / "h"
    r = pilar("ingest", str(folder), "--verbose", "--home", str(home), cwd=tmp_path)
    assert (r.code, r.stderr.splitlines()) == (1, [
        f"skipped {folder / 'c.pdf'}: broken symbolic link",
        f"failed {folder / 'a.pdf'}: empty file",
        f"failed {folder / 'b.html'}: empty file",
        f"0 ingested, 0 replaced, 0 unchanged, 0 new source, 2 failed, 1 skipped (0 pages, "
        f"0 units, 0 assertions, 0 entity records) in {home}"])


def test_copy_at_a_new_path_is_recorded_as_another_source(store: Path, tmp_path: Path):
    home = tmp_path / "h"
    shutil.copytree(store, home)
    copy = tmp_path / "copy of kanpur.html"
    shutil.copy(KANPUR, copy)
    r = pilar("ingest", str(copy), "--home", str(home), cwd=tmp_path)
    assert r.code == 0, r.stderr
    docs = json.loads(pilar("docs", "--json", "--home", str(home), cwd=tmp_path).stdout)
    assert r.first == (f"new source {copy}: same bytes as {KANPUR} (document "
                       f"{docs[0]['doc_id']}); both paths recorded")
    assert [d["sources"] for d in docs] == [[str(KANPUR), str(copy.resolve())]]
    again = pilar("ingest", str(copy), "--home", str(home), cwd=tmp_path)
    assert again.stderr.splitlines()[-1].startswith("0 ingested, 0 replaced, 1 unchanged, ")


def test_the_same_bytes_in_another_collection_are_its_own_document(store: Path, tmp_path: Path):
    home = tmp_path / "h"
    shutil.copytree(store, home)
    r = pilar("ingest", str(KANPUR), "--collection", "team-a", "--home", str(home), cwd=tmp_path)
    assert r.code == 0 and r.stderr.splitlines()[-1].startswith(
        "1 ingested, 0 replaced, 0 unchanged, 0 new source, "), r.stderr
    docs = json.loads(pilar("docs", "--json", "--home", str(home), cwd=tmp_path).stdout)
    assert [(d["collection"], d["sources"]) for d in docs] == [
        ("default", [str(KANPUR)]), ("team-a", [str(KANPUR)])]
    assert docs[0]["doc_id"] != docs[1]["doc_id"]
    r = pilar("delete", docs[1]["doc_id"], "--home", str(home), cwd=tmp_path)
    left = json.loads(pilar("docs", "--json", "--home", str(home), cwd=tmp_path).stdout)
    assert (r.code, [d["doc_id"] for d in left]) == (0, [docs[0]["doc_id"]])


def test_docs_shows_whole_ids_and_paths_in_80_columns(store: Path, tmp_path: Path):
    [doc] = json.loads(pilar("docs", "--json", "--home", str(store), cwd=tmp_path).stdout)
    r = pilar("docs", "--home", str(store), cwd=tmp_path, env={"COLUMNS": "80"})
    assert (r.code, r.stdout.splitlines()[0].strip()) == (0, "1 document")
    assert max(len(line) for line in r.stdout.splitlines()) <= 80
    assert doc["doc_id"] in r.stdout
    assert str(KANPUR) in "".join(line.split("│")[-2].strip() for line in r.stdout.splitlines()
                                  if line.count("│") > 2)


# -- empty and missing stores -----------------------------------------------------------------
def test_search_on_an_empty_store_answers_at_once_and_fails(tmp_path: Path):
    assert pilar("migrate", "--home", str(tmp_path), cwd=tmp_path).code == 0
    message = "error: the store holds no documents: add some with `pilar ingest PATH`"
    r = pilar("search", "kanpur", "--home", str(tmp_path), cwd=tmp_path)
    assert (r.code, r.stderr.splitlines()) == (1, [message])
    j = pilar("search", "kanpur", "--json", "--home", str(tmp_path), cwd=tmp_path)
    assert (j.code, j.first) == (1, message)
    assert json.loads(j.stdout) == {"question": "kanpur", "pages": [], "packet": None,
                                    "error": message.removeprefix("error: ")}


def test_search_in_a_scope_without_documents_says_so_before_loading_a_model(store: Path,
                                                                           tmp_path: Path):
    # a folder that holds no model proves none is loaded: loading it is a setting error (exit 2)
    env = {"PILAR_EMBEDDING_MODEL": str(tmp_path)}
    r = pilar("search", "kanpur", "--collection", "nope", "--home", str(store), cwd=store, env=env)
    assert (r.code, r.stderr.splitlines()) == \
        (1, ["error: no documents in collection 'nope': list them with `pilar docs` or GET /v1/documents"])
    r = pilar("search", "kanpur", "--doc", "abc", "--doc", "def", "--json", "--home", str(store),
              cwd=store, env=env)
    message = "no document with ids 'abc', 'def': list them with `pilar docs` or GET /v1/documents"
    assert (r.code, r.first) == (1, f"error: {message}")
    assert json.loads(r.stdout)["error"] == message
    doc_id = json.loads(pilar("docs", "--json", "--home", str(store), cwd=store).stdout)[0]["doc_id"]
    r = pilar("search", "kanpur", "--doc", doc_id, "--collection", "default", "--home", str(store),
              cwd=store)
    assert r.code == 0 and "204-541" in r.stdout, r.stderr


@pytest.mark.parametrize("command", [["docs"], ["stats"], ["search", "kanpur"],
                                     ["delete", "abc"], ["ask", "kanpur"],
                                     ["eval", "questions.tsv"], ["cypher", "RETURN 1"]],
                         ids=lambda c: c[0])
def test_read_only_commands_do_not_create_a_store(tmp_path: Path, command):
    home = tmp_path / "nowhere"
    r = pilar(*command, "--home", str(home), cwd=tmp_path)
    assert (r.code, r.stderr.splitlines()) == \
        (1, [f"error: no store at {home} (PILAR_HOME or --home): "
             "add documents with `pilar ingest PATH`"])
    assert not home.exists()


def test_eval_on_an_empty_store_is_one_error_line(tmp_path: Path):
    assert pilar("migrate", "--home", str(tmp_path), cwd=tmp_path).code == 0
    r = pilar("eval", "questions.tsv", "--home", str(tmp_path), cwd=tmp_path)
    assert (r.code, r.stderr.splitlines()) == \
        (1, ["error: the store holds no documents: add some with `pilar ingest PATH`"])


def test_eval_report_path_is_checked_before_evaluating(store: Path, tmp_path: Path):
    (tmp_path / "file").write_text("x")
    report = tmp_path / "file" / "report.json"
    r = pilar("eval", str(ROOT / "no-such.tsv"), "--json", str(report), "--home", str(store),
              cwd=tmp_path)
    assert (r.code, r.stderr.splitlines(), r.stdout) == \
        (2, [f"error: --json {report}: {tmp_path / 'file'} is a file, not a folder"], "")


def test_ask_without_a_reader_says_so_before_loading_a_tokenizer(store: Path, tmp_path: Path):
    from pilar import Pilar
    from pilar.errors import ReaderNotConfiguredError

    home = tmp_path / "h"
    shutil.copytree(store, home)
    p = Pilar(home=home)
    with pytest.raises(ReaderNotConfiguredError):
        p.ask("what is the tallest building in kanpur?")
    assert "tokens" not in vars(p)            # the embedder's tokenizer was not loaded
    r = pilar("ask", "kanpur", "--home", str(home), cwd=tmp_path)
    assert (r.code, r.first) == (2, "error: no reader is configured: set PILAR_LLM_BASE_URL "
                                    "(or PILAR_READER_BASE_URL) to an OpenAI-compatible server")


def test_serve_on_a_port_in_use_is_one_error_line(tmp_path: Path):
    import socket

    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        r = pilar("serve", "--port", str(port), "--home", str(tmp_path), cwd=tmp_path)
    assert (r.code, r.stderr.splitlines()) == \
        (1, [f"error: cannot listen on 127.0.0.1:{port}: Address already in use"])
    bad = pilar("serve", "--port", "99999", "--home", str(tmp_path), cwd=tmp_path)
    assert (bad.code, bad.stderr.splitlines()[-1]) == \
        (2, "Error: Invalid value for '--port': Input should be less than or equal to 65535")
    host = pilar("serve", "--host", "no-such-host.invalid", "--home", str(tmp_path), cwd=tmp_path)
    assert host.code == 2 and host.first.startswith("error: --host no-such-host.invalid: ")


# -- version and help -----------------------------------------------------------------------
def test_version(tmp_path: Path):
    from pilar import __version__

    r = pilar("--version", cwd=tmp_path)
    assert (r.code, r.stdout.splitlines()) == (0, [f"pilar {__version__}"])


def test_search_help_shows_defaults_and_limits(tmp_path: Path):
    r = pilar("search", "--help", cwd=tmp_path)
    assert r.code == 0
    text = " ".join(r.stdout.split())
    assert ("--budget TOKENS packet token budget, 32 to PILAR_MAX_BUDGET (32768) "
            "[default: PILAR_BUDGET or 4500]") in text
    assert "--k N pages to rank, 1 to PILAR_MAX_K (100) [default: PILAR_TOP_K or 10]" in text
    assert "--collection NAME only documents of this collection" in text
    assert "<bool>" not in r.stdout and "<list[str]>" not in r.stdout


def test_ctrl_c_stops_an_ingest_with_one_line_and_keeps_whole_documents(tmp_path, wtq_pages):
    """Ctrl-C reaches the whole process group, parse workers too: the run
    ends with ``error: interrupted`` and exit 130, no worker traceback, and
    the documents written before it are whole (the store opens and lists them)."""
    files = sorted(str(f) for f in wtq_pages.glob("*.html"))[:60]
    # as a terminal starts it: SIGINT not ignored (a job started with `&` by a script, as CI may
    # be, passes SIG_IGN on to its children, and Python then never raises KeyboardInterrupt)
    proc = subprocess.Popen([PILAR, "ingest", *files, "--home", str(tmp_path), "--workers", "2"],
                            cwd=tmp_path, env=_env(), stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, start_new_session=True,
                            preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))
    db, written, deadline = tmp_path / "pilar.sqlite", 0, time.monotonic() + 300
    while not written and proc.poll() is None and time.monotonic() < deadline:
        time.sleep(0.5)
        if db.exists():
            with sqlite3.connect(f"file:{db}?mode=ro", uri=True) as conn:
                try:
                    written = conn.execute("SELECT count(*) FROM documents").fetchone()[0]
                except sqlite3.OperationalError:  # the schema is not there yet
                    pass
    assert proc.poll() is None, "the ingest ended before it could be interrupted"
    os.killpg(proc.pid, signal.SIGINT)
    _, stderr = proc.communicate(timeout=300)
    assert proc.returncode == 130, stderr
    assert stderr.strip().splitlines()[-1] == "error: interrupted"
    assert "Traceback" not in stderr and "KeyboardInterrupt" not in stderr
    listed = json.loads(pilar("docs", "--json", "--home", str(tmp_path), cwd=tmp_path).stdout)
    assert written <= len(listed) < len(files)
