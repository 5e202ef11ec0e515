"""What a build would cost (`plan`, the CLI's dry run), before any call is made."""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

from qagen.config import BuildConfig
from qagen.generation.critique import Drafted
from qagen.generation.sample import Sample
from qagen.generation.tasks import BuildTasks
from qagen.llm.cost import price_for
from qagen.runs.rundir import RunDir

# Assumptions of the estimate, stated in its output. Tokens are estimated as characters / 4 (the
# usual figure for English with OpenAI's tokenizers; other scripts take more tokens per character).
CHARS_PER_TOKEN = 4.0
ASSUMED_QUESTION_CHARS = 120
ASSUMED_OUTPUT_TOKENS = {"generation": 60, "critique": 80}
ASSUMED_PASS_RATE = 0.8


@dataclass(frozen=True)
class Estimate:
    # The settings `describe()` names (as `QagenError.settings`: the CLI shows them as its flags).
    settings: ClassVar[tuple[str, ...]] = ("price_input", "price_output")

    drafts: int
    critic_calls: float
    input_tokens: int
    output_tokens: int
    cost: float | None
    already_done: int
    batch: bool = False
    """Priced as batch work (half the online price)."""

    @property
    def calls(self) -> float:
        return self.drafts + self.critic_calls

    def describe(self) -> str:
        cost = f"${self.cost:,.2f}" if self.cost is not None else "unknown (give `price_input`/`price_output`)"
        return "\n".join(
            [
                f"  drafts to make          {self.drafts:,} (already made: {self.already_done:,})",
                f"  critic calls (expected) {self.critic_calls:,.0f}",
                f"  LLM calls (expected)    {self.calls:,.0f}",
                f"  input tokens (approx.)  {self.input_tokens:,}",
                f"  output tokens (approx.) {self.output_tokens:,}",
                f"  cost (approx.)          {cost}"
                + (" at batch prices (half the online price)" if self.batch else ""),
                f"  assumed: {CHARS_PER_TOKEN:g} characters per token, {ASSUMED_PASS_RATE:.0%} of drafts passing each "
                f"critic, {ASSUMED_OUTPUT_TOKENS['generation']} output tokens per draft and "
                f"{ASSUMED_OUTPUT_TOKENS['critique']} per critique",
            ]
        )


def estimate(config: BuildConfig, run: RunDir, tasks: BuildTasks, sample: Sample, *, batch: bool = False) -> Estimate:
    """Calls and tokens still to spend on `sample`, skipping what the run directory already holds."""
    drafts = run.drafts.load()
    critiques = run.critiques.load()
    to_draft = [item for item in sample if tasks.draft_key(item) not in drafts]
    input_chars = 0.0
    critic_calls = 0.0
    for item in to_draft:
        of_type = tasks.of(item)
        passages = sum(len(chunk.text) for chunk in item.chunks)
        input_chars += len(of_type.draft.prompt.text) + passages
        # Critics are asked in order and stop at the first rejection (unless `all_critics`), so the
        # k-th critic is asked about pass_rate**(k-1) of the drafts.
        for k, critic in enumerate(of_type.critics):
            share = 1.0 if config.all_critics else ASSUMED_PASS_RATE**k
            critic_calls += share
            context = passages if "context" in critic.prompt.variables else 0
            input_chars += share * (len(critic.prompt.text) + ASSUMED_QUESTION_CHARS + context)
    # Drafts already made may still need their critiques; count those critics too (all of them,
    # an upper bound, since their verdicts so far are not examined here). A critic that reads what a
    # search finds is counted as not asked yet (the search is not run for an estimate).
    for item in sample:
        draft = drafts.get(tasks.draft_key(item))
        if draft is None or not draft.ok:
            continue
        for critic in tasks.of(item).critics:
            if critic.reads_retrieved or critic.key(Drafted(draft, item)) not in critiques:
                critic_calls += 1
                input_chars += len(critic.prompt.text) + ASSUMED_QUESTION_CHARS
    input_tokens = int(input_chars / CHARS_PER_TOKEN)
    output_tokens = int(
        len(to_draft) * ASSUMED_OUTPUT_TOKENS["generation"] + critic_calls * ASSUMED_OUTPUT_TOKENS["critique"]
    )
    generator_price = price_for(config.generator.spec, config.price_input, config.price_output)
    critic_price = price_for(config.critic.spec, config.price_input, config.price_output)
    if batch and generator_price is not None and critic_price is not None:
        generator_price, critic_price = generator_price.batch(), critic_price.batch()
    cost = None
    if generator_price is not None and critic_price is not None:
        # Split the tokens by stage in proportion to calls: close enough for an estimate.
        share = len(to_draft) / max(len(to_draft) + critic_calls, 1)
        cost = generator_price.cost(int(input_tokens * share), int(output_tokens * share)) + critic_price.cost(
            int(input_tokens * (1 - share)), int(output_tokens * (1 - share))
        )
    return Estimate(
        drafts=len(to_draft),
        critic_calls=critic_calls,
        input_tokens=input_tokens,
        output_tokens=output_tokens,
        cost=cost,
        already_done=len(sample) - len(to_draft),
        batch=batch,
    )
