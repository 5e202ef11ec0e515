"""A build's summary (`summary.json`): the corpus, the funnel, the models, prompts and usage."""

from __future__ import annotations

from qagen import __version__
from qagen.config import BuildConfig
from qagen.generation.filter import Assembly
from qagen.generation.tasks import BuildTasks
from qagen.llm.cost import price_for
from qagen.records import BuildModels, BuildSummary, BuildUsage, CorpusSummary, Critique, Draft, StageUsage
from qagen.runs.rundir import RunDir


def summarise_build(
    config: BuildConfig,
    run: RunDir,
    tasks: BuildTasks,
    result: Assembly,
    drafts: dict[str, Draft],
    critiques: dict[str, Critique],
) -> BuildSummary:
    """The summary of the assembled run; usage counts only the calls made for the sampled chunks."""
    chunking = run.chunking_report()
    sample_ids = {row.id for row in result.candidates}
    paid_drafts = [d for d in drafts.values() if d.id in sample_ids and _paid(d)]
    paid_critiques = [c for c in critiques.values() if c.draft_id in sample_ids and _paid(c)]
    return BuildSummary(
        qagen_version=__version__,
        # The chunking report lists every skipped input; the summary keeps the counts only.
        corpus=CorpusSummary.model_validate({k: v for k, v in chunking.items() if k != "skipped_inputs"}),
        funnel=result.funnel,
        thresholds=config.thresholds(),
        models=BuildModels(generator=config.generator.spec, critic=config.critic.spec),
        prompts={name: digest[:12] for name, digest in tasks.prompt_hashes().items() if digest is not None},
        usage=BuildUsage(
            generation=_usage(config.generator.spec, paid_drafts, config),
            critique=_usage(config.critic.spec, paid_critiques, config),
        ),
        settings=config.model_dump(mode="json"),
    )


def _paid(record: Draft | Critique) -> bool:
    """A call that failed without a reply is not paid for; every reply is, readable or not."""
    return record.failure is None or not record.failure.is_call_failure


def _usage(model: str, records: list[Draft] | list[Critique], config: BuildConfig) -> StageUsage:
    """Calls and tokens paid for (failed calls without a reply are not), and their cost when known."""
    input_tokens = sum(r.usage.input_tokens for r in records)
    output_tokens = sum(r.usage.output_tokens for r in records)
    price = price_for(model, config.price_input, config.price_output)
    return StageUsage(
        model=model,
        calls=len(records),
        input_tokens=input_tokens,
        output_tokens=output_tokens,
        cost_usd=round(price.cost(input_tokens, output_tokens), 6) if price else None,
    )
