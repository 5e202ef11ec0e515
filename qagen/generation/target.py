"""A build to a target size (`BuildConfig.target`): how many drafts each round asks of each question
type, which of the drafts that pass are kept, and how a shortfall is said.

Each type's part of the target is the target split by the shares (`apportion`). A round asks each
type that is short of its part for enough drafts to make up the difference at the pass rate seen
so far, estimated as (passed + 1) / (decided + 2) (Laplace's rule of succession: one half before
any draft is decided, so the first round asks for twice the target). The rounds stop when every
type has its part, when the draft budget (`max_drafts`, 4 x the target unless given) is spent, or
when the corpus has no passages left for the types still short; a spending cap stops them as it
stops any build.

A round only extends each type's sample (the passage pickers give a prefix of one fixed order), so
every draft already paid for stays in it, and the plan of the round under way is written to the
run directory (`rounds.json`) before its calls, with the parts and the budget it was sized for: a
build that is stopped and run again with them asks for the same round, whose finished calls are
records already, then sizes the next ones from what passed. The other commands (`qagen stage
filter`, `critique`) read the same plan, so they see the sample the build drafted.

Run again with another target, other shares or another budget, or over a round that holds more
passages than the budget (a `rounds.json` edited by hand), the stored round is sized anew
(`replan`): from each type's longest run of decided drafts at the head of its sample, a type that
has its part there keeps the fewest of them that hold it, one short asks for more at the pass rate
seen there, and the whole is held within the budget. A larger target so starts from the pass rate
measured, a lower one or a lower budget stops where it is met. A dry run prices the round the build
would start with (`start_plan`).

When more drafts pass than a type's part, the part is chosen deterministically from them: round
robin over their source documents, in an order drawn from the seed, so the kept questions cover
the documents as evenly as the drafts allow. The others are rejected as `over_target`.

With a certified precision (`filter.precision`), a draft passes when it passes the threshold the labels
certify as well (`qagen.generation.pipeline.certified_settings`): the rounds are sized by the pass rate at
it, and the target is reached when that many drafts pass it (`qagen.review.certify` says why the drafts of
later rounds are held to a threshold certified from labels of earlier ones). When the labels certify
nothing, the rounds count the checks' own cuts, and the summary says nothing is certified.
"""

from __future__ import annotations

import json
import math
import random
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import NamedTuple

from qagen.config import BuildConfig
from qagen.errors import QagenError
from qagen.question_types import apportion, draft_counts
from qagen.question_types.pickers import type_seed
from qagen.records import BuildSummary, Certified, Funnel, TargetOutcome, TypeFunnel
from qagen.runs.rundir import RunDir
from qagen.runs.store import write_json_atomic
from qagen.words import plural

OVER_TARGET = "over_target"
"""The reason of a draft that passed every filter but was not chosen: its type had its part already."""
DRAFT_BUDGET_PER_QUESTION = 4
"""`max_drafts` unless given: drafts per question of the target."""
SHORTFALL_SETTINGS = ("max_drafts", "target")
"""The settings a shortfall names (as `QagenError.settings`: the CLI shows them as its flags)."""
REASONS_SAID = 3
"""The commonest rejection reasons a shortfall names per question type."""


class Plan(NamedTuple):
    """The drafts a round asks of each question type (cumulative: the sample's size), and which round it is."""

    drafts: dict[str, int]
    round: int


class Recorded(NamedTuple):
    """The round a run directory is at, and what it was sized for (None: a file of an older qagen)."""

    plan: Plan
    parts: dict[str, int] | None
    """Each type's part of the target the round was sized for."""
    budget: int | None
    """The draft budget it was sized within."""


class Passed(NamedTuple):
    """A draft that passed every filter: one to choose from."""

    id: str
    question_type: str
    source_doc: str


def type_targets(config: BuildConfig) -> dict[str, int]:
    """Each question type's part of the target: the target split by the shares."""
    assert config.target is not None, "type_targets of a build without a target"
    return draft_counts(config.question_types, config.target)


