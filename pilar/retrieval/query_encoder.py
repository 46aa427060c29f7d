"""Query vectors on ONNX Runtime, without PyTorch at query time.

The embedder's sentence-transformers model is exported once with
``torch.onnx.export`` (its transformer only) into ``PILAR_HOME/models/``;
after that a process embeds questions with ONNX Runtime (one thread per
call), tokenises them with the model's fast tokenizer (the ``tokenizers``
library) and pools and normalises as sentence-transformers does for that
model, read from the model folder (``modules.json``, the pooling config,
``sentence_bert_config.json``). The vectors are the sentence-transformers
ones to float precision (cosine >= 0.999, ``tests/test_query_encoder.py``),
so a store ingested with sentence-transformers needs no re-ingest. Nothing
here imports torch except :func:`export`.
"""

from __future__ import annotations

import contextlib
import hashlib
import io
import json
import logging
import os
import re
import warnings
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from pilar.errors import PilarError

EXPORT_FORMAT = 1
"""Version of what :func:`export` writes (part of the file's key: a change
of inputs, outputs or opset gets a file of its own)."""
_POOLINGS = {"mean": "pooling_mode_mean_tokens", "cls": "pooling_mode_cls_token",
             "max": "pooling_mode_max_tokens"}
"""Poolings :class:`OnnxQueryEncoder` does, by the flag of sentence-transformers'
Pooling config that selects each (exactly one flag may be set)."""
_TRANSFORMER = "sentence_transformers.models.Transformer"
_POOLING = "sentence_transformers.models.Pooling"
_NORMALIZE = "sentence_transformers.models.Normalize"


class QueryEncoderError(PilarError):
    """The ONNX query encoder cannot be used for this model (no local
    folder, a module sentence-transformers would run that it does not,
    onnxruntime missing, the export failed). ``str(err)`` is one line."""


@dataclass(frozen=True)
class ModelLayout:
    """What sentence-transformers does with a model folder, read from its
    files: the transformer's folder, ``max_seq_length`` (tokens, special
    tokens included), the pooling (``mean``, ``cls`` or ``max``) and the
    tokenizer file."""

    transformer: Path
    max_seq_length: int
    pooling: str
    tokenizer_file: Path

    @classmethod
    def read(cls, folder: str | os.PathLike) -> "ModelLayout":
        """The layout of the sentence-transformers folder ``folder``.

        Raises :class:`QueryEncoderError` when ``folder`` is not a local
        folder, its modules are other than Transformer, Pooling and an
        optional Normalize (a Dense layer, say), its pooling is not one of
        mean, CLS or max, or it has no ``tokenizer.json``."""
        root = Path(folder)
        if not root.is_dir():
            raise QueryEncoderError(f"{folder!s} is not a local model folder")
        try:
            modules = json.loads((root / "modules.json").read_text())
        except (OSError, ValueError) as exc:
            raise QueryEncoderError(f"{root}: no readable modules.json ({exc})") from None
        types = [m.get("type") for m in modules]
        if types not in ([_TRANSFORMER, _POOLING], [_TRANSFORMER, _POOLING, _NORMALIZE]):
            raise QueryEncoderError(f"{root}: modules {types} are not Transformer, Pooling "
                                    "and an optional Normalize")
        transformer = root / modules[0].get("path", "")
        try:
            st_config = json.loads((transformer / "sentence_bert_config.json").read_text())
            pool_config = json.loads((root / modules[1]["path"] / "config.json").read_text())
        except (OSError, ValueError, KeyError) as exc:
            raise QueryEncoderError(f"{root}: unreadable module config ({exc})") from None
        on = [k for k, v in pool_config.items() if k.startswith("pooling_mode_") and v]
        modes = [mode for mode, flag in _POOLINGS.items() if on == [flag]]
        if not modes:
            raise QueryEncoderError(f"{root}: pooling {on} is not one of {', '.join(_POOLINGS)}")
        tokenizer_file = transformer / "tokenizer.json"
        if not tokenizer_file.is_file():
            raise QueryEncoderError(f"{transformer}: no tokenizer.json (fast tokenizer)")
        if st_config.get("do_lower_case") or not st_config.get("max_seq_length"):
            raise QueryEncoderError(f"{transformer}: sentence_bert_config.json without "
                                    "max_seq_length, or with do_lower_case (not supported)")
        return cls(transformer, int(st_config["max_seq_length"]), modes[0], tokenizer_file)

    def key(self, name: str) -> str:
        """The export's file stem for the model called ``name``: ``name``
        made file-safe, then a 64-bit digest of :data:`EXPORT_FORMAT`, the
        layout and the transformer folder's files (relative path, size,
        modification time), so another model, or another version of the
        same package, gets a file of its own."""
        h = hashlib.blake2b(f"{EXPORT_FORMAT}\0{self.max_seq_length}\0{self.pooling}".encode(),
                            digest_size=8)
        for f in sorted(p for p in self.transformer.rglob("*") if p.is_file()):
            st = f.stat()
            h.update(f"\0{f.relative_to(self.transformer)}\0{st.st_size}\0{st.st_mtime_ns}"
                     .encode())
        slug = re.sub(r"[^A-Za-z0-9._-]+", "-", Path(name).name or name).strip("-.") or "model"
        return f"{slug}-{h.hexdigest()}"


