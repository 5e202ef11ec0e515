"""Write a run's outputs: the kept set and every candidate as `datasets` datasets, and the summary."""

from __future__ import annotations

import os
import shutil
import types
from collections.abc import Sequence
from pathlib import Path
from typing import Any, Literal, Union, get_args, get_origin

from pydantic import BaseModel

from qagen.records import CandidateRow, DatasetRow
from qagen.runs.store import writing


def row_features(row_type: type[BaseModel]) -> Any:
    """The `datasets.Features` of a row model: its fields in order, typed from their annotations.

    Explicit types, so a column that happens to be all null (say, no failures) keeps its type;
    read from the model, so the columns and their types have one source.
    """
    from datasets import Features, Value

    return Features({name: Value(_dtype(name, info.annotation)) for name, info in row_type.model_fields.items()})


def _dtype(name: str, annotation: Any) -> str:
    """`int` and `int | None` are int64; `str`, `str | None` and a Literal of strings are string."""
    kinds = [annotation]
    if get_origin(annotation) in (Union, types.UnionType):
        kinds = [kind for kind in get_args(annotation) if kind is not type(None)]
    if kinds == [int]:
        return "int64"
    if kinds == [str]:
        return "string"
    if len(kinds) == 1 and get_origin(kinds[0]) is Literal and all(isinstance(v, str) for v in get_args(kinds[0])):
        return "string"
    raise TypeError(f"column {name!r}: no dataset type for {annotation!r}")


def save_rows(rows: Sequence[DatasetRow], target: Path, *, candidates: bool) -> None:
    """`save_to_disk` through a temporary directory, then swap it in."""
    from datasets import Dataset
    from datasets.utils.logging import disable_progress_bar

    # Saving takes milliseconds; its bar would only clutter the funnel table printed next.
    disable_progress_bar()

    row_type: type[DatasetRow] = CandidateRow if candidates else DatasetRow
    dumped = [row.model_dump() for row in rows]
    data = {column: [row[column] for row in dumped] for column in row_type.model_fields}
    dataset = Dataset.from_dict(data, features=row_features(row_type), split="train")
    temporary = target.with_name(f".{target.name}.tmp")
    with writing(target):  # a full disk names the folder and what to do
        if temporary.exists():
            shutil.rmtree(temporary)
        # One shard asked for explicitly: left to choose, datasets writes no shard at all for an empty
        # set, and the directory then fails to load (a run that keeps nothing is still a valid run).
        dataset.save_to_disk(str(temporary), num_shards=1)
        if target.exists():
            shutil.rmtree(target)
        os.replace(temporary, target)


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