def left_out(config: BuildConfig) -> str | None:
    """A sentence on the question types whose share of the target rounds to no question (`type_targets`):
    they get none, said rather than silently dropped; None when each type gets one at least."""
    targets = type_targets(config)
    names = [name for name, part in targets.items() if part == 0]
    if not names:
        return None
    shares = ", ".join(f"{name} ({config.question_types[name]}%)" for name in names)
    smallest = min(config.question_types[name] for name in names)
    enough = math.ceil(100 / smallest)  # from this target on, the smallest share is one question at least
    return (
        f"a target of {config.target} gives no question to {shares}: split by the shares, it rounds to 0 for "
        f"{plural(len(names), 'it', 'them')}; a target of {enough} or more gives each type one at least."
    )


def draft_budget(config: BuildConfig) -> int:
    """The most drafts the build makes: `max_drafts`, or `DRAFT_BUDGET_PER_QUESTION` x the target."""
    assert config.target is not None, "draft_budget of a build without a target"
    return config.max_drafts if config.max_drafts is not None else DRAFT_BUDGET_PER_QUESTION * config.target


def _wanted(need: int, passed: int, decided: int) -> int:
    """The drafts that make up `need` more passing ones at the pass rate seen (see the module)."""
    return math.ceil(need * (decided + 2) / (passed + 1))


def _within(budget: int, wants: Mapping[str, int]) -> dict[str, int]:
    """The drafts wanted of each type, scaled down in proportion when they exceed the budget."""
    total = sum(wants.values())
    if total <= budget:
        return dict(wants)
    return apportion(max(budget, 0), wants)


def first_plan(config: BuildConfig) -> Plan:
    """The first round: enough drafts for each type's part at the assumed pass rate, within the budget."""
    targets = type_targets(config)
    return Plan(_within(draft_budget(config), {name: _wanted(n, 0, 0) for name, n in targets.items()}), 1)


def start_plan(
    config: BuildConfig, recorded: Recorded | None, sampled: int, statuses: Callable[[], Mapping[str, Sequence[str]]]
) -> Plan:
    """Where a build starts: the round the run directory was at, to go on with it (every draft of it
    stays in the sample), unless it was sized for another target, other shares or another budget, or
    its sample (`sampled` drafts) is over the budget: then that round sized anew (`replan`) from the
    fates of its drafts (`statuses`, asked only then: it reads every record).

    `recorded`: the run directory's round (`read_round`), None on a new run."""
    if recorded is None:
        return first_plan(config)
    sized_for = recorded.parts in (None, type_targets(config)) and recorded.budget in (None, draft_budget(config))
    if sized_for and sampled <= draft_budget(config):
        return recorded.plan
    return replan(config, recorded.plan, statuses())


def replan(config: BuildConfig, plan: Plan, statuses: Mapping[str, Sequence[str]]) -> Plan:
    """The round `plan` sized anew for `config`'s target and budget, from each type's candidates'
    statuses in sampling order (`kept`: passed every filter; `undecided`: a call it needs was never
    made; see the module). The same round when that changes nothing, else the next one."""
    made: dict[str, int] = {}
    """The drafts of each type the new round keeps of the old: what counts against the budget."""
    wants: dict[str, int] = {}
    out_of_passages: set[str] = set()
    for name, part in type_targets(config).items():
        fates = list(statuses.get(name, ()))
        decided = next((at for at, status in enumerate(fates) if status == "undecided"), len(fates))
        passed = [at + 1 for at, status in enumerate(fates[:decided]) if status == "kept"]
        if len(passed) >= part:
            made[name] = passed[part - 1] if part else 0  # the fewest drafts that hold its part
            continue
        made[name] = decided
        if decided == len(fates) < plan.drafts.get(name, 0):
            out_of_passages.add(name)  # every passage the corpus gave it is decided: no more to draft
        else:
            wants[name] = _wanted(part - len(passed), len(passed), decided)
    budget = draft_budget(config)
    if sum(made.values()) >= budget:
        drafts = _within(budget, made)
    else:
        more = _within(budget - sum(made.values()), wants)
        drafts = {name: n + more.get(name, 0) for name, n in made.items()}
    for name in out_of_passages:
        if drafts[name] == made[name]:
            # Asked as before (no type's ask is over the budget): the same sample, and the same shortfall said.
            drafts[name] = min(plan.drafts[name], budget)
    return plan if drafts == plan.drafts else Plan(drafts, plan.round + 1)


