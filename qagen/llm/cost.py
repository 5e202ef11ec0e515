"""Token and cost accounting: prices, a spending cap that stops a run cleanly, and estimates."""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

from qagen.errors import ConfigError
from qagen.records import BatchSpend, Usage

# US dollars per million tokens (input, output), from the providers' price pages on 2026-11-01.
# Prices change: `price_input`/`price_output` override them, and unknown models have none.
KNOWN_PRICES: dict[str, tuple[float, float]] = {
    "openai:gpt-4o-mini": (0.15, 0.60),
    "openai:gpt-4o": (2.50, 10.00),
    "openai:gpt-4.1": (2.00, 8.00),
    "openai:gpt-4.1-mini": (0.40, 1.60),
    "openai:gpt-4.1-nano": (0.10, 0.40),
}


BATCH_PRICE_FACTOR = 0.5
"""Batch APIs (OpenAI's, and others alike) charge half the online price for work that may wait a day."""


@dataclass(frozen=True)
class Price:
    """Dollars per million input and output tokens."""

    input: float
    output: float

    def cost(self, input_tokens: int, output_tokens: int) -> float:
        return (input_tokens * self.input + output_tokens * self.output) / 1e6

    def batch(self) -> Price:
        """The price of the same tokens sent through a batch API."""
        return Price(self.input * BATCH_PRICE_FACTOR, self.output * BATCH_PRICE_FACTOR)


def batch_spend(calls: int, input_tokens: int, output_tokens: int, price: Price | None) -> BatchSpend:
    """What calls answered in batches cost at batch prices, next to what they cost online."""
    return BatchSpend(
        calls=calls,
        input_tokens=input_tokens,
        output_tokens=output_tokens,
        cost_usd=round(price.batch().cost(input_tokens, output_tokens), 6) if price else None,
        online_cost_usd=round(price.cost(input_tokens, output_tokens), 6) if price else None,
    )


class BatchTally:
    """Paid calls answered in batches, counted up for `batch_spend`."""

    def __init__(self) -> None:
        self.calls = self.input_tokens = self.output_tokens = 0

    def add(self, calls: int, usage: Usage) -> None:
        self.calls += calls
        self.input_tokens += usage.input_tokens
        self.output_tokens += usage.output_tokens

    def spend(self, model: str, price: Price | None = None) -> BatchSpend:
        """At the price given, else the model's known price."""
        return batch_spend(self.calls, self.input_tokens, self.output_tokens, price or price_for(model))


def price_for(model: str, price_input: float | None = None, price_output: float | None = None) -> Price | None:
    """The price of a model: the one given, else the known one, else None (unknown)."""
    if price_input is not None or price_output is not None:
        if price_input is None or price_output is None:
            raise ConfigError(
                "Give both `price_input` and `price_output` (dollars per million tokens).",
                settings=("price_input", "price_output"),
            )
        return Price(price_input, price_output)
    known = KNOWN_PRICES.get(model)
    return Price(*known) if known else None


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
        spent: dict[str, tuple[int, int]],
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
        self.spent = {model: list(tokens) for model, tokens in spent.items()}
        self.reached = False

    def add(self, model: str, input_tokens: int, output_tokens: int) -> None:
        tokens = self.spent.setdefault(model, [0, 0])
        tokens[0] += input_tokens
        tokens[1] += output_tokens

    @property
    def tokens(self) -> int:
        return sum(a + b for a, b in self.spent.values())

    @property
    def cost(self) -> float | None:
        total = 0.0
        for model, (input_tokens, output_tokens) in self.spent.items():
            price = self.prices.get(model)
            if price is None:
                return None
            total += price.cost(input_tokens, output_tokens)
        return total

    def over(self, planned: dict[str, tuple[int, int]]) -> bool:
        """Whether the cap is reached once `planned` (model -> input, output tokens) is spent too:
        batch mode counts work when it is submitted, before its replies say what it cost."""
        trial = Budget(max_tokens=self.max_tokens, max_cost=self.max_cost, prices=self.prices, spent={})
        trial.spent = {model: list(tokens) for model, tokens in self.spent.items()}
        for model, (input_tokens, output_tokens) in planned.items():
            trial.add(model, input_tokens, output_tokens)
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