def fast_tokenizer(layout: ModelLayout):
    """The model's ``tokenizers.Tokenizer`` without padding or truncation."""
    from tokenizers import Tokenizer

    tok = Tokenizer.from_file(str(layout.tokenizer_file))
    tok.no_padding()
    tok.no_truncation()
    return tok


class CountingTokenizer:
    """The model's fast tokenizer behind the part of the Hugging Face
    tokenizer call that :class:`~pilar.packing.tokens.TokenCounter` uses,
    without transformers (which imports torch): ``tok(text or texts,
    add_special_tokens=False, truncation=False, verbose=False,
    return_offsets_mapping=...)`` -> ``{"input_ids": ..., "offset_mapping":
    ...}`` (lists, per text for a list; offsets in characters). The same
    ids as the transformers tokenizer of the same ``tokenizer.json``.
    Thread-safe (its settings never change after construction)."""

    def __init__(self, layout: ModelLayout):
        self._tok = fast_tokenizer(layout)

    @property
    def backend_tokenizer(self):
        """The ``tokenizers.Tokenizer`` behind the call (as on a Hugging Face
        fast tokenizer)."""
        return self._tok

    def __call__(self, text: str | list[str], add_special_tokens: bool = True,
                 truncation: bool = False, verbose: bool = True,
                 return_offsets_mapping: bool = False) -> dict:
        """Raises ``ValueError`` for ``truncation`` (not offered)."""
        if truncation:
            raise ValueError("CountingTokenizer does not truncate")
        one = isinstance(text, str)
        encs = self._tok.encode_batch([text] if one else list(text),
                                      add_special_tokens=add_special_tokens)
        out = {"input_ids": [e.ids for e in encs]}
        if return_offsets_mapping:
            out["offset_mapping"] = [e.offsets for e in encs]
        return {k: v[0] for k, v in out.items()} if one else out


