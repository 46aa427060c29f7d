"""Sizes worded for people at every scale, and settings checked for range."""

from __future__ import annotations

import pytest
from pydantic import ValidationError

from pilar.config import Settings
from pilar.ingest import parse
from pilar.ingest.limits import human_bytes, over_limit
from tests.conftest import FIXTURES


@pytest.mark.parametrize("n, text", [
    (0, "0 B"), (100, "100 B"), (1023, "1023 B"), (1024, "1 KiB"), (1536, "1.5 KiB"),
    (37_500, "37 KiB"), (1_048_575, "1 MiB"), (200 * 2**20, "200 MiB"),
    (int(2.3 * 2**30), "2.3 GiB"), (3 * 2**40, "3 TiB"),
])
def test_human_bytes(n, text):
    assert human_bytes(n) == text


def test_limit_message_adds_exact_bytes_when_sizes_read_the_same():
    assert str(over_limit("file", 19_000, 100, "PILAR_MAX_FILE_BYTES")) == \
        "file is 19 KiB, over the 100 B limit (PILAR_MAX_FILE_BYTES)"
    assert str(over_limit("file", 200 * 2**20 + 1, 200 * 2**20, "PILAR_MAX_FILE_BYTES")) == \
        ("file is 209,715,201 bytes, over the 209,715,200-byte limit (PILAR_MAX_FILE_BYTES)")


@pytest.mark.parametrize("field, value", [
    ("bm25_weight", -3), ("dense_weight", 1.5), ("budget", 31), ("top_k", 0), ("gate", 2),
    ("seed_ratio", 0), ("base_share", 1.1), ("prefilter", 0), ("max_query_chars", 0),
    ("max_file_bytes", 0), ("entity_match", 101), ("llm_timeout", 0),
])
def test_settings_out_of_range_are_refused(field, value):
    with pytest.raises(ValidationError) as info:
        Settings(**{field: value})
    assert [e["loc"] for e in info.value.errors()] == [(field,)]


def test_pdf_pages_are_reported_as_they_are_parsed():
    calls = []
    parse(FIXTURES / "pdf" / "diesel_engines-p1-3.pdf", settings=Settings(pdf_layout="rules"),
          on_page=lambda done, total: calls.append((done, total)))
    assert calls == [(0, 3), (1, 3), (2, 3), (3, 3)]  # once open, then after each page
