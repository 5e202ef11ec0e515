"""Write a run's outputs: the kept set and every candidate as `datasets` datasets, and the summary."""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path
from typing import Any

from pydantic import BaseModel

from qagen.generation.arrow_rows import RowWriter, column_features
from qagen.records import PASSAGE_COLUMNS, CandidateRow, DatasetRow

EXTRA_CRITICS = "extra_critics"
"""The column of the critics beyond the cookbook's three: written only when a build has such critics."""


def omitted_columns(extra_critics: bool, mixed: bool = False) -> tuple[str, ...]:
    """The row model's columns a build leaves out: `extra_critics` when it has no critic beyond the three,
    and `question_type` with the passages' columns when it drafts factoids alone (`BuildConfig.mixed`)."""
    return (*(() if extra_critics else (EXTRA_CRITICS,)), *(() if mixed else PASSAGE_COLUMNS))


def row_columns(row_type: type[BaseModel], *, extra_critics: bool = False, mixed: bool = False) -> list[str]:
    """The columns a build writes of a row model, in order (see `omitted_columns`)."""
    return [name for name in row_type.model_fields if name not in omitted_columns(extra_critics, mixed)]


def row_features(row_type: type[BaseModel], *, extra_critics: bool = False, mixed: bool = False) -> Any:
    """The `datasets.Features` of a row model: its fields in order, typed from their annotations.

    Explicit types, so a column that happens to be all null (say, no failures) keeps its type;
    read from the model, so the columns and their types have one source.
    """
    from datasets import Features

    return Features.from_dict(column_features(row_type, omitted_columns(extra_critics, mixed)))


def save_rows(
    rows: Iterable[DatasetRow], target: Path, *, candidates: bool, extra_critics: bool = False, mixed: bool = False
) -> None:
    """Write rows as a `datasets` directory at `target` (see `RowWriter`)."""
    row_type = CandidateRow if candidates else DatasetRow
    with RowWriter(target, row_type, omitted_columns(extra_critics, mixed)) as writer:
        for row in rows:
            writer.add(row.model_dump())


def funnel_table(summary: dict[str, Any]) -> str:
    """The funnel as a readable table (printed at the end of a build, and by `qagen filter`)."""
    funnel = summary["funnel"]
    corpus = summary["corpus"]
    lines: list[tuple[str, str]] = [
        ("documents", str(corpus["documents"])),
        ("inputs skipped", _with_reasons(corpus["skipped"], corpus["skipped_by_reason"])),
        ("chunks", f"{corpus['chunks']} (identical chunks dropped: {corpus['duplicate_chunks']})"),
        ("sampled chunks", _sampled(funnel)),
        ("drafted", str(funnel["drafted"])),
        (
            "generation failed",
            _with_reasons(sum(funnel["generation_failed"].values()), funnel["generation_failed"]),
        ),
        (
            "critique failed",
            _with_reasons(sum(funnel["critique_failed"].values()), funnel["critique_failed"]),
        ),
        ("undecided", _with_reasons(sum(funnel.get("undecided", {}).values()), funnel.get("undecided", {}))),
        ("rejected by critics", _with_reasons(funnel["rejected"], funnel["rejected_by"])),
        ("too long", str(funnel.get("too_long", 0))),
        ("near-duplicates", str(funnel["duplicates"])),
        ("kept", str(funnel["kept"])),
    ]
    usage = summary.get("usage", {})
    for stage, numbers in usage.items():
        cost = f", ${numbers['cost_usd']:.4f}" if numbers.get("cost_usd") is not None else ""
        tokens = f"{numbers['input_tokens']:,} in / {numbers['output_tokens']:,} out tokens{cost}"
        lines.append((f"{stage} calls", f"{numbers['calls']} ({tokens})"))
        batched = summary.get("batch", {}).get(stage)
        if batched:
            lines.append((f"{stage} in batches", _batch_words(batched)))
    types = summary.get("question_types", {})
    if len(types) > 1 or set(types) - {"factoid"}:
        for name, counts in types.items():
            lines.append((f"{name} ({counts['share']}%)", _type_words(counts)))
    width = max(len(label) for label, _ in lines)
    table = [f"  {label:<{width}}  {value}" for label, value in lines]
    # The commonest failure of each stage, with its first case: what there is to fix.
    examples = funnel.get("failure_examples", {})
    for stage, failed in (("generation", funnel["generation_failed"]), ("critique", funnel["critique_failed"])):
        if failed:
            commonest = max(failed, key=failed.__getitem__)
            if commonest in examples:
                table.append(f"  {stage} failed mostly with {commonest}, e.g. {examples[commonest]}")
    return "\n".join(table)


def _type_words(counts: dict[str, Any]) -> str:
    """One question type's line: asked, sampled, drafted, rejected by reason, kept."""
    asked = "one per chunk" if counts["requested"] is None else str(counts["requested"])
    short = f", {counts['short']} the corpus had no passages for" if counts["short"] else ""
    rejected = _with_reasons(counts["rejected"], counts["rejected_by"])
    failed = counts["generation_failed"] + counts["critique_failed"]
    return (
        f"asked {asked}{short}, sampled {counts['sampled']}, drafted {counts['drafted']}, failed {failed}, "
        f"rejected {rejected}, kept {counts['kept']}"
    )


def _batch_words(batched: dict[str, Any]) -> str:
    """The calls answered in batches, at batch prices and at the online prices they saved against."""
    calls, cost, online = batched["calls"], batched["cost_usd"], batched["online_cost_usd"]
    if cost is None or online is None:
        return f"{calls} calls, at half the online price (price unknown)"
    return f"{calls} calls, ${cost:.4f} at batch prices instead of ${online:.4f} online (saved ${online - cost:.4f})"


def _sampled(funnel: dict[str, Any]) -> str:
    """The sample size, and the size asked for when the corpus had fewer chunks."""
    sampled, requested = funnel["sampled"], funnel.get("requested")
    if requested is not None and requested > sampled:
        return f"{sampled} (all of them: {requested} were asked for)"
    return str(sampled)


def _with_reasons(total: int, reasons: dict[str, int]) -> str:
    parts = [f"{name} {count}" for name, count in reasons.items() if count]
    return f"{total}" + (f" ({', '.join(parts)})" if parts else "")
