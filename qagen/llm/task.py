"""The task contract: every LLM task of qagen (the draft, each critic, each judge, the baseline's
answer) is one object with a name, its prompts, the key that makes resume exact, a pure
`request(item)` and a pure `parse(item, reply)`.

A task never calls a model. An executor (`qagen.runs.executor`) asks it for requests, sends them,
and hands the replies back; so the same task runs online (async, bounded in flight) or, later, in
batch rounds, and tests drive it with plain values. In the spirit of distilabel's `Task`
(`format_input` / `format_output`) and inspect_ai's scorers.

Most tasks make one call: they implement `request` and `parse` (`SingleCallTask`). A task that
needs several calls (RAGAS faithfulness: statements, then a verdict on each; context precision:
one call per retrieved context) implements `start` as a small state machine of pure steps: `Ask`
some requests, then continue from their outcomes, until it is `Done` with a record (`Compute`
awaits work that is not a model call, such as the embeddings of answer relevancy).
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass
from typing import Any, Generic, Literal, NamedTuple, Protocol, TypeVar

from qagen.failures import Failure, FailureKind
from qagen.llm.prompts import Prompt
from qagen.records import Usage

Role = Literal["generator", "critic", "reader", "judge"]
"""Which model a task runs on. Roles may share one model; the client factory decides."""


class Message(NamedTuple):
    """One chat message of a request."""

    role: Literal["system", "user"]
    content: str


Request = tuple[Message, ...]
"""The messages of one call, system message (if any) first."""


def user_request(prompt: str, *, system: str | None = None) -> Request:
    """A request of one user message, after an optional system message."""
    user = Message("user", prompt)
    return (user,) if system is None else (Message("system", system), user)


class TokenChoice(NamedTuple):
    """One written token of a reply and the server's most likely tokens at its position (OpenAI's
    `logprobs.content[i]`, which vLLM and llama.cpp's server return too): what a verdict is read
    from as a probability (`qagen.llm.verdict_probability`)."""

    token: str
    """The token as written."""
    top: tuple[tuple[str, float], ...]
    """The most likely tokens at this position with their log probabilities, the written one among them."""


class Reply(NamedTuple):
    """A model's reply to one request, normalised (`qagen.llm.normalise`), and the tokens it cost."""

    text: str
    """What parsers read: the answer, any thinking set apart ("" when `truncated`)."""
    usage: Usage
    raw: str | None = None
    """The content as the server sent it (cut when over the size limit); None when it is `text`."""
    reasoning: str | None = None
    """The model's thinking: `reasoning_content`, or the leading `<think>` block(s) of the content."""
    truncated: bool = False
    """Cut off at the output cap (`finish_reason: length`, or a thinking block never closed): not an answer."""
    cut: bool = False
    """The content was over the size limit and was cut before anything read it."""
    tokens: tuple[TokenChoice, ...] | None = None
    """The content's tokens with their likeliest alternatives, when they were asked for
    (`ModelSettings.top_logprobs`) and the server returned them; None otherwise."""

    @property
    def verbatim(self) -> str:
        """The content as the server sent it (what records keep as their raw reply)."""
        return self.raw if self.raw is not None else self.text


Outcome = Reply | Failure
"""What came back for one request: a reply, or the failure of the call (after retries)."""


class TaskRecord(Protocol):
    """What an executor needs of a task's records: the key, and whether it failed and how."""

    @property
    def id(self) -> str: ...

    @property
    def failure(self) -> Failure | None: ...


ItemT = TypeVar("ItemT")
RecordT = TypeVar("RecordT")


@dataclass(frozen=True)
class Done(Generic[RecordT]):
    """The task is finished: here is its record."""

    record: RecordT


@dataclass(frozen=True)
class Ask(Generic[RecordT]):
    """Send these requests (together), then continue with their outcomes, in the same order."""

    requests: tuple[Request, ...]
    then: Callable[[Sequence[Outcome]], Step[RecordT]]


@dataclass(frozen=True)
class Compute(Generic[RecordT]):
    """Await some work that is not a model call (an embedding), then continue with its value.

    The one impure step: the work is a coroutine the task was given (e.g. the user's embeddings
    model), so the task itself still never talks to a model."""

    work: Callable[[], Awaitable[Any]]
    then: Callable[[Any], Step[RecordT]]


Step = Done[RecordT] | Ask[RecordT] | Compute[RecordT]


class Task(ABC, Generic[ItemT, RecordT]):
    """An LLM task over items of type `ItemT` that makes records of type `RecordT`."""

    name: str
    """Short name, for progress and messages: `draft`, `critique:relevance`, `judge:correctness`."""
    role: Role
    model: str
    """Spec of the model the task runs on (part of every key: another model is another record)."""
    prompts: tuple[Prompt, ...]

    @abstractmethod
    def key(self, item: ItemT) -> str:
        """The record's id: a hash of everything the record depends on. The one place it is computed."""

    @abstractmethod
    def start(self, item: ItemT) -> Step[RecordT]:
        """The first step for `item`: requests to send, or (nothing to ask) the record itself."""


class SingleCallTask(Task[ItemT, RecordT]):
    """A task of one call: implement `request`, `parse` and `failed`."""

    @abstractmethod
    def request(self, item: ItemT) -> Request:
        """The messages to send for `item`. Pure."""

    @abstractmethod
    def parse(self, item: ItemT, reply: Reply) -> RecordT:
        """The record read from `reply`, keeping the raw text; a typed failure if it cannot be read. Pure."""

    @abstractmethod
    def failed(self, item: ItemT, failure: Failure, reply: Reply | None = None) -> RecordT:
        """The record of a failure: a call with no reply, or (`reply` given) a reply that cannot
        be read at all (cut off at the output cap), kept with its usage."""

    def start(self, item: ItemT) -> Step[RecordT]:
        def then(outcomes: Sequence[Outcome]) -> Step[RecordT]:
            (outcome,) = outcomes
            if isinstance(outcome, Failure):
                return Done(self.failed(item, outcome))
            if outcome.truncated:
                return Done(self.failed(item, truncated(outcome), outcome))
            return Done(self.parse(item, outcome))

        return Ask((self.request(item),), then)


def truncated(reply: Reply) -> Failure:
    """The failure of a reply cut off at the output cap."""
    return Failure.of(
        FailureKind.TRUNCATED, f"the reply was cut off at the output cap after {reply.usage.output_tokens} tokens"
    )


def add_usage(total: Usage, more: Usage) -> Usage:
    """The sum of two usages."""
    return Usage(
        input_tokens=total.input_tokens + more.input_tokens,
        output_tokens=total.output_tokens + more.output_tokens,
        cached_input_tokens=total.cached_input_tokens + more.cached_input_tokens,
    )
