"""What a RAG system gave back, read into a `RagOutput`: `parse_reply` and the shapes it accepts.

Every adapter of a RAG system (answers file, Python callable, HTTP endpoint; see
`qagen.evaluate.systems.protocol`) reads its system's replies through `parse_reply`, so the three accept the
same shapes: a plain answer string, or an object `{answer, contexts, sources}` whose contexts are
strings, objects `{text, source, start_index, end_index}` or LangChain `Document`s.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from langchain_core.messages import BaseMessage

from qagen.evaluate.records import RagOutput
from qagen.output_cap import cap_text
from qagen.records import RetrievedContext

__all__ = ["ANSWER_KEYS", "CONTEXT_KEYS", "BadReply", "capped", "parse_reply", "type_name"]

# Key names accepted for the answer and the contexts: qagen's own first, then those of the
# cookbook notebook's results file (`generated_answer`, `retrieved_docs`) and of LangChain's
# `create_retrieval_chain` output (`context`, a list of Documents).
ANSWER_KEYS = ("answer", "generated_answer")
CONTEXT_KEYS = ("contexts", "retrieved_docs", "context")


class BadReply(ValueError):
    """What a system gave back is not a RAG output; the message says what is wrong."""


def parse_reply(value: object) -> RagOutput:
    """A `RagOutput` from what a system returned; raises `BadReply` for any other shape.

    Accepted: a `RagOutput`; a string (the answer, no contexts); a chat message (its text); an
    object with `answer` and optionally `contexts` (strings, objects with `text`, or LangChain
    `Document`s) and `sources` (one source id per context, used where a context names none).
    """
    return _read(value)


def capped(output: RagOutput) -> RagOutput:
    """`output` with its answer and each context cut to `MAX_REPLY_CHARS` characters, as a model's reply
    is (`qagen.output_cap`), the cuts recorded in `RagOutput.cut`. The evaluation applies it to every
    system's output before storing or judging it: a 2 MB answer is never sent to a judge whole."""
    cut = dict(output.cut)
    answer = output.answer
    if answer is not None:
        answer, answer_cut_from = cap_text(answer)
        if answer_cut_from is not None:
            cut["answer"] = answer_cut_from
    contexts: list[RetrievedContext] = []
    for position, context in enumerate(output.contexts):
        text, context_cut_from = cap_text(context.text)
        if context_cut_from is None:
            contexts.append(context)
            continue
        cut[f"context {position}"] = context_cut_from
        # The offsets still say where the whole passage is in its document.
        end = context.end_index
        if end is None and context.start_index is not None:
            end = context.start_index + context_cut_from
        contexts.append(context.model_copy(update={"text": text, "end_index": end}))
    if cut == output.cut:
        return output
    return output.model_copy(update={"answer": answer, "contexts": contexts, "cut": cut})


def _read(value: object) -> RagOutput:
    if isinstance(value, RagOutput):
        return value
    if isinstance(value, str):
        return RagOutput(answer=value)
    if isinstance(value, BaseMessage):
        return RagOutput(answer=value.text)
    if not isinstance(value, Mapping):
        raise BadReply(f"expected a string or an object with an 'answer', got {type(value).__name__}")
    answer_key = next((key for key in ANSWER_KEYS if key in value), None)
    if answer_key is None:
        raise BadReply(f"no 'answer' in the reply (its keys are: {', '.join(map(str, value)) or 'none'})")
    answer = value[answer_key]
    if isinstance(answer, BaseMessage):
        answer = answer.text
    if not isinstance(answer, str):
        raise BadReply(f"'{answer_key}' must be a string, got {type_name(answer)}")
    raw_contexts = next((value[key] for key in CONTEXT_KEYS if value.get(key) is not None), None)
    sources = value.get("sources")
    return RagOutput(answer=answer, contexts=_contexts(raw_contexts, sources))


def _contexts(raw: object, sources: object) -> list[RetrievedContext]:
    if raw is None:
        if sources:
            raise BadReply("'sources' without 'contexts': give the retrieved texts too, one per source")
        return []
    if isinstance(raw, (str, bytes)) or not isinstance(raw, Sequence):
        raise BadReply(f"'contexts' must be a list, got {type_name(raw)}")
    if sources is not None:
        if isinstance(sources, (str, bytes)) or not isinstance(sources, Sequence):
            raise BadReply(f"'sources' must be a list, got {type_name(sources)}")
        if len(sources) != len(raw):
            raise BadReply(f"{len(sources)} sources for {len(raw)} contexts; give one source per context")
        if not all(source is None or isinstance(source, str) for source in sources):
            raise BadReply("'sources' must be strings")
    return [
        _context(item, sources[position] if sources is not None else None, position)
        for position, item in enumerate(raw)
    ]


def _context(item: object, source: str | None, position: int) -> RetrievedContext:
    if isinstance(item, str):
        return RetrievedContext(text=item, source=source)
    if hasattr(item, "page_content") and hasattr(item, "metadata"):  # a LangChain Document
        metadata = item.metadata if isinstance(item.metadata, Mapping) else {}
        item = {"text": item.page_content, **{key: metadata.get(key) for key in ("source", "start_index")}}
    if not isinstance(item, Mapping):
        raise BadReply(f"context {position} must be a string or an object with 'text', got {type_name(item)}")
    text = item.get("text")
    if not isinstance(text, str):
        raise BadReply(f"context {position} has no string 'text'")
    own_source = item.get("source")
    if own_source is not None and not isinstance(own_source, str):
        raise BadReply(f"context {position}: 'source' must be a string, got {type_name(own_source)}")
    start, end = item.get("start_index"), item.get("end_index")
    for key, offset in (("start_index", start), ("end_index", end)):
        # bool is an int subclass; `true` as an offset is a mistake, not 1.
        if offset is not None and (isinstance(offset, bool) or not isinstance(offset, int) or offset < 0):
            raise BadReply(f"context {position}: '{key}' must be a non-negative integer, got {offset!r}")
    if start is not None and end is None:
        end = start + len(text)  # the convention of qagen's chunks: text == document[start:end]
    if start is not None and end is not None and end < start:
        raise BadReply(f"context {position}: end_index {end} is before start_index {start}")
    return RetrievedContext(text=text, source=own_source or source, start_index=start, end_index=end)


def type_name(value: object) -> str:
    """The JSON name of a value's type for messages: `null` for None, else the Python type's name."""
    return "null" if value is None else type(value).__name__
