"""The query encoder on ONNX Runtime (pilar.retrieval.query_encoder): the
real packaged MiniLM exported once, its vectors against sentence-transformers'
on real WTQ dev questions, its tokenizer against the transformers one, the
fallback, and a search in a fresh process that never imports torch."""

from __future__ import annotations

import csv
import json
import logging
import os
import random
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from lxml import html

from pilar import Pilar
from pilar.config import DEFAULT_EMBEDDING_MODEL
from pilar.ingest import parse
from pilar.retrieval import embeddings
from pilar.retrieval.embeddings import Embedder, VectorCache, page_vectors, resolve_model_path
from pilar.retrieval.query_encoder import (CountingTokenizer, ModelLayout, OnnxQueryEncoder,
                                           QueryEncoderError, drop_nan_guards)
from pilar.retrieval.unit_runs import UNIT_TOKENS
from tests.conftest import FIXTURES, ROOT

MIN_COSINE = 0.999


@pytest.fixture(scope="module")
def dev_questions(shared_data: Path) -> list[str]:
    """50 WTQ dev questions (fixed-seed sample)."""
    with open(shared_data / "wtq" / "dev" / "questions.tsv", encoding="utf-8") as f:
        rows = [r["question"] for r in csv.DictReader(f, delimiter="\t")]
    return random.Random(33).sample(rows, 50)


@pytest.fixture(scope="module")
def torch_embedder() -> Embedder:
    return Embedder()


@pytest.fixture(scope="module")
def layout() -> ModelLayout:
    return ModelLayout.read(resolve_model_path(DEFAULT_EMBEDDING_MODEL))


def test_layout_of_the_packaged_model(layout: ModelLayout):
    assert (layout.max_seq_length, layout.pooling) == (256, "mean")
    assert layout.tokenizer_file.name == "tokenizer.json"


def test_onnx_query_vectors_match_sentence_transformers(dev_questions, torch_embedder,
                                                        models_dir: Path):
    onnx = Embedder(onnx_dir=models_dir)
    assert onnx.query_encoder is not None  # not a silent fallback
    ours = np.stack([onnx.query(q) for q in dev_questions])
    theirs = np.stack([torch_embedder.query(q) for q in dev_questions])
    assert ours.shape == theirs.shape == (50, 384) and ours.dtype == np.float32
    cosines = (ours * theirs).sum(axis=1) / (np.linalg.norm(ours, axis=1)
                                             * np.linalg.norm(theirs, axis=1))
    assert cosines.min() >= MIN_COSINE, cosines.min()
    np.testing.assert_allclose(np.linalg.norm(ours, axis=1), 1.0, atol=1e-5)
    # a primed (padded) batch gives the vectors of one question at a time
    primed = Embedder(onnx_dir=models_dir, batch_size=16)
    primed.prime(dev_questions)
    batched = np.stack([primed._queries[q] for q in dev_questions])
    assert float((batched * ours).sum(axis=1).min()) >= 1 - 1e-5


