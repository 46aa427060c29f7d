"""The reader layer (PILAR App. H.2-H.3): answers with ``[n]`` citations
from an evidence packet, over an OpenAI-compatible model server.

- :mod:`pilar.reader.prompt` — packet -> numbered context and chat messages
- :mod:`pilar.reader.citations` — reply -> short answer, resolved citations, flags
- :mod:`pilar.reader.images` — table/figure crops for a VLM reader, in image tokens
- :mod:`pilar.reader.answer` — :class:`Reader` and :class:`AnswerStream`
"""

from pilar.reader.answer import AnswerStream, Reader

__all__ = ["Reader", "AnswerStream"]
