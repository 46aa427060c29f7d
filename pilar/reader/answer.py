"""The reader: an answer with ``[n]`` citations from an evidence packet
alone, over any OpenAI-compatible server (PILAR App. H.2-H.3).

Greedy decoding (``Settings.reader_temperature``, 0) and at most
``Settings.reader_max_tokens`` (256) new tokens, as in App. H.2. The
packet is numbered and re-fitted to its budget with the reader's tokenizer
(:func:`pilar.reader.prompt.numbered`), sent with the generic template of
App. H.3 (:mod:`pilar.reader.prompt`), and the reply read into an
:class:`~pilar.model.Answer` (:mod:`pilar.reader.citations`).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping

from pilar.config import MIN_BUDGET, Settings
from pilar.errors import LLMReplyError
from pilar.llm import Endpoint, LLMClient
from pilar.model import Answer, Document, Packet, PacketImage, Support
from pilar.packing.tokens import TokenCounter
from pilar.reader.citations import read_answer
from pilar.reader.prompt import messages, numbered


class AnswerStream:
    """An answer as it is generated: iterate for the text deltas (str);
    afterwards :attr:`answer` holds the whole :class:`~pilar.model.Answer`.
    Raises :class:`~pilar.errors.LLMError` kinds while iterating."""

    def __init__(self, deltas: Iterator[str], finish: Callable[[str], Answer], packet: Packet):
        self._deltas = deltas
        self._finish = finish
        self.packet = packet
        self.answer: Answer | None = None

    def __iter__(self) -> Iterator[str]:
        parts: list[str] = []
        for delta in self._deltas:
            parts.append(delta)
            yield delta
        self.answer = self._finish("".join(parts))


class Reader:
    """Answers questions from packets (see the module docstring).

    ``client`` defaults to an :class:`~pilar.llm.LLMClient` on
    :meth:`Endpoint.reader <pilar.llm.Endpoint.reader>` (which raises
    :class:`~pilar.errors.ReaderNotConfiguredError` without a server)."""

    def __init__(self, settings: Settings, counter: TokenCounter,
                 client: LLMClient | None = None):
        self.settings = settings
        self.counter = counter
        self.client = client or LLMClient(Endpoint.reader(settings))

    @classmethod
    def of(cls, settings: Settings, counter: Callable[[], TokenCounter]) -> "Reader":
        """The reader on the configured model server, ``counter()`` giving
        its token counter; raises :class:`~pilar.errors.ReaderNotConfiguredError`
        without a server, before ``counter`` is called (it may load a tokenizer)."""
        endpoint = Endpoint.reader(settings)
        return cls(settings, counter(), LLMClient(endpoint))

    def context(self, packet: Packet, budget: int | None = None) -> Packet:
        """The packet as the reader will see it: numbered, within ``budget``
        (default the packet's) reader tokens."""
        return numbered(packet, self.counter, budget)

    def text_budget(self, budget: int) -> int:
        """The packet's share of ``budget`` (reader tokens): all of it, or
        without ``PILAR_READER_IMAGE_SHARE`` when crops go to a VLM reader
        (``PILAR_READER_IMAGES``), at least :data:`~pilar.config.MIN_BUDGET`."""
        s = self.settings
        if s.reader_images:
            return max(MIN_BUDGET, budget - int(budget * s.reader_image_share))
        return budget

    def reply(self, question: str, packet: Packet, budget: int,
              supports: Callable[[list[str]], Mapping[str, list[Support]]],
              documents: Callable[[list[str]], list[Document]],
              stream: bool = False) -> "Answer | AnswerStream":
        """The answer to ``question`` from ``packet`` (built within
        :meth:`text_budget` of ``budget``), numbered within that share and,
        with ``PILAR_READER_IMAGES``, with table and figure crops of PDF pages
        in the rest of ``budget`` (:func:`pilar.reader.images.crops`, PILAR
        App. H.2-H.3). ``supports(page_ids)`` gives each page's supports and
        ``documents(doc_ids)`` the documents, read only for crops.
        ``stream=True`` returns an :class:`AnswerStream`. Raises what
        :meth:`answer` raises."""
        context = self.context(packet, self.text_budget(budget))
        images = []
        if self.settings.reader_images:
            from pilar.reader.images import crops

            page_ids = list(dict.fromkeys(item.page_id for item in context.items))
            docs = {d.doc_id: d for d in documents(
                list(dict.fromkeys(item.citation.doc_id for item in context.items)))}
            images = crops(context, supports(page_ids), docs, self.settings,
                           budget - context.tokens)
        return self.stream(question, context, images) if stream else self.answer(
            question, context, images)

    def answer(self, question: str, context: Packet,
               images: list[PacketImage] = ()) -> Answer:
        """The answer to ``question`` from ``context`` (a :meth:`context`
        packet) and optional crops. Raises :class:`~pilar.errors.LLMError`
        kinds (timeout, server error, refusal; an empty reply is
        :class:`~pilar.errors.LLMReplyError`)."""
        s = self.settings
        done = self.client.chat(messages(question, context, list(images)),
                                max_tokens=s.reader_max_tokens,
                                temperature=s.reader_temperature)
        if not done.text.strip():
            raise LLMReplyError("the reader's reply is empty "
                                f"(finish reason {done.finish_reason or 'none'})")
        return read_answer(question, done.text, context, model=done.model,
                           finish_reason=done.finish_reason, images=list(images),
                           prompt_tokens=done.prompt_tokens,
                           completion_tokens=done.completion_tokens)

    def stream(self, question: str, context: Packet,
               images: list[PacketImage] = ()) -> AnswerStream:
        """:meth:`answer`, streamed: see :class:`AnswerStream`."""
        s = self.settings
        deltas = self.client.stream(messages(question, context, list(images)),
                                    max_tokens=s.reader_max_tokens,
                                    temperature=s.reader_temperature)
        model = self.client.model

        def finish(text: str) -> Answer:
            if not text.strip():
                raise LLMReplyError("the reader's streamed reply is empty")
            return read_answer(question, text, context, model=model, images=list(images))

        return AnswerStream(deltas, finish, context)