def planned_drafts(config: BuildConfig, run: RunDir) -> dict[str, int]:
    """The drafts asked of each type by the run's latest round, or by the first one on a new run."""
    recorded = recorded_plan(run)
    first = first_plan(config)
    if recorded is None:
        return first.drafts
    return {name: recorded.drafts.get(name, first.drafts[name]) for name in first.drafts}


def next_plan(config: BuildConfig, plan: Plan, by_type: Mapping[str, TypeFunnel]) -> Plan | None:
    """The next round after `plan`, from what the filter made of its sample (`by_type`); None when
    the rounds are over: every type has its part, the budget is spent, or the corpus has no more
    passages for the types still short."""
    made = sum(counts.sampled for counts in by_type.values())
    wants: dict[str, int] = {}
    for name, part in type_targets(config).items():
        counts = by_type[name]
        need = part - counts.kept
        if need <= 0 or counts.sampled < plan.drafts[name]:
            continue  # it has its part, or the corpus gave it fewer passages than asked: no more to draft
        wants[name] = _wanted(need, counts.kept, counts.sampled - counts.undecided)
    more = {name: n for name, n in _within(draft_budget(config) - made, wants).items() if n > 0}
    if not more:
        return None
    return Plan({name: n + more.get(name, 0) for name, n in plan.drafts.items()}, plan.round + 1)


def recorded_plan(run: RunDir) -> Plan | None:
    """The plan of the round the run directory is at (None: it never drafted to a target)."""
    recorded = read_round(run)
    return recorded.plan if recorded is not None else None


def read_round(run: RunDir) -> Recorded | None:
    """The round the run directory is at and what it was sized for (None: it never drafted to a target)."""
    try:
        stored = json.loads(run.rounds_file.read_text(encoding="utf-8"))
        plan = Plan({str(name): int(n) for name, n in stored["drafts"].items()}, int(stored["round"]))
        parts = stored.get("parts")
        budget = stored.get("max_drafts")
        return Recorded(
            plan,
            {str(name): int(n) for name, n in parts.items()} if parts is not None else None,
            int(budget) if budget is not None else None,
        )
    except FileNotFoundError:
        return None
    except (OSError, ValueError, KeyError, TypeError, AttributeError) as exc:
        # Written atomically, so only an edit by hand spoils it.
        raise QagenError(
            f"Cannot read {run.rounds_file} ({type(exc).__name__}: {exc}); delete it and run the same command "
            "again: the rounds start over from the first, and every draft made is reused, not paid again."
        ) from exc


def record_plan(run: RunDir, plan: Plan, config: BuildConfig) -> None:
    """Write the round about to be drafted, before its calls, with what it was sized for (see the module)."""
    write_json_atomic(
        run.rounds_file,
        {"round": plan.round, "drafts": plan.drafts, "parts": type_targets(config), "max_drafts": draft_budget(config)},
    )


def choose(passed: Iterable[Passed], config: BuildConfig) -> frozenset[str]:
    """The ids of the drafts to keep: of each type's passing drafts, its part of the target, spread
    over their source documents (round robin, in an order drawn from the seed)."""
    by_type: dict[str, list[Passed]] = {}
    for draft in passed:
        by_type.setdefault(draft.question_type, []).append(draft)
    chosen: set[str] = set()
    for name, part in type_targets(config).items():
        chosen.update(_spread(by_type.get(name, []), part, type_seed(config.seed, name)))
    return frozenset(chosen)


