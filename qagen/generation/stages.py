"""Drafting and critiquing a sample: one worker per call in flight, every result saved as it arrives."""

from __future__ import annotations

import asyncio
import itertools
import sys
from collections.abc import Iterable
from dataclasses import dataclass

from tqdm import tqdm

from qagen.config import CRITIC_ORDER, BuildConfig
from qagen.generation.critique import CRITIC_PROMPTS, critique_draft, critique_id
from qagen.generation.draft import QA_PROMPT, draft_id, draft_question
from qagen.llm.backends import ModelSettings
from qagen.llm.client import LLMClient, new_rate_limiter
from qagen.llm.cost import Budget, BudgetReachedError, price_for
from qagen.llm.prompts import Prompt, load_prompt
from qagen.records import Chunk, Criterion, Critique, Draft
from qagen.runs.concurrency import run_all
from qagen.runs.rundir import RunDir
from qagen.runs.store import RecordWriter


@dataclass(frozen=True)
class Prompts:
    """The prompts of a build, loaded from their files."""

    qa: Prompt
    critics: dict[Criterion, Prompt]

    @classmethod
    def load(cls) -> Prompts:
        return cls(
            qa=load_prompt(QA_PROMPT),
            critics={criterion: load_prompt(name) for criterion, name in CRITIC_PROMPTS.items()},
        )

    def hashes(self) -> dict[str, str]:
        return {self.qa.name: self.qa.sha256, **{p.name: p.sha256 for p in self.critics.values()}}


def _retry_on_resume(record: Draft | Critique | None) -> bool:
    """Missing, or failed without a reply (an API error): such a call was not paid for, so redo it."""
    return record is None or record.reason.startswith("api_error")


class LLMStages:
    """Drafting and critiquing over a sample, with every result appended as it arrives."""

    def __init__(
        self,
        config: BuildConfig,
        run: RunDir,
        prompts: Prompts,
        generator: LLMClient,
        critic: LLMClient,
    ) -> None:
        self.config = config
        self.run = run
        self.prompts = prompts
        self.generator = generator
        self.critic = critic
        self.drafts = run.drafts.load()
        self.critiques = run.critiques.load()
        self.budget = make_budget(config, itertools.chain(self.drafts.values(), self.critiques.values()))

    async def process(self, sample: list[Chunk], *, generate: bool, critique: bool, progress: bool) -> None:
        """Run the asked stages for every chunk, `concurrency` chunks at a time, in sampling order.

        A chunk's critiques start as soon as its draft exists; each worker keeps one call in
        flight, so the server sees exactly --concurrency calls at a time while work remains.
        """
        label = "drafting + critiquing" if generate and critique else "drafting" if generate else "critiquing"
        bar = tqdm(total=len(sample), desc=label, unit="chunk", disable=not progress, file=sys.stderr)
        queue: asyncio.Queue[Chunk] = asyncio.Queue()
        for chunk in sample:
            queue.put_nowait(chunk)
        with self.run.drafts.writer() as drafts_out, self.run.critiques.writer() as critiques_out:

            async def worker() -> None:
                while not queue.empty():
                    chunk = queue.get_nowait()
                    try:
                        await self._one_chunk(chunk, generate, critique, drafts_out, critiques_out)
                    except BudgetReachedError:
                        return  # the calls in flight elsewhere finish and are saved; no new ones start
                    bar.update(1)
                    bar.set_postfix(calls=self.generator.stats.calls + self._critic_calls(), refresh=False)

            await run_all([worker for _ in range(max(1, min(self.config.concurrency, len(sample))))])
        bar.close()

    def _critic_calls(self) -> int:
        return 0 if self.critic is self.generator else self.critic.stats.calls

    async def _one_chunk(
        self,
        chunk: Chunk,
        generate: bool,
        critique: bool,
        drafts_out: RecordWriter[Draft],
        critiques_out: RecordWriter[Critique],
    ) -> None:
        did = draft_id(chunk, self.prompts.qa, self.generator.settings.spec)
        draft = self.drafts.get(did)
        if generate and _retry_on_resume(draft):
            self._check_budget()
            draft = await draft_question(chunk, self.generator, self.prompts.qa)
            self._spend(draft)
            self.drafts[did] = draft
            drafts_out.append(draft)
        if not critique or draft is None or draft.status != "ok":
            return
        for criterion in CRITIC_ORDER:
            prompt = self.prompts.critics[criterion]
            cid = critique_id(draft, criterion, prompt, self.critic.settings.spec, self.config.audience)
            verdict = self.critiques.get(cid)
            if _retry_on_resume(verdict):
                self._check_budget()
                verdict = await critique_draft(criterion, draft, chunk, self.critic, prompt, self.config.audience)
                self._spend(verdict)
                self.critiques[cid] = verdict
                critiques_out.append(verdict)
            assert verdict is not None
            if self._settles_rejection(verdict):
                return

    def _check_budget(self) -> None:
        if self.budget is not None:
            self.budget.check()

    def _spend(self, record: Draft | Critique) -> None:
        if self.budget is not None:
            self.budget.add(record.model, record.usage.input_tokens, record.usage.output_tokens)

    def _settles_rejection(self, verdict: Critique) -> bool:
        """A low score rejects the draft whatever the other critics say, so they are not asked.

        A critique whose call failed stops the draft too: it is redone on the next run, and the
        critics after it are asked then, in order, exactly as in a run without the failure.
        """
        if verdict.reason.startswith("api_error"):
            return True
        if self.config.all_critics or verdict.score is None:
            return False
        return verdict.score < self.config.threshold(verdict.criterion)


def make_budget(config: BuildConfig, records: Iterable[Draft | Critique]) -> Budget | None:
    """The run's spending cap, counting what the run directory has spent already (None: no cap)."""
    if config.max_tokens is None and config.max_cost is None:
        return None
    models = {config.generator.spec, config.critic.spec}
    prices = {model: price_for(model, config.price_input, config.price_output) for model in models}
    spent: dict[str, tuple[int, int]] = {}
    for record in records:
        before = spent.get(record.model, (0, 0))
        spent[record.model] = (before[0] + record.usage.input_tokens, before[1] + record.usage.output_tokens)
    return Budget(max_tokens=config.max_tokens, max_cost=config.max_cost, prices=prices, spent=spent)


def make_clients(config: BuildConfig) -> tuple[LLMClient, LLMClient]:
    """Generator and critic clients sharing one bound on calls in flight (one client if identical)."""
    slots = asyncio.Semaphore(config.concurrency)
    limiter = new_rate_limiter(config.generator.rpm)  # --rpm sets both models' rpm alike

    def connect(settings: ModelSettings) -> LLMClient:
        return LLMClient.connect(
            settings,
            concurrency=config.concurrency,
            max_failure_rate=config.max_failure_rate,
            slots=slots,
            rate_limiter=limiter,
        )

    generator = connect(config.generator)
    return (generator, generator) if config.critic == config.generator else (generator, connect(config.critic))
