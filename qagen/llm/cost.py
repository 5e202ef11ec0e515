"""Token and cost accounting: prices, a spending cap that stops a run cleanly, and estimates."""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import ClassVar

from qagen.errors import ConfigError
from qagen.llm.task import add_usage
from qagen.records import BatchSpend, Usage

# US dollars per million tokens (input, output, cached input), from the providers' price pages on 2026-11-01.
# Prices change: `price_input`/`price_output`/`price_cached_input` override them, and unknown models have none.
# Cached input is what a provider bills for the part of a prompt it read from its prompt cache: gpt-4o's and
# gpt-4o-mini's are OpenAI's own figures (its prompt-caching announcement, 2024-10-01: half the input
# price). The gpt-4.1 family's could not be checked against an OpenAI source, so they are None: their
# cached tokens are priced as input, which can only overstate the cost, until `price_cached_input` says.
KNOWN_PRICES: dict[str, tuple[float, float, float | None]] = {
    "openai:gpt-4o-mini": (0.15, 0.60, 0.075),
    "openai:gpt-4o": (2.50, 10.00, 1.25),
    "openai:gpt-4.1": (2.00, 8.00, None),
    "openai:gpt-4.1-mini": (0.40, 1.60, None),
    "openai:gpt-4.1-nano": (0.10, 0.40, None),
}


BATCH_PRICE_FACTOR = 0.5
"""Batch APIs (OpenAI's, and others alike) charge half the online price for work that may wait a day;
taken to halve the cached-input price as well."""


@dataclass(frozen=True)
class Price:
    """Dollars per million input, output and cached input tokens (cached: None when unknown, and
    then the cached part of a prompt costs what the rest of it costs)."""

    input: float
    output: float
    cached_input: float | None = None

    def cost(self, input_tokens: int, output_tokens: int, cached_input_tokens: int = 0) -> float:
        """`cached_input_tokens` is the part of `input_tokens` served from the provider's prompt cache."""
        cached = min(cached_input_tokens, input_tokens)
        cached_price = self.input if self.cached_input is None else self.cached_input
        return ((input_tokens - cached) * self.input + cached * cached_price + output_tokens * self.output) / 1e6

    def batch(self) -> Price:
        """The price of the same tokens sent through a batch API."""
        cached = None if self.cached_input is None else self.cached_input * BATCH_PRICE_FACTOR
        return Price(self.input * BATCH_PRICE_FACTOR, self.output * BATCH_PRICE_FACTOR, cached)


def cost_of(usage: Usage, price: Price) -> float:
    """What `usage` costs at `price`, its cached input at the cached-input price."""
    return price.cost(usage.input_tokens, usage.output_tokens, usage.cached_input_tokens)


def cached_note(cached_input_tokens: int) -> str:
    """Words to follow a count of input tokens, saying how many of them were cached ("" for none),
    so a report of a server that caches nothing reads as before."""
    return f" ({cached_input_tokens:,} of them cached)" if cached_input_tokens else ""


def batch_spend(calls: int, usage: Usage, price: Price | None) -> BatchSpend:
    """What calls answered in batches cost at batch prices, next to what they cost online."""
    return BatchSpend(
        calls=calls,
        input_tokens=usage.input_tokens,
        output_tokens=usage.output_tokens,
        cached_input_tokens=usage.cached_input_tokens,
        cost_usd=round(cost_of(usage, price.batch()), 6) if price else None,
        online_cost_usd=round(cost_of(usage, price), 6) if price else None,
    )


class BatchTally:
    """Paid calls answered in batches (or made online), counted up for `batch_spend`."""

    def __init__(self) -> None:
        self.calls = 0
        self.usage = Usage()

    def add(self, calls: int, usage: Usage) -> None:
        self.calls += calls
        self.usage = add_usage(self.usage, usage)

    def spend(self, model: str, price: Price | None = None) -> BatchSpend:
        """At the price given, else the model's known price."""
        return batch_spend(self.calls, self.usage, price or price_for(model))


