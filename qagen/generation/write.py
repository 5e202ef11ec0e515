"""Write a run's outputs: the kept set and every candidate as `datasets` datasets, and the summary."""

from __future__ import annotations

import os
import shutil
from pathlib import Path
from typing import Any

from qagen.generation.filter import CANDIDATE_COLUMNS, DATASET_COLUMNS

_INT_COLUMNS = {
    "groundedness_score", "relevance_score", "standalone_score", "start_index", "end_index",
}  # fmt: skip


def _features(columns: list[str]) -> Any:
    # Explicit types, so a column that happens to be all null (say, no failures) keeps its type.
    from datasets import Features, Value

    return Features({c: Value("int64") if c in _INT_COLUMNS else Value("string") for c in columns})


def save_rows(rows: list[dict[str, Any]], target: Path, *, candidates: bool) -> None:
    """`save_to_disk` through a temporary directory, then swap it in."""
    from datasets import Dataset
    from datasets.utils.logging import disable_progress_bar

    # Saving takes milliseconds; its bar would only clutter the funnel table printed next.
    disable_progress_bar()

    columns = CANDIDATE_COLUMNS if candidates else DATASET_COLUMNS
    features = _features(columns)
    data = {column: [row[column] for row in rows] for column in columns}
    dataset = Dataset.from_dict(data, features=features, split="train")
    temporary = target.with_name(f".{target.name}.tmp")
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
        ("sampled chunks", str(funnel["sampled"])),
        ("drafted", str(funnel["drafted"])),
        (
            "generation failed",
            _with_reasons(sum(funnel["generation_failed"].values()), funnel["generation_failed"]),
        ),
        (
            "critique failed",
            _with_reasons(sum(funnel["critique_failed"].values()), funnel["critique_failed"]),
        ),
        ("rejected by critics", _with_reasons(funnel["rejected"], funnel["rejected_by"])),
        ("near-duplicates", str(funnel["duplicates"])),
        ("kept", str(funnel["kept"])),
    ]
    usage = summary.get("usage", {})
    for stage, numbers in usage.items():
        cost = f", ${numbers['cost_usd']:.4f}" if numbers.get("cost_usd") is not None else ""
        tokens = f"{numbers['input_tokens']:,} in / {numbers['output_tokens']:,} out tokens{cost}"
        lines.append((f"{stage} calls", f"{numbers['calls']} ({tokens})"))
    width = max(len(label) for label, _ in lines)
    return "\n".join(f"  {label:<{width}}  {value}" for label, value in lines)


def _with_reasons(total: int, reasons: dict[str, int]) -> str:
    parts = [f"{name} {count}" for name, count in reasons.items() if count]
    return f"{total}" + (f" ({', '.join(parts)})" if parts else "")
