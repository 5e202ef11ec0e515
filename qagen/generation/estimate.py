"""What a build would still cost (`plan`, the CLI's dry run), before any call is made, and what
its run directory has spent already.

The estimate follows the build's own decisions over what the run directory holds: a draft stored
is not made again (unless its call failed in a way worth another, as the build redoes it); a
composed draft (a multi-hop question, `qagen.generation.compose`) costs a call for each part not
stored, one for each verdict of its parts' critics not stored (under checks vetting), and one to
compose them, none when what its parts' records decide ends it; a draft's critics are asked only
when it passed the free checks, in order, each stored verdict read as the build reads it (a low
score stops the critics after it). Only what is not stored yet is assumed: a part drafted or vetted
now passes, and each later critic is asked about `ASSUMED_PASS_RATE` of the drafts before it.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import ClassVar

from qagen.config import BuildConfig
from qagen.generation.critique import CriticTask, Drafted
from qagen.generation.draft import DraftTask
from qagen.generation.ledger import Ledger
from qagen.generation.passage_frame import Shown, frame
from qagen.generation.sample import Sample
from qagen.generation.summary import stage_usage
from qagen.generation.tasks import BuildTasks, TypeTasks, stops_the_critics
from qagen.llm.prompts import Prompt
from qagen.records import Draft, Passages
from qagen.runs.batch.journal import Journal
from qagen.runs.executor import finished, needs_call
from qagen.runs.rundir import RunDir

# Assumptions of the estimate, stated in its output. Tokens are estimated as characters / 4 (the
# usual figure for English with OpenAI's tokenizers; other scripts take more tokens per character).
CHARS_PER_TOKEN = 4.0
ASSUMED_QUESTION_CHARS = 120
ASSUMED_ANSWER_CHARS = 120
"""A drafted answer, as the composing call reads each part's."""
ASSUMED_OUTPUT_TOKENS = {"generation": 60, "critique": 80}
"""Per draft (a call of several pairs writes this for each) and per critique."""
ASSUMED_PASS_RATE = 0.8


def dollars(amount: float) -> str:
    """An amount as the estimate shows it: cents hide what a small run costs, so below a dollar
    four decimals."""
    return f"${amount:.4f}" if amount < 1 else f"${amount:,.2f}"


@dataclass(frozen=True)
class Spent:
    """The calls the run directory's records were paid for (a reply came, readable or not)."""

    calls: int
    input_tokens: int
    output_tokens: int
    cost: float | None
    """At the run's prices, calls answered in batches at batch prices; None when a price is unknown."""


@dataclass(frozen=True)
class Estimate:
    # The settings `describe()` names (as `QagenError.settings`: the CLI shows them as its flags).
    settings: ClassVar[tuple[str, ...]] = ("price_input", "price_output")

    drafts: int
    draft_calls: int
    """The calls that make the drafts: one a draft, a composed draft's parts and composing call, one for
    every `per_chunk` drafts of a call of several pairs."""
    critic_calls: float
    input_tokens: int
    output_tokens: int
    cost: float | None
    already_done: int
    repeated_input_tokens: int = 0
    """Of `input_tokens`, those repeating the opening of an earlier call about the same draft (its
    passages): what a server's prefix cache can serve; priced as input all the same, as a server may
    keep no cache."""
    batch: bool = False
    """Priced as batch work (half the online price)."""
    spent: Spent | None = None
    """What the run directory has paid for already (None: a new run)."""
    per_chunk: int = 1
    """The pairs a drafting call asks for, where the question type has a prompt for several (`per_chunk`)."""

    @property
    def calls(self) -> float:
        return self.draft_calls + self.critic_calls

    def _drafting_calls_note(self) -> str:
        if self.per_chunk > 1:
            return f" ({self.per_chunk} question/answer pairs a call, each pair a draft)"
        if self.draft_calls != self.drafts:
            return " (a multi-hop draft: a factoid of each passage, then the call that composes them)"
        return ""

    def describe(self) -> str:
        cost = dollars(self.cost) if self.cost is not None else "unknown (give `price_input`/`price_output`)"
        lines = [
            f"  drafts to make          {self.drafts:,} (already made: {self.already_done:,})",
            f"  drafting calls          {self.draft_calls:,}" + self._drafting_calls_note(),
            f"  critic calls (expected) {self.critic_calls:,.0f}",
            f"  LLM calls (expected)    {self.calls:,.0f}",
            f"  input tokens (approx.)  {self.input_tokens:,}"
            + (
                f" ({self.repeated_input_tokens:,} of them each draft's passages again, which a server's prefix "
                "cache can serve)"
                if self.repeated_input_tokens
                else ""
            ),
            f"  output tokens (approx.) {self.output_tokens:,}",
            f"  cost (approx.)          {cost}" + (" at batch prices (half the online price)" if self.batch else ""),
        ]
        if self.spent is not None and self.spent.calls:
            spent = self.spent
            paid = dollars(spent.cost) if spent.cost is not None else "price unknown"
            lines.append(f"  spent so far            {paid} ({spent.calls:,} calls)")
        lines.append(
            f"  assumed: {CHARS_PER_TOKEN:g} characters per token, {ASSUMED_PASS_RATE:.0%} of drafts passing each "
            f"critic, {ASSUMED_OUTPUT_TOKENS['generation']} output tokens per draft and "
            f"{ASSUMED_OUTPUT_TOKENS['critique']} per critique"
        )
        return "\n".join(lines)


