"""A build's summary (`summary.json`): the corpus, the funnel, the models, prompts and usage."""

from __future__ import annotations

from qagen import __version__
from qagen.config import BuildConfig
from qagen.generation.ledger import PaidCalls
from qagen.generation.tasks import BuildTasks
from qagen.llm.cost import price_for
from qagen.records import BuildModels, BuildSummary, BuildUsage, CorpusSummary, Funnel, StageUsage
from qagen.runs.rundir import RunDir


def summarise_build(
    config: BuildConfig,
    run: RunDir,
    tasks: BuildTasks,
    funnel: Funnel,
    paid: tuple[PaidCalls, PaidCalls],
) -> BuildSummary:
    """The summary of the assembled run; `paid` is what the generation and the critique calls for
    the sampled chunks cost (`Ledger.paid_for`)."""
    chunking = run.chunking_report()
    generation, critique = paid
    return BuildSummary(
        qagen_version=__version__,
        # The chunking report lists every skipped input; the summary keeps the counts only.
        corpus=CorpusSummary.model_validate({k: v for k, v in chunking.items() if k != "skipped_inputs"}),
        funnel=funnel,
        thresholds=config.thresholds(),
        models=BuildModels(generator=config.generator.spec, critic=config.critic.spec),
        prompts={name: digest[:12] for name, digest in tasks.prompt_hashes().items() if digest is not None},
        usage=BuildUsage(
            generation=_usage(config.generator.spec, generation, config),
            critique=_usage(config.critic.spec, critique, config),
        ),
        settings=config.model_dump(mode="json"),
    )


def _usage(model: str, paid: PaidCalls, config: BuildConfig) -> StageUsage:
    """Calls and tokens paid for (failed calls without a reply are not), and their cost when known."""
    price = price_for(model, config.price_input, config.price_output)
    return StageUsage(
        model=model,
        calls=paid.calls,
        input_tokens=paid.input_tokens,
        output_tokens=paid.output_tokens,
        cost_usd=round(price.cost(paid.input_tokens, paid.output_tokens), 6) if price else None,
    )