def export(module, layout: ModelLayout, target: Path) -> None:
    """Write the transformer ``module`` (a Hugging Face model, e.g.
    ``SentenceTransformer[0].auto_model``; torch) to ``target`` as one ONNX
    file with inputs ``input_ids``, ``attention_mask``, ``token_type_ids``
    (int64, ``(batch, seq)``, both dynamic) and output ``last_hidden_state``
    (float32, ``(batch, seq, dim)``). Atomic: written beside ``target`` and
    renamed, so a reader never sees half a file and two processes exporting
    at once leave one whole file. The exporter's console output, warnings
    and log records below ERROR are swallowed. Raises whatever the exporter
    raises, or ``OSError``."""
    import torch

    class Hidden(torch.nn.Module):
        def __init__(self, model):
            super().__init__()
            self.model = model

        def forward(self, input_ids, attention_mask, token_type_ids):
            return self.model(input_ids=input_ids, attention_mask=attention_mask,
                              token_type_ids=token_type_ids).last_hidden_state

    # two rows, one padded: the traced graph keeps the attention mask
    ids = torch.tensor([[101, 2023, 2003, 1037, 102], [101, 2023, 102, 0, 0]])
    mask = (ids != 0).long()
    batch, seq = torch.export.Dim("batch", max=4096), torch.export.Dim("seq", max=4096)
    names = ["input_ids", "attention_mask", "token_type_ids"]
    target.parent.mkdir(parents=True, exist_ok=True)
    partial = target.with_name(f".{target.name}.{os.getpid()}.partial")
    was_training = module.training
    module.eval()
    onnx_log = logging.getLogger("torch.onnx")
    level = onnx_log.level
    onnx_log.setLevel(logging.ERROR)
    try:
        with torch.no_grad(), warnings.catch_warnings(), \
                contextlib.redirect_stdout(io.StringIO()):
            warnings.simplefilter("ignore")
            torch.onnx.export(Hidden(module), (ids, mask, torch.zeros_like(ids)),
                              str(partial), input_names=names, output_names=["last_hidden_state"],
                              dynamic_shapes={n: {0: batch, 1: seq} for n in names},
                              dynamo=True, external_data=False, verbose=False)
        drop_nan_guards(partial)
        os.replace(partial, target)
    finally:
        onnx_log.setLevel(level)
        module.train(was_training)
        partial.unlink(missing_ok=True)


def drop_nan_guards(path: Path) -> int:
    """Rewrite the ONNX file ``path`` without the guards the exporter puts
    after each attention softmax, ``Where(IsNaN(p), 0, p)``: ``p`` is NaN
    only in a row whose every key is masked, and every text the encoder
    feeds keeps its ``[CLS]`` and ``[SEP]`` unmasked. Outputs are bit for
    bit the same (fp32 and int8, padded batches), about 7% less CPU per
    int8 batch of 32 unit texts of 64 tokens. Returns the guards dropped."""
    import onnx

    model = onnx.load(str(path))
    nodes = model.graph.node
    made_by = {out: n for n in nodes for out in n.output}
    dropped: set[int] = set()
    same: dict[str, str] = {}  # a guard's output -> the softmax output it passed on
    for n in nodes:
        test = made_by.get(n.input[0]) if n.op_type == "Where" else None
        if test is not None and test.op_type == "IsNaN" and test.input[0] == n.input[2] \
                and made_by.get(n.input[2]) is not None \
                and made_by[n.input[2]].op_type == "Softmax":
            same[n.output[0]] = n.input[2]
            dropped.update((id(n), id(test)))
    if not same or any(o.name in same for o in model.graph.output):
        return 0
    kept = [n for n in nodes if id(n) not in dropped]
    for n in kept:
        for i, name in enumerate(n.input):
            n.input[i] = same.get(name, name)
    del nodes[:]
    nodes.extend(kept)
    onnx.save(model, str(path))
    return len(same)


def quantize(source: Path, target: Path) -> None:
    """Write to ``target`` the export ``source`` (:func:`export`) with int8
    weights in its matrix products (onnxruntime's dynamic quantisation, one
    scale per output channel; activations quantised per batch at run time):
    about 2.2x less CPU per batch of unit texts than float32, vectors at
    cosine 0.993 on average (min 0.987) to float32's (604 runs of the units
    of 30 dev pages, 64 tokens). Atomic as :func:`export`. Raises whatever
    the quantiser raises, or ``OSError``."""
    from onnxruntime.quantization import QuantType, quantize_dynamic

    partial = target.with_name(f".{target.name}.{os.getpid()}.partial")
    quant_log = logging.getLogger()
    level = quant_log.level
    quant_log.setLevel(logging.ERROR)  # its advice to pre-process the model first
    try:
        quantize_dynamic(str(source), str(partial), weight_type=QuantType.QInt8,
                         per_channel=True, op_types_to_quantize=["MatMul"])
        os.replace(partial, target)
    finally:
        quant_log.setLevel(level)
        partial.unlink(missing_ok=True)


