"""A build's summary (`summary.json`): the corpus, the funnel, the models, prompts and usage."""

from __future__ import annotations

from qagen._version import __version__
from qagen.config import BUILD_ROLES, BuildConfig
from qagen.generation.ledger import Paid
from qagen.generation.target import outcome
from qagen.generation.tasks import BuildTasks
from qagen.generation.vetting import readings
from qagen.llm.cost import batch_spend, cost_of
from qagen.records import (
    BatchSpend,
    BuildModels,
    BuildSummary,
    BuildUsage,
    CheckReading,
    CorpusSummary,
    Funnel,
    StageUsage,
    TypeFunnel,
)
from qagen.runs.rundir import RunDir


def summarise_build(
    config: BuildConfig,
    run: RunDir,
    tasks: BuildTasks,
    funnel: Funnel,
    paid: tuple[Paid, Paid],
    by_type: dict[str, TypeFunnel] | None = None,
) -> BuildSummary:
    """The summary of the assembled run; `paid` counts the generation and the critique calls paid
    for the sampled drafts (`Ledger.paid_for`, with the run's batch journal's `batched` ids): usage
    counts only those; `by_type` the funnel of each question type."""
    chunking = run.chunking_report()
    paid_drafts, paid_critiques = paid
    checks = check_readings(config, tasks)
    return BuildSummary(
        qagen_version=__version__,
        # The chunking report lists every skipped input; the summary keeps the counts only.
        corpus=CorpusSummary.model_validate({k: v for k, v in chunking.items() if k != "skipped_inputs"}),
        funnel=funnel,
        question_types=by_type or {},
        thresholds={  # in declaration order, as the columns
            spec.name: int(checks[spec.name].cut)
            for spec in config.critic_specs()
            if spec.name in checks and checks[spec.name].kind == "rating"
        },
        checks=checks,
        models=BuildModels(
            generator=config.generator.spec,
            critic=config.critic.spec,
            own_servers=[role for role in BUILD_ROLES if getattr(config, role).on_own_server],
        ),
        prompts={name: digest[:12] for name, digest in tasks.prompt_hashes().items() if digest is not None},
        usage=BuildUsage(
            generation=stage_usage(config.generator.spec, paid_drafts, config),
            critique=stage_usage(config.critic.spec, paid_critiques, config),
        ),
        batch={
            stage: spend
            for stage, spend in (
                ("generation", _batch(config.generator.spec, paid_drafts, config)),
                ("critique", _batch(config.critic.spec, paid_critiques, config)),
            )
            if spend.calls
        },
        settings=config.model_dump(mode="json"),
        target=outcome(config, run, funnel),
    )


def stage_usage(model: str, paid: Paid, config: BuildConfig) -> StageUsage:
    """Calls and tokens paid for (failed calls without a reply are not), and their cost when known:
    the calls answered in batches at batch prices, the others at online prices, the cached part of
    their input at the cached-input price."""
    total = paid.total
    price = config.price(model)
    cost = None
    if price is not None:
        cost = round(cost_of(paid.online.usage, price) + cost_of(paid.batched.usage, price.batch()), 6)
    return StageUsage(
        model=model,
        calls=total.calls,
        input_tokens=total.input_tokens,
        output_tokens=total.output_tokens,
        cached_input_tokens=total.cached_input_tokens,
        cost_usd=cost,
    )


def _batch(model: str, paid: Paid, config: BuildConfig) -> BatchSpend:
    """The paid calls answered in batches, at batch prices and at online prices."""
    return batch_spend(paid.batched.calls, paid.batched.usage, config.price(model))


def check_readings(config: BuildConfig, tasks: BuildTasks) -> dict[str, CheckReading]:
    """Every check the build asks, in the order asked, with the question types it is asked of (a
    multi-hop question's parts are asked theirs as factoids) and how it is decided."""
    asked_of: dict[str, list[str]] = {}
    audience: dict[str, bool] = {}
    for type_name, type_tasks in tasks.types.items():
        for critic in type_tasks.critics:
            asked_of.setdefault(critic.criterion, []).append(type_name)
            audience[critic.criterion] = audience.get(critic.criterion, False) or "audience" in critic.settings
        for critic in type_tasks.part_critics:
            asked_of.setdefault(critic.criterion, []).append(f"{type_name} (each part)")
    order = [critic.criterion for critic in tasks.critics]
    return readings(config, {name: asked_of[name] for name in dict.fromkeys(order)}, audience)