class _Left:
    """Calls and input characters still to pay for, expected, and the characters of them that repeat the
    opening of an earlier call about the same draft (its passages: `passage_frame`)."""

    def __init__(self) -> None:
        self.drafts = 0
        self.draft_calls = 0
        self.draft_output_tokens = 0
        self.critic_calls = 0.0
        self.replies: set[str] = set()
        """The replies of several pairs already counted: one call for all its pairs."""
        self.input_chars = 0.0
        self.repeated_chars = 0.0

    def draft(self, config: BuildConfig, tasks: BuildTasks, item: Passages, ledger: Ledger) -> bool:
        """A draft to make, and its calls: of a composed draft, one for each part not stored (or stored
        with a failure worth another call), then those of its parts' critics (`part_critics`), then the
        composing call. False when what its parts stored decide ends it: nothing more is made, and no
        critic of its own asked."""
        task = tasks.of(item).draft
        if isinstance(task, DraftTask):
            if task.calls is None:
                self._call(task, item)
            else:
                reply = task.reply_key(item)
                if reply not in self.replies and finished(ledger.draft_store.get(reply)) is None:
                    self._call(task, item)  # stored, the reply is read again into the pair's draft: no call
                self.replies.add(reply)
            self.drafts += 1
            return True
        part_items = task.part_items(item)
        parts = [finished(ledger.draft_store.get(task.part.key(part))) for part in part_items]
        stored = tasks.judge_parts(item, parts, config, lambda key: finished(ledger.critique_store.get(key)))
        if stored is not None and stored.ends:
            return False
        for part_item, part in zip(part_items, parts, strict=True):
            if part is None:
                self._call(task.part, part_item)
        self.part_critics(config, tasks, item, parts, ledger)
        self.draft_calls += 1
        self.draft_output_tokens += ASSUMED_OUTPUT_TOKENS["generation"]
        self.input_chars += len(task.prompt.text) + len(part_items) * (ASSUMED_QUESTION_CHARS + ASSUMED_ANSWER_CHARS)
        self.drafts += 1
        return True

    def part_critics(
        self, config: BuildConfig, tasks: BuildTasks, item: Passages, parts: Sequence[Draft | None], ledger: Ledger
    ) -> None:
        """The calls of the parts' critics (`TypeTasks.part_critics`), asked of each part together: every one
        of a part drafted now (assumed past its free checks), and of a stored part those whose verdict is
        not stored (or is worth another call)."""
        of_type = tasks.of(item)
        compose = of_type.compose
        assert compose is not None, "only a composed draft has parts"
        for part, part_item in zip(parts, compose.part_items(item), strict=True):
            drafted = None if part is None else tasks.drafted(part, part_item, of_type.part_critics)
            for critic in of_type.part_critics:
                if drafted is None or finished(ledger.critique_store.get(critic.key(drafted))) is None:
                    # Opened with the passage just before it when the part was drafted now (its drafting call).
                    self.critics(config, (critic,), part_item, opened=part is None and compose.part.frames(part_item))

    def _call(self, task: DraftTask, item: Passages) -> None:
        self.draft_calls += 1
        self.draft_output_tokens += task.per_chunk * ASSUMED_OUTPUT_TOKENS["generation"]
        self.input_chars += _message_chars(task.prompt, task.shown(item), item, framed=task.frames(item))

    def critics(
        self, config: BuildConfig, critics: Sequence[CriticTask], item: Passages, *, share: float = 1.0, opened: bool
    ) -> None:
        """Critics of a draft, each asked about a share of the drafts (the first `share`); `opened`: a
        call about the draft opened with its passages just before them (its drafting call)."""
        for critic in critics:
            framed = critic.frames(item)
            self.critic_calls += share
            message = _message_chars(critic.prompt, critic.shown(item), item, framed=framed)
            self.input_chars += share * (message + ASSUMED_QUESTION_CHARS)
            if framed:
                if opened:
                    self.repeated_chars += share * len(frame(item))
                opened = True
            share = share if config.all_critics else share * ASSUMED_PASS_RATE