def test_documents_embed_on_int8_weights_near_sentence_transformers(
        wtq_pages: Path, torch_embedder: Embedder, layout: ModelLayout, models_dir: Path,
        tmp_path: Path, monkeypatch):
    Embedder(onnx_dir=models_dir).query("which city?")  # the export, made once
    own = tmp_path / "models"
    own.mkdir()
    key = layout.key(DEFAULT_EMBEDDING_MODEL)
    shutil.copy(models_dir / f"{key}.onnx", own)
    docs = [parse(f) for f in sorted(wtq_pages.glob("*.html"))[:3]]
    cache = VectorCache(tmp_path / "vectors.sqlite")
    int8 = Embedder(onnx_dir=own, cache=cache)
    ours = page_vectors(int8, docs)
    assert int8.document_encoder(UNIT_TOKENS) is not None  # not a silent fallback
    assert (own / f"{key}-int8.onnx").is_file()
    theirs = page_vectors(torch_embedder, docs)
    a = np.concatenate([v for vecs, _ in ours for v in vecs])
    b = np.concatenate([v for vecs, _ in theirs for v in vecs])
    assert a.shape == b.shape and a.shape[0] > 50 and a.dtype == np.float32
    cosines = (a * b).sum(axis=1)
    assert cosines.mean() >= 0.99 and cosines.min() >= 0.98, (cosines.mean(), cosines.min())
    assert [ids for _, ids in ours] == [ids for _, ids in theirs]
    # the batches embedded at once (a thread per core) are those embedded one after another
    texts = [u.completed_text for d in docs for u in d.units][:200]
    enc = int8.document_encoder(UNIT_TOKENS)
    at_once = int8._encode_documents(texts, UNIT_TOKENS, enc)
    monkeypatch.setattr(embeddings, "EMBED_THREADS", 1)
    in_turn = int8._encode_documents(texts, UNIT_TOKENS, enc)
    assert at_once.shape == (len(texts), 384) and np.array_equal(at_once, in_turn)
    # the cache keeps int8 vectors apart: a float32 embedder sharing it embeds afresh
    fp32 = Embedder(onnx_dir=own, cache=cache, int8_documents=False)
    again = np.concatenate([v for vecs, _ in page_vectors(fp32, docs) for v in vecs])
    assert fp32.document_encoder(UNIT_TOKENS) is None
    assert float((again * b).sum(axis=1).min()) >= 1 - 1e-5


def test_export_is_keyed_by_model_and_version(layout: ModelLayout, tmp_path: Path,
                                              models_dir: Path):
    Embedder(onnx_dir=models_dir).query("which city?")
    key = layout.key(DEFAULT_EMBEDDING_MODEL)
    # beside it, once a test has embedded documents, its int8 copy
    names = {p.name for p in models_dir.iterdir()}
    assert f"{key}.onnx" in names and names <= {f"{key}.onnx", f"{key}-int8.onnx"}
    assert key.startswith(f"{DEFAULT_EMBEDDING_MODEL}-")
    assert ModelLayout.read(layout.transformer).key(DEFAULT_EMBEDDING_MODEL) == key
    # another version of the model (one file changed) is another file
    other = tmp_path / "minilm"
    shutil.copytree(layout.transformer, other,
                    copy_function=lambda src, dst: os.symlink(src, dst))
    (other / "config.json").unlink()
    shutil.copy(layout.transformer / "config.json", other / "config.json")
    with open(other / "config.json", "a") as f:
        f.write("\n")
    assert ModelLayout.read(other).key(DEFAULT_EMBEDDING_MODEL) != key


def test_export_has_no_nan_guards_and_the_same_outputs(tmp_path: Path, models_dir: Path,
                                                      layout: ModelLayout):
    """The export drops the exporter's Where(IsNaN(softmax)) guards: the
    file holds none, and putting them back changes no output bit on a padded
    batch (rows of 3 to 40 tokens)."""
    import onnx
    from onnx import helper

    enc = Embedder(onnx_dir=models_dir).query_encoder
    model = onnx.load(str(enc.path))
    assert "IsNaN" not in {n.op_type for n in model.graph.node}
    # put a guard back after every softmax
    nodes, guarded = [], 0
    zero = helper.make_tensor("guard_zero", onnx.TensorProto.FLOAT, [], [0.0])
    model.graph.initializer.append(zero)
    for n in model.graph.node:
        nodes.append(n)
        if n.op_type == "Softmax":
            out = n.output[0]
            n.output[0] = f"{out}_raw"
            nodes += [helper.make_node("IsNaN", [f"{out}_raw"], [f"{out}_nan"]),
                      helper.make_node("Where", [f"{out}_nan", "guard_zero", f"{out}_raw"],
                                       [out])]
            guarded += 1
    del model.graph.node[:]
    model.graph.node.extend(nodes)
    path = tmp_path / "guarded.onnx"
    onnx.save(model, str(path))
    assert guarded == 6 and drop_nan_guards(path) == 6 and drop_nan_guards(path) == 0
    onnx.save(model, str(path))
    texts = ["a", "which city hosted the games?", " ".join(["word"] * 38)]
    ours = OnnxQueryEncoder(layout, enc.path).encode(texts)
    assert np.array_equal(ours, OnnxQueryEncoder(layout, path).encode(texts))


