"""A build's summary (`summary.json`): the corpus, the funnel, the models, prompts and usage."""

from __future__ import annotations

from collections.abc import Sequence

from qagen._version import __version__
from qagen.config import BuildConfig
from qagen.generation.ledger import PaidCall
from qagen.generation.target import outcome
from qagen.generation.tasks import BuildTasks
from qagen.llm.cost import batch_spend, price_for
from qagen.records import (
    BatchSpend,
    BuildModels,
    BuildSummary,
    BuildUsage,
    CorpusSummary,
    Funnel,
    StageUsage,
    TypeFunnel,
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


def _tokens(records: Sequence[PaidCall]) -> tuple[int, int]:
    return sum(r.input_tokens for r in records), sum(r.output_tokens for r in records)


def stage_usage(model: str, records: Sequence[PaidCall], config: BuildConfig, batched: set[str]) -> StageUsage:
    """Calls and tokens paid for (failed calls without a reply are not), and their cost when known:
    the calls answered in batches (`batched` record ids) at batch prices, the others at online prices."""
    input_tokens, output_tokens = _tokens(records)
    price = price_for(model, config.price_input, config.price_output)
    cost = None
    if price is not None:
        online = _tokens([r for r in records if r.id not in batched])
        in_batches = _tokens([r for r in records if r.id in batched])
        cost = round(price.cost(*online) + price.batch().cost(*in_batches), 6)
    return StageUsage(
        model=model, calls=len(records), input_tokens=input_tokens, output_tokens=output_tokens, cost_usd=cost
    )


def _batch(model: str, records: Sequence[PaidCall], config: BuildConfig, batched: set[str]) -> BatchSpend:
    """The paid calls answered in batches, at batch prices and at online prices."""
    in_batches = [r for r in records if r.id in batched]
    price = price_for(model, config.price_input, config.price_output)
    return batch_spend(len(in_batches), *_tokens(in_batches), price)
