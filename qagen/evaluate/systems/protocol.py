"""The RAG system under test, behind one small protocol, and three ways to plug one in.

- `qagen.evaluate.systems.answers_file.AnswersFileSystem`: answers computed beforehand, one JSON object per line;
- `qagen.evaluate.systems.callable.CallableSystem`: a Python function (sync or async) or a LangChain
  `Runnable`;
- `qagen.evaluate.systems.endpoint.EndpointSystem`: an HTTP service that answers `POST {"question": ...}`.

Every adapter turns what the system gave back into a `RagOutput` through
`qagen.evaluate.systems.replies.parse_reply`, so the three accept the same shapes: a plain answer
string, or an object `{answer, contexts, sources}` whose contexts are strings, objects
`{text, source, start_index, end_index}` or LangChain `Document`s.

A failure of the system on one question is a value (`RagOutput.error`), never a crash of the
evaluation; only what makes every question fail (a malformed answers file, an unreachable endpoint)
raises a `QagenError` with one clear sentence.
"""

from __future__ import annotations

import asyncio
import unicodedata
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Protocol, runtime_checkable

from qagen.evaluate.records import RagOutput

if TYPE_CHECKING:
    from qagen.llm.client import LLMClient
    from qagen.llm.task import Task

__all__ = [
    "AnswerInterrupted",
    "RagSystem",
    "ReaderSystem",
    "SystemFactory",
    "close_system",
    "collapse_whitespace",
    "normalize_question",
]


@runtime_checkable
class RagSystem(Protocol):
    """A RAG system under test. It may also define `async def aclose()` (see `close_system`)."""

    @property
    def name(self) -> str:
        """A short name for reports."""
        ...

    async def answer(self, question: str) -> RagOutput:
        """Answer one question; a failure is returned as `RagOutput(answer=None, error=...)`."""
        ...


@runtime_checkable
class ReaderSystem(Protocol):
    """A RAG system whose answer is one LLM task (`task`, on `reader`) over what it retrieved, such as
    the bundled baseline: the evaluation sends its reader's calls through the run's executor, so
    they go in batch rounds like the judges' in batch mode (and exactly as `answer` sends them online)."""

    @property
    def name(self) -> str: ...

    @property
    def reader(self) -> LLMClient: ...

    @property
    def task(self) -> Task[Any, RagOutput]: ...

    async def retrieve_for(self, question: str) -> Any:
        """What the reader answers `question` from: the task's item."""
        ...

    async def answer(self, question: str) -> RagOutput: ...


async def close_system(system: RagSystem) -> None:
    """Release the system's resources (connections), if it holds any."""
    close = getattr(system, "aclose", None)
    if close is not None:
        await close()


def collapse_whitespace(question: str) -> str:
    """The question as written, stripped, every run of whitespace made one space.

    The published cookbook test set's questions end with a newline, and a file written by another
    tool may not keep it; neither difference changes the question.
    """
    return " ".join(question.split())


def normalize_question(question: str) -> str:
    """The key questions are matched by: Unicode NFKC, case folded, whitespace collapsed.

    Beyond `collapse_whitespace`: a copy of a question in other case ("WHAT IS BM25?"), with
    full-width letters or a non-breaking space (NFKC makes them the plain ones) is the same
    question. NFKC runs again after `casefold`, which can leave text that is not NFKC-normal
    (the Unicode standard's recipe for caseless matching).
    """
    folded = unicodedata.normalize("NFKC", unicodedata.normalize("NFKC", question).casefold())
    return collapse_whitespace(folded)


class AnswerInterrupted(asyncio.CancelledError):
    """The run was cancelled (Ctrl-C) while the system answered; `output` is what to record.

    A cancellation like any other to code that does not know it, so the run still stops; the
    evaluation records `output` (the answer, if it came within the grace period, else a failure
    `interrupted: ...`) before it lets the cancellation through.
    """

    def __init__(self, output: RagOutput) -> None:
        super().__init__(output.error or "interrupted")
        self.output = output


@dataclass(frozen=True)
class SystemFactory:
    """A RAG system that `evaluate` builds itself, inside its event loop, with the reader's client
    (from `reader=`, bound by the run's limits like the judge): e.g. `rag_baseline(...)`, or
    `SystemFactory(lambda reader: MySystem(reader))`."""

    build: Callable[[LLMClient | None], RagSystem]