def _spread(drafts: list[Passed], n: int, seed: int) -> list[str]:
    """`n` of the drafts, one per document in turn: the documents and each one's drafts in a seeded
    order (from sorted ids, so the choice does not depend on the order the drafts came in)."""
    by_document: dict[str, list[str]] = {}
    for draft in drafts:
        by_document.setdefault(draft.source_doc, []).append(draft.id)
    rng = random.Random(seed)
    documents = sorted(by_document)
    rng.shuffle(documents)
    queues = []
    for document in documents:
        ids = sorted(by_document[document])
        rng.shuffle(ids)
        queues.append(ids)
    deepest = max((len(ids) for ids in queues), default=0)
    turns = [ids[turn] for turn in range(deepest) for ids in queues if turn < len(ids)]
    return turns[:n]


def outcome(config: BuildConfig, run: RunDir, funnel: Funnel) -> TargetOutcome | None:
    """The summary's `target` of a build to a target size (None without one)."""
    if config.target is None:
        return None
    recorded = recorded_plan(run)
    return TargetOutcome(
        target=config.target,
        by_type=type_targets(config),
        max_drafts=draft_budget(config),
        drafts=funnel.sampled - funnel.undecided.get("generation", 0),
        rounds=recorded.round if recorded is not None else 0,
        kept=funnel.kept,
    )


def counted_at(certified: Certified | None) -> str:
    """What a build to a target size counted as passing, from what was certified (`summary.json`'s `certified`,
    when a precision was asked): the certified threshold, or the checks' own cuts as nothing is; empty: none asked."""
    if certified is None:
        return ""
    if certified.status == "certified":
        return f"the certified threshold ({certified.threshold:.3f} on {certified.score})"
    return "the checks' own cuts (nothing certified)"


def shortfall(summary: BuildSummary) -> str | None:
    """One sentence on a build that kept fewer questions than its target: kept of the target (passing the
    certified threshold, when a precision was asked), the drafts made and why no more were, and the
    commonest rejection reasons of each type; None when the target was reached or there was none."""
    target = summary.target
    if target is None or target.reached:
        return None
    counted = f" that pass {passing}" if (passing := counted_at(summary.certified)) else ""
    types = summary.question_types
    per_type = ""
    if len(types) > 1:
        per_type = " (" + ", ".join(f"{name} {types[name].kept} of {n}" for name, n in target.by_type.items()) + ")"
    why = (
        f"the draft budget (`max_drafts={target.max_drafts}`)"
        if target.drafts >= target.max_drafts
        else "all the corpus had passages for"
    )
    reasons = "; ".join(
        f"{name}: {said}" for name in target.by_type if name in types and (said := _commonest(types[name]))
    )
    rejected = f", rejected mostly as {reasons}" if reasons else ""
    return (
        f"kept {target.kept} of the {target.target} questions asked for{counted}{per_type} from {target.drafts} "
        f"{plural(target.drafts, 'draft')}, {why}, in {target.rounds} {plural(target.rounds, 'round')}{rejected}"
        f"{_failed(summary)}."
    )


def _commonest(counts: TypeFunnel) -> str:
    """A type's commonest reasons a draft was rejected (a failed draft is not one: `_failed` says those)."""
    reasons = {reason: n for reason, n in counts.rejected_by.items() if reason != OVER_TARGET and n}
    ranked = sorted(reasons.items(), key=lambda item: (-item[1], item[0]))[:REASONS_SAID]
    return ", ".join(f"{reason} {n}" for reason, n in ranked)


def _failed(summary: BuildSummary) -> str:
    """The drafts that failed (a refusal, a reply that could not be read, a critic's failure): no rejection,
    yet each one spent a draft of the budget."""
    funnel = summary.funnel
    failed = {**funnel.generation_failed}
    for reason, n in funnel.critique_failed.items():
        failed[reason] = failed.get(reason, 0) + n
    total = sum(failed.values())
    if not total:
        return ""
    ranked = sorted(failed.items(), key=lambda item: (-item[1], item[0]))[:REASONS_SAID]
    reasons = ", ".join(f"{reason} {n}" for reason, n in ranked)
    return f"; {total} {plural(total, 'draft')} failed ({reasons}), each counted in the draft budget"
