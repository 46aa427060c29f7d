"""The packing layer (PILAR §3.5, App. G.1-G.2; Tessera §3.4-3.5): ranked
pages and their stored units -> an evidence packet within a token budget.

- :mod:`pilar.packing.tokens` — reader-token counting
- :mod:`pilar.packing.statistics` — per-unit token statistics made at ingest
- :mod:`pilar.packing.cues` — cue rows and the question's cues
- :mod:`pilar.packing.selection` — unit selection (prefilter, cross-encoder)
- :mod:`pilar.packing.packet` — packet assembly
- :mod:`pilar.packing.packer` — :class:`~pilar.packing.packer.Packer`, the above built from settings
"""