def test_counting_tokenizer_matches_the_transformers_tokenizer(layout, torch_embedder,
                                                                wtq_pages: Path):
    texts = []
    for page in sorted(wtq_pages.glob("*.html"))[:40]:
        body = html.fromstring(page.read_bytes()).text_content()
        texts += [" ".join(body.split()[i:i + 300]) for i in range(0, 1200, 300)]
    texts = [t for t in texts if t] + ["Ünïcode — “quotes” 東京 x" * 3, "  spaced  out  "]
    ours = CountingTokenizer(layout)
    theirs = torch_embedder.model.tokenizer
    kw = dict(add_special_tokens=False, truncation=False, verbose=False)
    mine, ref = ours(texts, **kw), theirs(texts, **kw)
    assert mine["input_ids"] == ref["input_ids"]
    assert max(len(ids) for ids in mine["input_ids"]) > 256  # long texts, not truncated
    one = ours(texts[0], return_offsets_mapping=True, **kw)
    assert [list(o) for o in one["offset_mapping"]] == \
        [list(o) for o in theirs(texts[0], return_offsets_mapping=True, **kw)["offset_mapping"]]
    with pytest.raises(ValueError):
        ours(texts[0], truncation=True)


def test_a_model_the_encoder_cannot_run_is_refused(tmp_path: Path, layout: ModelLayout):
    with pytest.raises(QueryEncoderError, match="not a local model folder"):
        ModelLayout.read(tmp_path / "missing")
    shutil.copytree(layout.transformer, tmp_path / "dense",
                    copy_function=lambda src, dst: os.symlink(src, dst))
    modules = json.loads((layout.transformer / "modules.json").read_text())
    modules.append({"idx": 3, "name": "3", "path": "3_Dense",
                    "type": "sentence_transformers.models.Dense"})
    (tmp_path / "dense" / "modules.json").unlink()
    (tmp_path / "dense" / "modules.json").write_text(json.dumps(modules))
    with pytest.raises(QueryEncoderError, match="Dense"):
        ModelLayout.read(tmp_path / "dense")


def test_export_failure_falls_back_with_one_warning(tmp_path: Path, torch_embedder, caplog):
    blocked = tmp_path / "not-a-folder"
    blocked.write_text("")
    embedder = Embedder(onnx_dir=blocked)
    with caplog.at_level(logging.WARNING, logger="pilar"):
        vecs = [embedder.query(q) for q in ("which city?", "how many goals?")]
    assert embedder.query_encoder is None
    warnings = [r for r in caplog.records if r.levelno >= logging.WARNING]
    assert len(warnings) == 1 and warnings[0].exc_info is None
    assert warnings[0].getMessage().startswith("query encoder: ONNX Runtime not used")
    assert float(vecs[0] @ torch_embedder.query("which city?")) > 1 - 1e-6
    assert not list(tmp_path.glob("**/*.partial"))


@pytest.fixture(scope="module")
def searched_home(tmp_path_factory, models_dir: Path) -> Path:
    """A store of one page, searched once (the query encoder exported)."""
    home = tmp_path_factory.mktemp("no-torch") / "home"
    p = Pilar(home=home)
    (r,) = p.ingest([FIXTURES / "corpus" / "204-903.html"])
    assert r.status == "ingested"
    p.search("who won the race?")  # exports the query encoder if the session has not yet
    assert list(models_dir.glob("*.onnx"))
    p.close()
    return home


TORCH_LOADED = ("sorted(m for m in sys.modules if m == 'torch' or m.startswith('torch.'))")

