"""A build's summary (`summary.json`): the corpus, the funnel, the models, prompts and usage."""

from __future__ import annotations

from collections.abc import Sequence

from qagen._version import __version__
from qagen.config import BuildConfig
from qagen.generation.ledger import PaidCall
from qagen.generation.target import outcome
from qagen.generation.tasks import BuildTasks
from qagen.llm.cost import batch_spend, cost_of
from qagen.llm.task import add_usage
from qagen.records import (
    BatchSpend,
    BuildModels,
    BuildSummary,
    BuildUsage,
    CorpusSummary,
    Funnel,
    StageUsage,
    TypeFunnel,
    Usage,
)
from qagen.runs.batch.journal import Journal
from qagen.runs.rundir import RunDir


def summarise_build(
    config: BuildConfig,
    run: RunDir,
    tasks: BuildTasks,
    funnel: Funnel,
    paid: tuple[Sequence[PaidCall], Sequence[PaidCall]],
    by_type: dict[str, TypeFunnel] | None = None,
) -> BuildSummary:
    """The summary of the assembled run; `paid` holds the generation and the critique calls paid
    for the sampled drafts (`Ledger.paid_for`): usage counts only those; `by_type` the funnel of
    each question type."""
    chunking = run.chunking_report()
    paid_drafts, paid_critiques = paid
    batched = Journal(run.root).batched
    return BuildSummary(
        qagen_version=__version__,
        # The chunking report lists every skipped input; the summary keeps the counts only.
        corpus=CorpusSummary.model_validate({k: v for k, v in chunking.items() if k != "skipped_inputs"}),
        funnel=funnel,
        question_types=by_type or {},
        thresholds=config.thresholds(),
        models=BuildModels(generator=config.generator.spec, critic=config.critic.spec),
        prompts={name: digest[:12] for name, digest in tasks.prompt_hashes().items() if digest is not None},
        usage=BuildUsage(
            generation=stage_usage(config.generator.spec, paid_drafts, config, batched),
            critique=stage_usage(config.critic.spec, paid_critiques, config, batched),
        ),
        batch={
            stage: spend
            for stage, spend in (
                ("generation", _batch(config.generator.spec, paid_drafts, config, batched)),
                ("critique", _batch(config.critic.spec, paid_critiques, config, batched)),
            )
            if spend.calls
        },
        settings=config.model_dump(mode="json"),
        target=outcome(config, run, funnel),
    )


def _tokens(records: Sequence[PaidCall]) -> Usage:
    total = Usage()
    for record in records:
        total = add_usage(total, record.usage)
    return total


def stage_usage(model: str, records: Sequence[PaidCall], config: BuildConfig, batched: set[str]) -> StageUsage:
    """Calls and tokens paid for (failed calls without a reply are not), and their cost when known:
    the calls answered in batches (`batched` record ids) at batch prices, the others at online prices,
    the cached part of their input at the cached-input price."""
    tokens = _tokens(records)
    price = config.price(model)
    cost = None
    if price is not None:
        online = _tokens([r for r in records if r.id not in batched])
        in_batches = _tokens([r for r in records if r.id in batched])
        cost = round(cost_of(online, price) + cost_of(in_batches, price.batch()), 6)
    return StageUsage(
        model=model,
        calls=len(records),
        input_tokens=tokens.input_tokens,
        output_tokens=tokens.output_tokens,
        cached_input_tokens=tokens.cached_input_tokens,
        cost_usd=cost,
    )


def _batch(model: str, records: Sequence[PaidCall], config: BuildConfig, batched: set[str]) -> BatchSpend:
    """The paid calls answered in batches, at batch prices and at online prices."""
    in_batches = [r for r in records if r.id in batched]
    return batch_spend(len(in_batches), _tokens(in_batches), config.price(model))
