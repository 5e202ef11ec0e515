"""The LLM work of a build: its tasks (one draft task, the critics in the order they are asked) and
the one place their dependencies are stated (`BuildFlow`).

The dependencies: a chunk's critics are asked after its draft, and only when the draft parsed and
passed the checks that cost no call (`qagen.generation.checks.precheck`);
cheapest first (the two that read only the question before the one that also reads the chunk);
a low score stops the critics after it (unless `all_critics`), and so does a critic call that
failed, which is redone on the next run together with the critics after it, in order, exactly as
in a run without the failure.
"""

from __future__ import annotations

from collections.abc import Collection
from dataclasses import dataclass
from pathlib import Path

from qagen.config import BUILD_ROLES, BuildConfig, BuildRole
from qagen.critics import check_prompt
from qagen.generation.checks.precheck import precheck
from qagen.generation.critique import CriticTask, Drafted
from qagen.generation.draft import QA_PROMPT, DraftTask
from qagen.generation.ledger import Ledger
from qagen.llm.cost import Budget, price_for
from qagen.llm.prompts import load_prompts
from qagen.records import Chunk, Critique
from qagen.runs.executor import Executor


@dataclass(frozen=True)
class BuildTasks:
    """The draft task and the critics of a build, critics in the order they are asked."""

    draft: DraftTask
    critics: tuple[CriticTask, ...]

    @classmethod
    def for_config(cls, config: BuildConfig) -> BuildTasks:
        """The build's tasks (its critics: `config.critic_registry()`, in the order they are asked), with
        the prompts of `config.prompts_dir` replacing the bundled ones."""
        specs = config.critic_registry().asked()
        prompts = load_prompts(
            [QA_PROMPT, *(spec.prompt for spec in specs if not spec.from_prompts_dir)],
            Path(config.prompts_dir) if config.prompts_dir else None,
            own=[spec.prompt for spec in specs if spec.from_prompts_dir],
            defaults_in={spec.prompt: Path(spec.prompt_folder) for spec in specs if spec.prompt_folder},
        )
        for spec in specs:
            check_prompt(spec, prompts[spec.prompt])
        critics = tuple(
            CriticTask(spec.name, config.critic.spec, prompts[spec.prompt], {"audience": config.audience})
            for spec in specs
        )
        return cls(DraftTask(config.generator.spec, prompts[QA_PROMPT]), critics)

    def critic(self, criterion: str) -> CriticTask:
        return next(task for task in self.critics if task.criterion == criterion)

    def prompt_hashes(self, roles: Collection[BuildRole] = BUILD_ROLES) -> dict[str, str | None]:
        """Every prompt's full sha256, by prompt name (the run fingerprint holds them); None for the
        prompts of a role not in `roles` (not decided yet: see `BuildConfig.fingerprint`)."""
        # Critics by name, so the order does not follow the order they are asked in.
        critics = sorted(self.critics, key=lambda critic: critic.criterion)
        hashes: dict[str, str | None] = {}
        for role, prompts in (
            ("generator", self.draft.prompts),
            ("critic", [prompt for critic in critics for prompt in critic.prompts]),
        ):
            hashes.update({prompt.name: prompt.sha256 if role in roles else None for prompt in prompts})
        return hashes


class BuildFlow:
    """Drafts and critiques chunks through an executor, every record stored as it arrives.

    Stored records come from the ledger without their replies (`qagen.generation.ledger`): all
    the decisions here need, at a tenth of the memory.
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
        self.drafts = ledger.draft_store
        self.critiques = ledger.critique_store
        self.generate = generate
        self.critique = critique

    async def __call__(self, chunk: Chunk) -> None:
        draft = (
            await self.executor.run(self.tasks.draft, chunk, self.drafts)
            if self.generate
            else self.drafts.get(self.tasks.draft.key(chunk))
        )
        if not self.critique or draft is None or not draft.ok:
            return
        if precheck(draft, chunk, self.config).reason is not None:
            return  # a draft a free check rejects (`checks.precheck`) costs no critic
        for critic in self.tasks.critics:
            verdict = await self.executor.run(critic, Drafted(draft, chunk), self.critiques)
            if self._stops_the_critics(verdict):
                return

    def _stops_the_critics(self, verdict: Critique) -> bool:
        """A low score rejects the draft whatever the others say, so they are not asked; a failed
        call stops them until the next run (see the module's docstring)."""
        if verdict.failure is not None and verdict.failure.is_call_failure:
            return True
        if self.config.all_critics or verdict.score is None:
            return False
        return verdict.score < self.config.threshold(verdict.criterion)


def make_budget(config: BuildConfig, spent: dict[str, tuple[int, int]], *, batch: bool = False) -> Budget | None:
    """The run's spending cap, counting what the run directory has spent already (`Ledger.spent`;
    None: no cap); at batch prices in batch mode."""
    if config.max_tokens is None and config.max_cost is None:
        return None
    models = {config.generator.spec, config.critic.spec}
    prices = {model: price_for(model, config.price_input, config.price_output) for model in models}
    if batch:
        prices = {model: price.batch() if price else None for model, price in prices.items()}
    return Budget(max_tokens=config.max_tokens, max_cost=config.max_cost, prices=prices, spent=dict(spent))


def label(generate: bool, critique: bool) -> str:
    """The progress bar's label for the stages asked."""
    return "drafting + critiquing" if generate and critique else "drafting" if generate else "critiquing"
