"""The one client factory: every role's client (generator, critic, reader, judge) from one place.

Whatever the roles, a run has one bound on calls in flight (`concurrency`) and one
requests-per-minute limiter (`rpm`), shared by all its clients, so `concurrency=N` means at most
N calls at a time across every model of the run. Roles given identical settings share one client
(and so one connection pool and one set of counts).

A role's model may be given as a `ModelSettings`, a spec string (`openai:gpt-4o-mini`), a
LangChain chat model you made yourself, or a ready `LLMClient` (tests of logic need no server).
"""

from __future__ import annotations

import asyncio
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from qagen.errors import ConfigError
from qagen.llm.backends import LangChainBackend, ModelSettings, build_backend
from qagen.llm.client import LLMClient
from qagen.llm.task import Role

ModelLike = ModelSettings | str | LLMClient | Any
"""How a role's model can be named: settings, a spec, a ready client, or a LangChain chat model."""


@dataclass(frozen=True)
class CallLimits:
    """How fast a run may call its models: shared by every role."""

    concurrency: int = 16
    """Calls in flight at most, across all roles."""
    rpm: float | None = None
    """Requests per minute at most, across all roles (None: no limit)."""
    max_failure_rate: float = 0.5
    """Stop the run when more than this share of a model's calls fail even after retries."""

    def __post_init__(self) -> None:
        if self.concurrency < 1:
            raise ConfigError(f"`concurrency` must be at least 1, got {self.concurrency}.", settings=("concurrency",))
        if self.rpm is not None and self.rpm <= 0:
            raise ConfigError(f"`rpm` must be positive, got {self.rpm}.", settings=("rpm",))
        if not 0 <= self.max_failure_rate <= 1:
            raise ConfigError(
                f"`max_failure_rate` must be between 0 and 1, got {self.max_failure_rate}.",
                settings=("max_failure_rate",),
            )


def as_settings(model: ModelSettings | str | None) -> ModelSettings | None:
    """`ModelSettings` from a spec string (None stays None)."""
    return ModelSettings(spec=model) if isinstance(model, str) else model


def model_spec(model: ModelLike) -> str:
    """The spec string a model is known by in records and keys, whatever form it was given in."""
    if isinstance(model, str):
        return model
    if isinstance(model, ModelSettings):
        return model.spec
    if isinstance(model, LLMClient):
        return model.settings.spec
    name = getattr(model, "model_name", None) or getattr(model, "model", None) or type(model).__name__
    return f"langchain:{name}"


class Clients:
    """The clients of one run, by role. Make it inside the event loop that will use it; `aclose` it."""

    def __init__(self, by_role: Mapping[Role, LLMClient]) -> None:
        self._by_role = dict(by_role)

    @classmethod
    def connect(cls, models: Mapping[Role, ModelLike], limits: CallLimits) -> Clients:
        """One client per distinct model, all sharing one bound on calls in flight and one rpm limiter."""
        slots = asyncio.Semaphore(limits.concurrency)
        limiter = new_rate_limiter(limits.rpm)
        made: dict[Any, LLMClient] = {}
        by_role: dict[Role, LLMClient] = {}
        for role, model in models.items():
            # Equal settings are one model (a spec is its settings); a ready object is itself.
            identity: Any = as_settings(model) if isinstance(model, (ModelSettings, str)) else id(model)
            if identity not in made:
                made[identity] = _client(model, limits, slots, limiter)
            by_role[role] = made[identity]
        return cls(by_role)

    def __getitem__(self, role: Role) -> LLMClient:
        try:
            return self._by_role[role]
        except KeyError:
            raise ConfigError(f"No model was given for the {role}.") from None

    def with_role(self, role: Role, client: LLMClient) -> Clients:
        """These clients, with `role` played by `client` (a client made elsewhere, e.g. a system's own)."""
        return Clients({**self._by_role, role: client})

    def get(self, role: Role) -> LLMClient | None:
        """The role's client, or None when the run has no model for it."""
        return self._by_role.get(role)

    def distinct(self) -> list[LLMClient]:
        """Each client once (roles may share one)."""
        unique: dict[int, LLMClient] = {}
        for client in self._by_role.values():
            unique.setdefault(id(client), client)
        return list(unique.values())

    def longest_wait(self) -> float:
        """Seconds the oldest call in flight, of any role, has waited so far."""
        return max((client.longest_wait() for client in self.distinct()), default=0.0)

    @property
    def calls(self) -> int:
        """Calls made so far, all clients together."""
        return sum(client.stats.calls for client in self.distinct())

    def check_failure_rates(self) -> None:
        """Raise when a model's calls of this run failed more often than `max_failure_rate` allows
        (during a run the check waits for 20 calls; at its end, every call counts)."""
        for client in self.distinct():
            client.check_failure_rate()

    async def aclose(self) -> None:
        for client in self.distinct():
            await client.aclose()


def _client(model: ModelLike, limits: CallLimits, slots: asyncio.Semaphore, limiter: Any) -> LLMClient:
    options: dict[str, Any] = {
        "concurrency": limits.concurrency,
        "max_failure_rate": limits.max_failure_rate,
        "slots": slots,
        "rate_limiter": limiter,
    }
    if isinstance(model, LLMClient):
        # A ready client keeps its own backend, and joins the run's bound on calls in flight.
        return LLMClient(model.backend, model.settings, **options)
    if isinstance(model, (ModelSettings, str)):
        settings = as_settings(model)
        assert settings is not None
        return LLMClient(build_backend(settings, connections=limits.concurrency), settings, **options)
    if not hasattr(model, "ainvoke"):
        raise ConfigError(
            f"Cannot use {type(model).__name__} as a model: give a spec such as 'openai:gpt-4o-mini', "
            "a ModelSettings, or a LangChain chat model."
        )
    return LLMClient(LangChainBackend(model), ModelSettings(spec=model_spec(model)), **options)


def new_rate_limiter(rpm: float | None) -> Any:
    """LangChain's token-bucket limiter for `rpm` requests per minute (None: no limit)."""
    if rpm is None:
        return None
    if rpm <= 0:
        raise ConfigError(f"`rpm` must be positive, got {rpm}.", settings=("rpm",))
    from langchain_core.rate_limiters import InMemoryRateLimiter

    return InMemoryRateLimiter(requests_per_second=rpm / 60.0, check_every_n_seconds=0.01, max_bucket_size=1)
