"""The packer: ranked pages and their stored material -> an evidence packet
(PILAR §3.5, App. G.1-G.2; Tessera §3.4-3.5).

:class:`Packer`, built once from :class:`~pilar.config.Settings` (its
:class:`~pilar.packing.packet.PackingConfig` read then), selects the anchor pages'
units (:class:`~pilar.packing.selection.UnitSelector`: lexical prefilter,
optional cross-encoder, cue rows) and assembles the packet
(:func:`~pilar.packing.packet.assemble`).
"""

from __future__ import annotations

from collections.abc import Mapping

from pilar.config import Settings
from pilar.model import Packet, RankedPage, Support, Unit
from pilar.packing.packet import PackingConfig, PageEvidence, assemble
from pilar.packing.selection import UnitSelector
from pilar.packing.tokens import TokenCounter


class Packer:
    """Packs ranked pages within a token budget; ``selector`` picks units,
    ``counter`` counts reader tokens, ``config`` shapes the packet."""

    def __init__(self, selector: UnitSelector, counter: TokenCounter, config: PackingConfig):
        self.selector = selector
        self.counter = counter
        self.config = config

    @classmethod
    def of(cls, settings: Settings, embedder, unit_vectors, counter: TokenCounter) -> "Packer":
        """The packer of ``settings``: its cross-encoder (``PILAR_RERANKER_MODEL``,
        none when unset) loaded now, ``unit_vectors`` the page index's
        ``ids -> {id: vector}``. Raises :class:`~pilar.errors.ConfigError`
        when the reranker cannot be loaded."""
        from pilar.retrieval.embeddings import load_cross_encoder

        config = PackingConfig.of(settings)
        cross = load_cross_encoder(settings.reranker_model) if settings.reranker_model else None
        return cls(UnitSelector(embedder, unit_vectors, cross, config.prefilter,
                                config.page_weight, config.cues), counter, config)

    def pack(self, question: str, pages: list[RankedPage],
             material: Mapping[str, tuple[list[Support], list[Unit]]], budget: int,
             use_units: bool = True) -> Packet:
        """The packet of at most ``budget`` tokens for ``pages`` (best first),
        ``material`` giving each page's supports and units (document order);
        ``use_units=False`` packs page excerpts only (see
        :func:`~pilar.packing.packet.assemble`)."""
        ids = [p.page_id for p in pages]
        evidence = {p.page_id: PageEvidence(p, material[p.page_id][0]) for p in pages}
        selected, tables = [], {}
        if use_units:
            anchors = [(rank, u) for rank, pid in enumerate(ids) for u in material[pid][1]]
            plain = [u for _, u in anchors]
            facts = self.selector.page_facts(plain)  # read once for selection and tables
            selected = self.selector.select(question, anchors, [p.score for p in pages], budget,
                                            frozenset(s for p in pages for s in p.bridging),
                                            facts)
            tables = self.selector.tables(plain, facts)
        return assemble(question, pages, evidence, selected, self.counter, budget, self.config,
                        use_units=use_units, tables=tables)