FACES = {
    "python": ("from pilar import Pilar\n"
               "p = Pilar(home=HOME, create=False)\n"
               "r = p.search('who won the race?')\n"
               "out = {'pages': len(r.pages), 'items': len(r.packet.items)}\n"),
    "cli": ("import contextlib, io, runpy\n"
            "sys.argv = ['pilar', 'search', 'who won the race?', '--json', '--home', HOME]\n"
            "buf = io.StringIO()\n"
            "with contextlib.redirect_stdout(buf):\n"
            "    try:\n"
            "        runpy.run_module('pilar', run_name='__main__')\n"
            "    except SystemExit as e:\n"
            "        assert not e.code, e.code\n"
            "r = json.loads(buf.getvalue())\n"
            "out = {'pages': len(r['pages']), 'items': len(r['packet']['items'])}\n"),
    "server": ("from fastapi.testclient import TestClient\n"
               "from pilar import Pilar\n"
               "from pilar.api import create_app\n"
               "with TestClient(create_app(Pilar(home=HOME, create=False))) as c:\n"
               "    while c.get('/readyz').status_code != 200:\n"
               "        time.sleep(0.1)\n"
               "    r = c.post('/v1/search', json={'query': 'who won the race?'}).json()\n"
               "out = {'pages': len(r['pages']), 'items': len(r['packet']['items'])}\n"),
}


@pytest.mark.parametrize("face", list(FACES))
def test_search_in_a_fresh_process_does_not_import_torch(searched_home: Path, models_dir: Path,
                                                         face: str):
    """``Pilar.search``, ``pilar search`` and ``POST /v1/search`` (the app a
    server process runs, model loading at start-up included) in a fresh
    process: the packet is built and torch never imported."""
    script = (f"import json, sys, time\nHOME = {str(searched_home)!r}\n" + FACES[face]
              + f"out['torch'] = {TORCH_LOADED}\nprint(json.dumps(out))\n")
    env = {**os.environ, "PYTHONPATH": str(ROOT), "HF_HUB_OFFLINE": "1",
           "TRANSFORMERS_OFFLINE": "1", "PILAR_MODELS_DIR": str(models_dir),
           "PILAR_API_INGEST_WORKER": "false", "PILAR_API_KEYS": ""}
    env.pop("PILAR_QUERY_ENCODER", None)
    proc = subprocess.run([sys.executable, "-c", script], env=env, capture_output=True,
                          text=True, cwd=searched_home.parent, timeout=300)
    assert proc.returncode == 0, proc.stderr[-3000:]
    out = json.loads(proc.stdout.splitlines()[-1])
    assert out["pages"] == 1 and out["items"] >= 1
    assert out["torch"] == []


def test_long_texts_are_embedded_fewer_to_a_batch(models_dir: Path, wtq_pages: Path):
    """A batch holds the tokens of :attr:`Embedder.batch_size` unit runs: text
    windows cut at the model's 256 tokens go 8 to a batch, unit runs cut at
    64 go 32 (ONNX Runtime's arena keeps the largest batch's activations)."""
    embedder = Embedder(onnx_dir=models_dir)
    page = parse(sorted(wtq_pages.glob("*.html"))[0])
    windows = embedder.chunk(page.pages[0].text * 8)
    assert len(windows) >= 12
    sizes: dict[int, list[int]] = {}
    for cut in (UNIT_TOKENS, None):
        enc = embedder.document_encoder(cut)
        real = enc.encode
        seen = sizes.setdefault(enc.layout.max_seq_length, [])

        def counted(texts, real=real, seen=seen):
            seen.append(len(texts))
            return real(texts)

        enc.encode = counted
        try:
            vectors = embedder._encode_documents(windows * 4, cut, enc)
        finally:
            del enc.encode
        assert vectors.shape == (len(windows) * 4, 384)
    assert max(sizes[256]) == 8 and sum(sizes[256]) == len(windows) * 4
    assert max(sizes[UNIT_TOKENS]) == 32 and sum(sizes[UNIT_TOKENS]) == len(windows) * 4