class OnnxQueryEncoder:
    """Embeds texts into L2-normalised float32 vectors ``(n, dim)`` with the
    ONNX export at ``path`` of the model of ``layout``: tokenised by the
    fast tokenizer (truncated at ``max_seq_length`` tokens), pooled as the
    model's Pooling module says (mean over the attention mask, CLS, or max).
    One intra-op and one inter-op thread per session: a call runs on the
    calling thread, so concurrent requests do not oversubscribe the cores.
    Thread-safe.

    ``session``, when given, is an open session of the same file to use
    (the cut is the tokenizer's, not the session's).

    Raises :class:`QueryEncoderError` when onnxruntime is not installed or
    the file does not load."""

    def __init__(self, layout: ModelLayout, path: Path, session=None):
        try:
            import onnxruntime as ort
        except ImportError:
            raise QueryEncoderError("onnxruntime is not installed") from None
        self.layout = layout
        self.path = path
        self.session = session if session is not None else self._open(ort, path)
        self._inputs = {i.name for i in self.session.get_inputs()}
        self._tok = fast_tokenizer(layout)
        self._tok.enable_truncation(layout.max_seq_length)

    @staticmethod
    def _open(ort, path: Path):
        """A session of ``path``: one intra-op and one inter-op thread."""
        opts = ort.SessionOptions()
        opts.intra_op_num_threads = 1
        opts.inter_op_num_threads = 1
        opts.execution_mode = ort.ExecutionMode.ORT_SEQUENTIAL
        opts.log_severity_level = 3
        try:
            return ort.InferenceSession(str(path), opts, providers=["CPUExecutionProvider"])
        except Exception as exc:  # noqa: BLE001 - onnxruntime raises its own kinds
            first = (str(exc).strip().splitlines() or [type(exc).__name__])[0]
            raise QueryEncoderError(f"{path}: cannot load ({first})") from None

    def encode(self, texts: list[str]) -> np.ndarray:
        """``(len(texts), dim)`` float32, L2-normalised; ``(0, 0)`` for no texts.
        A batch is padded to its longest text (the padding is masked out)."""
        if not texts:
            return np.zeros((0, 0), dtype=np.float32)
        # one question (a search) is encoded without the batch call's thread pool
        encs = [self._tok.encode(texts[0])] if len(texts) == 1 else \
            self._tok.encode_batch(list(texts))
        width = max(len(e.ids) for e in encs)
        ids = np.zeros((len(encs), width), dtype=np.int64)
        mask = np.zeros_like(ids)
        types = np.zeros_like(ids)
        for row, e in enumerate(encs):
            n = len(e.ids)
            ids[row, :n], mask[row, :n], types[row, :n] = e.ids, e.attention_mask, e.type_ids
        feed = {"input_ids": ids, "attention_mask": mask, "token_type_ids": types}
        (hidden,) = self.session.run(None, {k: v for k, v in feed.items() if k in self._inputs})
        vecs = self._pool(hidden, mask)
        norms = np.linalg.norm(vecs, axis=1, keepdims=True)
        return (vecs / np.maximum(norms, 1e-12)).astype(np.float32, copy=False)

    def _pool(self, hidden: np.ndarray, mask: np.ndarray) -> np.ndarray:
        """``(n, dim)`` from ``hidden`` ``(n, seq, dim)`` and ``mask`` ``(n, seq)``,
        as sentence-transformers' Pooling (its 1e-9 floor on the token count)."""
        if self.layout.pooling == "cls":
            return hidden[:, 0]
        m = mask[..., None].astype(hidden.dtype)
        if self.layout.pooling == "max":
            return np.where(m > 0, hidden, np.finfo(hidden.dtype).min).max(axis=1)
        return (hidden * m).sum(axis=1) / np.maximum(m.sum(axis=1), 1e-9)