def _message_chars(prompt: Prompt, shown: Mapping[str, Shown], item: Passages, *, framed: bool) -> int:
    """The characters of a call's message, before the question and answer are known: the passages
    once, in the frame (`framed`) or in place (`passage_frame.render`), and the prompt's own text."""
    if framed:
        return len(frame(item)) + len(prompt.text)
    return len(prompt.text) + sum(len(placeholder.text) for placeholder in shown.values())


def estimate(
    config: BuildConfig,
    run: RunDir,
    tasks: BuildTasks,
    sample: Sample,
    *,
    batch: bool = False,
    records: RunDir | None = None,
) -> Estimate:
    """Calls and tokens still to spend on `sample`, skipping what `records` (default: `run`) holds.

    `tasks` must be made with `run`'s chunks when a critic reads what a search finds
    (`BuildTasks.for_config`), so that its stored verdicts are found.
    """
    records = records or run
    ledger = Ledger.read(records)
    try:
        left = _Left()
        for item in sample:
            of_type = tasks.of(item)
            draft = ledger.draft_store.get(tasks.draft_key(item))
            if draft is None or needs_call(draft):
                if left.draft(config, tasks, item, ledger):
                    left.critics(config, of_type.critics, item, opened=of_type.draft.frames(item))
            elif tasks.reaches_the_critics(draft, item, config, lambda key: finished(ledger.critique_store.get(key))):
                if draft.parts:  # a stage that drafted alone left the parts' critics to the next
                    left.part_critics(config, tasks, item, draft.parts, ledger)
                _stored_critics(config, tasks.drafted(draft, item), of_type, ledger, left)
        spent = _spent(config, records, ledger) if records.exists() else None
    finally:
        ledger.close()
    input_tokens = int(left.input_chars / CHARS_PER_TOKEN)
    repeated_tokens = int(left.repeated_chars / CHARS_PER_TOKEN)
    critic_output_tokens = int(left.critic_calls * ASSUMED_OUTPUT_TOKENS["critique"])
    output_tokens = left.draft_output_tokens + critic_output_tokens
    generator_price = config.price(config.generator.spec)
    critic_price = config.price(config.critic.spec)
    if batch and generator_price is not None and critic_price is not None:
        generator_price, critic_price = generator_price.batch(), critic_price.batch()
    cost = None
    if generator_price is not None and critic_price is not None:
        # Split the input tokens by stage in proportion to calls: close enough for an estimate.
        share = left.draft_calls / max(left.draft_calls + left.critic_calls, 1)
        cost = generator_price.cost(int(input_tokens * share), left.draft_output_tokens) + critic_price.cost(
            int(input_tokens * (1 - share)), critic_output_tokens
        )
    return Estimate(
        drafts=left.drafts,
        draft_calls=left.draft_calls,
        critic_calls=left.critic_calls,
        input_tokens=input_tokens,
        output_tokens=output_tokens,
        cost=cost,
        already_done=len(sample) - left.drafts,
        repeated_input_tokens=repeated_tokens,
        batch=batch,
        spent=spent,
        per_chunk=max(
            (tt.draft.per_chunk for tt in tasks.types.values() if isinstance(tt.draft, DraftTask)), default=1
        ),
    )


def _stored_critics(config: BuildConfig, drafted: Drafted, of_type: TypeTasks, ledger: Ledger, left: _Left) -> None:
    """The critics of a stored draft, walked as the build walks them: a verdict stored is read (a
    low score stops the ones after it); from the first one missing on, they are expected."""
    for position, critic in enumerate(of_type.critics):
        verdict = ledger.critique_store.get(critic.key(drafted))
        if verdict is None or needs_call(verdict):
            # A call of an earlier session opened with the passages: no cache is assumed to hold them still.
            left.critics(config, of_type.critics[position:], drafted.passages, opened=False)
            return
        if stops_the_critics(verdict, config):
            return


def _spent(config: BuildConfig, run: RunDir, ledger: Ledger) -> Spent:
    """Every call the run's records were paid for, priced as the build's summary prices them."""
    drafts, critiques = ledger.paid_for(None, Journal(run.root).batched)
    stages = [stage_usage(config.generator.spec, drafts, config), stage_usage(config.critic.spec, critiques, config)]
    costs = [stage.cost_usd for stage in stages]
    return Spent(
        calls=sum(stage.calls for stage in stages),
        input_tokens=sum(stage.input_tokens for stage in stages),
        output_tokens=sum(stage.output_tokens for stage in stages),
        cost=None if None in costs else sum(cost for cost in costs if cost is not None),
    )