def price_for(
    model: str,
    price_input: float | None = None,
    price_output: float | None = None,
    price_cached_input: float | None = None,
    *,
    known: bool = True,
) -> Price | None:
    """The price of a model: the one given, else the known one (unless not `known`: a server of one's
    own serves it), else None (unknown).

    A price given (`price_input` and `price_output`) has no cached-input price unless
    `price_cached_input` gives one; `price_cached_input` alone sets it on the model's known price.
    """
    if price_input is not None or price_output is not None:
        if price_input is None or price_output is None:
            raise ConfigError(
                "Give both `price_input` and `price_output` (dollars per million tokens).",
                settings=("price_input", "price_output"),
            )
        price: Price | None = Price(price_input, price_output)
    else:
        listed = KNOWN_PRICES.get(model) if known else None
        price = Price(*listed) if listed else None
    if price_cached_input is None:
        return price
    if price is None:
        raise ConfigError(
            f"`price_cached_input` needs the price of '{model}' too: give `price_input` and `price_output` "
            "(dollars per million tokens).",
            settings=("price_input", "price_output", "price_cached_input"),
        )
    return replace(price, cached_input=price_cached_input)


class BudgetReachedError(Exception):
    """Raised inside a worker to stop taking new calls; never reaches the user as a traceback."""


class Budget:
    """A cap on tokens and/or dollars for a whole run directory, its earlier sessions included.

    Checked before each call, so a run overshoots by at most the calls already in flight.
    """

    # The settings `describe()` names (as `QagenError.settings`: the CLI shows them as its flags).
    settings: ClassVar[tuple[str, ...]] = ("max_tokens", "max_cost")

    def __init__(
        self,
        *,
        max_tokens: int | None,
        max_cost: float | None,
        prices: dict[str, Price | None],
        spent: dict[str, Usage],
    ) -> None:
        if max_cost is not None and any(price is None for price in prices.values()):
            unknown = ", ".join(model for model, price in prices.items() if price is None)
            raise ConfigError(
                f"`max_cost` needs the price of {unknown}: give `price_input` and `price_output` "
                "(dollars per million tokens), or cap tokens with `max_tokens`.",
                settings=("max_cost", "price_input", "price_output", "max_tokens"),
            )
        self.max_tokens = max_tokens
        self.max_cost = max_cost
        self.prices = prices
        self.spent = dict(spent)
        self.reached = False

    def add(self, model: str, usage: Usage) -> None:
        before = self.spent.get(model)
        self.spent[model] = usage if before is None else add_usage(before, usage)

    @property
    def tokens(self) -> int:
        """Input and output tokens; the cached input counts as input (it is a part of it)."""
        return sum(usage.input_tokens + usage.output_tokens for usage in self.spent.values())

    @property
    def cost(self) -> float | None:
        total = 0.0
        for model, usage in self.spent.items():
            price = self.prices.get(model)
            if price is None:
                return None
            total += cost_of(usage, price)
        return total

    def over(self, planned: dict[str, Usage]) -> bool:
        """Whether the cap is reached once `planned` (model -> tokens) is spent too: batch mode
        counts work when it is submitted, before its replies say what it cost."""
        trial = Budget(max_tokens=self.max_tokens, max_cost=self.max_cost, prices=self.prices, spent=self.spent)
        for model, usage in planned.items():
            trial.add(model, usage)
        try:
            trial.check()
        except BudgetReachedError:
            return True
        return False

    def check(self) -> None:
        """Raise `BudgetReachedError` once the cap is reached (and remember that it was)."""
        over_tokens = self.max_tokens is not None and self.tokens >= self.max_tokens
        cost = self.cost
        over_cost = self.max_cost is not None and cost is not None and cost >= self.max_cost
        if over_tokens or over_cost:
            self.reached = True
            raise BudgetReachedError

    def describe(self) -> str:
        cost = self.cost
        spent = f"{self.tokens:,} tokens" + (f" (${cost:.4f})" if cost is not None else "")
        caps = []
        if self.max_tokens is not None:
            caps.append(f"`max_tokens={self.max_tokens:,}`")
        if self.max_cost is not None:
            caps.append(f"`max_cost={self.max_cost}`")
        return f"{spent} spent, reaching {' / '.join(caps)}"
