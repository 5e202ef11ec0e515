"""The LLM work of a build: its tasks (one draft task, the critics in the order they are asked) and
the one place their dependencies are stated (`BuildFlow`).

The dependencies: a chunk's critics are asked after its draft, and only when the draft parsed;
cheapest first (the two that read only the question before the one that also reads the chunk);
a low score stops the critics after it (unless `all_critics`), and so does a critic call that
failed, which is redone on the next run together with the critics after it, in order, exactly as
in a run without the failure.
"""

from __future__ import annotations

from dataclasses import dataclass

from qagen.config import CRITIC_ORDER, BuildConfig
from qagen.generation.critique import CriticTask, Drafted
from qagen.generation.draft import DraftTask
from qagen.generation.ledger import CritiqueState, Ledger
from qagen.llm.cost import Budget, price_for
from qagen.records import Chunk, Draft
from qagen.runs.executor import Executor


@dataclass(frozen=True)
class BuildTasks:
    """The draft task and the critics of a build, critics in the order they are asked."""

    draft: DraftTask
    critics: tuple[CriticTask, ...]

    @classmethod
    def for_config(cls, config: BuildConfig) -> BuildTasks:
        critics = tuple(
            CriticTask.default(criterion, config.critic.spec, audience=config.audience) for criterion in CRITIC_ORDER
        )
        return cls(DraftTask(config.generator.spec), critics)

    def critic(self, criterion: str) -> CriticTask:
        return next(task for task in self.critics if task.criterion == criterion)

    def prompt_hashes(self) -> dict[str, str]:
        """Every prompt's full sha256, by prompt name (the run fingerprint holds them)."""
        # Critics by name, so the order does not follow the order they are asked in.
        critics = sorted(self.critics, key=lambda critic: critic.criterion)
        prompts = [*self.draft.prompts, *(prompt for critic in critics for prompt in critic.prompts)]
        return {prompt.name: prompt.sha256 for prompt in prompts}


_BLANK_DRAFT = Draft(id="", chunk_id="", model="", prompt_hash="")


class BuildFlow:
    """Drafts and critiques chunks through an executor, every record stored as it arrives.

    It decides from the ledger's small states, never from whole stored records (see
    `qagen.generation.ledger`); a record made now is used whole, then only its state is kept.
    """

    def __init__(
        self,
        tasks: BuildTasks,
        config: BuildConfig,
        executor: Executor,
        ledger: Ledger,
        *,
        generate: bool = True,
        critique: bool = True,
    ) -> None:
        self.tasks = tasks
        self.config = config
        self.executor = executor
        self.ledger = ledger
        self.generate = generate
        self.critique = critique

    async def __call__(self, chunk: Chunk) -> None:
        draft = await self._draft(chunk)
        if not self.critique or draft is None or self.config.too_long(draft):
            return  # a draft that is no factoid (see `BuildConfig.too_long`) costs no critic
        drafted = Drafted(draft, chunk)
        for critic in self.tasks.critics:
            verdict = self.ledger.critiques.state(critic.key(drafted))
            if verdict is None or verdict.retry:
                verdict = self.ledger.critiques.add(await self.executor.ask(critic, drafted))
                self.ledger.retry_later += verdict.retry
            if self._stops_the_critics(critic.criterion, verdict):
                return

    async def _draft(self, chunk: Chunk) -> Draft | None:
        """The chunk's draft when it parsed (made now if it is missing or its call failed); else None."""
        task = self.tasks.draft
        key = task.key(chunk)
        stored = self.ledger.drafts.state(key)
        if self.generate and (stored is None or stored.retry):
            draft = await self.executor.ask(task, chunk)
            self.ledger.retry_later += self.ledger.drafts.add(draft).retry
            return draft if draft.ok else None
        if stored is None or not stored.ok:
            return None
        # What the critics and the length check read of a stored draft; its reply stays in the log.
        # (A copy of a blank draft: `model_copy` is several times cheaper than `model_construct`.)
        fields = {"id": key, "chunk_id": chunk.id, "model": stored.model, "prompt_hash": task.prompt.hash}
        return _BLANK_DRAFT.model_copy(update={**fields, "question": stored.question, "answer": stored.answer})

    def _stops_the_critics(self, criterion: str, verdict: CritiqueState) -> bool:
        """A low score rejects the draft whatever the others say, so they are not asked; a failed
        call stops them until the next run (see the module's docstring)."""
        if verdict.call_failure:
            return True
        if self.config.all_critics or verdict.score is None:
            return False
        return verdict.score < self.config.threshold(criterion)


def make_budget(config: BuildConfig, spent: dict[str, tuple[int, int]]) -> Budget | None:
    """The run's spending cap, counting what the run directory has spent already (`Ledger.spent`;
    None: no cap)."""
    if config.max_tokens is None and config.max_cost is None:
        return None
    models = {config.generator.spec, config.critic.spec}
    prices = {model: price_for(model, config.price_input, config.price_output) for model in models}
    return Budget(max_tokens=config.max_tokens, max_cost=config.max_cost, prices=prices, spent=dict(spent))


def label(generate: bool, critique: bool) -> str:
    """The progress bar's label for the stages asked."""
    return "drafting + critiquing" if generate and critique else "drafting" if generate else "critiquing"
