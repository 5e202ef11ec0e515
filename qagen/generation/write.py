"""Write a run's outputs: the kept set and every candidate as `datasets` datasets, and the summary."""

from __future__ import annotations

import os
import shutil
import types
from collections.abc import Collection, Iterable, Iterator
from contextlib import contextmanager
from operator import itemgetter
from pathlib import Path
from typing import Any, Literal, Union, get_args, get_origin

from pydantic import BaseModel

from qagen.failures import is_call_failure_reason
from qagen.llm.cost import cached_note
from qagen.records import PASSAGE_COLUMNS, BatchSpend, BuildSummary, CandidateRow, DatasetRow, TypeFunnel
from qagen.runs.store import writing
from qagen.words import counted

DATA_FILE = "data-00000-of-00001.arrow"
"""The one data file `save_to_disk(..., num_shards=1)` writes in each output folder."""

EXTRA_CRITICS = "extra_critics"
"""The column of the critics beyond the cookbook's three: written only when a build has such critics."""

Feature = dict[str, Any]
"""A column's `datasets` feature as `Features.to_dict()` writes it (`{"dtype": "string", "_type": "Value"}`)."""


def warm_up() -> None:
    """Import `datasets` (about a second of CPU), so the final write starts at once."""
    import datasets  # noqa: F401


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


def column_features(row_type: type[BaseModel], omit: Collection[str] = ()) -> dict[str, Feature]:
    """Each column of a row model, in order, with its `datasets` feature (`omit`: columns left out)."""
    return {
        name: dataset_feature(name, info.annotation) for name, info in row_type.model_fields.items() if name not in omit
    }


def _holds_records(annotation: Any) -> bool:
    """Whether a row field is a tuple of records (a list of structs in the dataset)."""
    item, *rest = get_args(annotation) or (None,)
    return (
        get_origin(annotation) is tuple
        and rest == [Ellipsis]
        and isinstance(item, type)
        and issubclass(item, BaseModel)
    )


def dataset_feature(name: str, annotation: Any) -> Feature:
    """The `datasets` feature of a row field: `int` and `int | None` are int64, `bool` bool, `float` and
    `float | None` float64; `str`, `str | None` and
    a Literal of strings are string (so a column that happens to be all null keeps its type); a tuple
    of records is a list of structs, one field per record field; a tuple of str or int a list of them."""
    kinds = [annotation]
    if get_origin(annotation) in (Union, types.UnionType):
        kinds = [kind for kind in get_args(annotation) if kind is not type(None)]
    if kinds == [bool]:
        return _value("bool")
    if kinds == [int]:
        return _value("int64")
    if kinds == [float]:
        return _value("float64")
    if kinds == [str]:
        return _value("string")
    if len(kinds) == 1 and get_origin(kinds[0]) is Literal and all(isinstance(v, str) for v in get_args(kinds[0])):
        return _value("string")
    if len(kinds) == 1 and _holds_records(kinds[0]):
        return {"feature": column_features(get_args(kinds[0])[0]), "_type": "List"}
    if len(kinds) == 1 and get_origin(kinds[0]) is tuple:
        item, *rest = get_args(kinds[0])
        if rest == [Ellipsis] and item in (str, int):
            return {"feature": dataset_feature(name, item), "_type": "List"}
    raise TypeError(f"column {name!r}: no dataset type for {annotation!r}")


def _value(dtype: str) -> Feature:
    return {"dtype": dtype, "_type": "Value"}


def save_outputs(
    candidates: Iterable[CandidateRow],
    dataset_dir: Path,
    candidates_dir: Path,
    *,
    extra_critics: bool = False,
    mixed: bool = False,
) -> None:
    """Every candidate to `candidates_dir`, the kept ones as dataset rows (`CandidateRow.dataset_row`)
    to `dataset_dir`, as `datasets` directories (`load_from_disk` reads them); `extra_critics`: the
    build has critics beyond the three, so the rows have that column; `mixed`: it drafts several
    question types, so the rows have `question_type` and the passages' columns (see `omitted_columns`).

    The rows are streamed (`datasets`' `ArrowWriter`, a batch at a time) straight into each output's
    data file, in the batches `save_to_disk` writes, and its `state.json` and `dataset_info.json` are
    written as `save_to_disk` writes them: no second pass reads the rows back (a pass that reads a
    memory-mapped file back holds every page it read, which grew a build's peak memory by its
    candidates' size). Each output is written to a temporary folder and swapped in: readers never
    see half a dataset, and a failed write leaves the previous one.
    """
    # The package first: it waits for the warm-up thread's import of it (`warm_up`) to finish, where
    # importing a module inside it first can meet that module half made.
    import datasets  # noqa: F401
    from datasets.arrow_writer import ArrowWriter

    columns = {"extra_critics": extra_critics, "mixed": mixed}
    every_columns, kept_columns = row_columns(CandidateRow, **columns), row_columns(DatasetRow, **columns)
    every_features, kept_features = row_features(CandidateRow, **columns), row_features(DatasetRow, **columns)
    every_folder, kept_folder = _temporary(candidates_dir), _temporary(dataset_dir)
    with writing(candidates_dir), _quiet_datasets():
        try:
            for folder in (every_folder, kept_folder):
                shutil.rmtree(folder, ignore_errors=True)
                folder.mkdir(parents=True)
            with (
                ArrowWriter(features=every_features, path=str(every_folder / DATA_FILE), **_BATCHES) as every_writer,
                ArrowWriter(features=kept_features, path=str(kept_folder / DATA_FILE), **_BATCHES) as kept_writer,
            ):
                every, kept = _Batches(every_writer, every_columns), _Batches(kept_writer, kept_columns)
                values = RowValues(every_columns, kept_columns)
                for candidate in candidates:
                    row = values.candidate(candidate)
                    every.add(row)
                    if candidate.status == "kept":
                        kept.add(values.kept(row))
                every.finish()
                kept.finish()
            _write_metadata(every_folder)
            _write_metadata(kept_folder)
            _swap_in(every_folder, candidates_dir)
            _swap_in(kept_folder, dataset_dir)
        finally:
            shutil.rmtree(every_folder, ignore_errors=True)
            shutil.rmtree(kept_folder, ignore_errors=True)


class RowValues:
    """A candidate's values in the order of the columns written (`row_columns`), read from its fields: the
    rows' fields are values a dump gives as they are (text, numbers, None, tuples of them), but for the
    tuples of records (`extra_critics`), dumped; a dump of the whole row walks every field's serializer.

    `candidate(row)` is `row.model_dump(include=...)`'s values in column order, `kept(values)` those of
    the kept row's `dataset_row().model_dump(include=...)` taken from them (its critics' replies left out
    of `extra_critics`), not by dumping, validating and dumping the candidate again."""

    def __init__(self, candidate_columns: list[str], kept_columns: list[str]) -> None:
        self._fields = itemgetter(*candidate_columns)
        self._records = [at for at, name in enumerate(candidate_columns) if _holds_records(_ANNOTATIONS[name])]
        self._kept = itemgetter(*(candidate_columns.index(name) for name in kept_columns))
        self._kept_records = [at for at, name in enumerate(kept_columns) if _holds_records(_ANNOTATIONS[name])]

    def candidate(self, row: CandidateRow) -> tuple[Any, ...]:
        values = self._fields(row.__dict__)
        if not self._records:
            return values  # type: ignore[no-any-return]
        dumped = list(values)
        for at in self._records:
            dumped[at] = tuple(record.model_dump() for record in dumped[at])
        return tuple(dumped)

    def kept(self, candidate_values: tuple[Any, ...]) -> tuple[Any, ...]:
        values = self._kept(candidate_values)
        if not self._kept_records:
            return values  # type: ignore[no-any-return]
        kept = list(values)
        for at in self._kept_records:
            kept[at] = tuple({k: v for k, v in reply.items() if k != "raw"} for reply in kept[at])
        return tuple(kept)


_ANNOTATIONS = {name: info.annotation for name, info in CandidateRow.model_fields.items()}


class _Batches:
    """Rows handed to an `ArrowWriter` a batch of columns at a time, in the batches its `write` makes (the same
    columns, the same batches, so the same file), without its pass over every row's every value."""

    def __init__(self, writer: Any, columns: list[str]) -> None:
        self._writer = writer
        self._columns = columns
        self._rows: list[tuple[Any, ...]] = []

    def add(self, values: tuple[Any, ...]) -> None:
        """A row's values, in the order of the columns."""
        self._rows.append(values)
        if len(self._rows) == _BATCHES["writer_batch_size"]:
            self._write()

    def finish(self) -> None:
        """Write the last batch and close the file."""
        self._write()
        self._writer.finalize()

    def _write(self) -> None:
        if self._rows:
            by_column = zip(*self._rows, strict=True)
            self._writer.write_batch(
                {name: list(values) for name, values in zip(self._columns, by_column, strict=True)}
            )
            self._rows = []


_BATCHES: dict[str, Any] = {"writer_batch_size": 1000, "embed_local_files": True}
"""How `save_to_disk` writes a data file (`datasets.config.DEFAULT_MAX_BATCH_SIZE` rows a batch, smaller
only for rows over 100 kB, which a build's are not), so the file is the one it would write."""


def _temporary(target: Path) -> Path:
    return target.with_name(f".{target.name}.tmp")


def _write_metadata(folder: Path) -> None:
    """`state.json` and `dataset_info.json` beside the data file, as `Dataset.save_to_disk` writes them
    (opening the file memory-maps it and reads its schema, not its rows)."""
    import json

    from datasets import Dataset
    from datasets.utils.py_utils import asdict  # `save_to_disk`'s own: fields left at None are not written

    dataset = Dataset.from_file(str(folder / DATA_FILE), split="train")
    state = {
        key: dataset.__dict__[key]
        for key in ("_fingerprint", "_format_columns", "_format_kwargs", "_format_type", "_output_all_columns")
    }
    state["_split"] = str(dataset.split)
    state["_data_files"] = [{"filename": DATA_FILE}]
    info = asdict(dataset.info)
    del dataset
    with (folder / "state.json").open("w", encoding="utf-8") as handle:
        json.dump(state, handle, indent=2, sort_keys=True)
    with (folder / "dataset_info.json").open("w", encoding="utf-8") as handle:
        # As `save_to_disk`: only the first level sorted (nested features keep their order).
        json.dump({key: info[key] for key in sorted(info)}, handle, indent=2)


def _swap_in(folder: Path, target: Path) -> None:
    if target.exists():
        shutil.rmtree(target)
    os.replace(folder, target)


@contextmanager
def _quiet_datasets() -> Iterator[None]:
    """No progress bars of `datasets` while it writes: the build prints its own progress."""
    from datasets.utils import are_progress_bars_disabled, disable_progress_bars, enable_progress_bars

    was_disabled = are_progress_bars_disabled()
    disable_progress_bars()
    try:
        yield
    finally:
        if not was_disabled:
            enable_progress_bars()


def _by_meaning(summary: BuildSummary) -> str:
    """The drafts dropped as asking the same thing in other words, or that none was looked for: a 0
    where nothing was compared would read as "no such duplicate"."""
    profile = summary.profile
    if profile is not None and profile.duplicates.semantic_model is None:
        return "not looked for (no embeddings model)"
    return str(summary.funnel.semantic_duplicates)


def funnel_table(summary: BuildSummary) -> str:
    """The funnel as a readable table (printed at the end of a build, and by `qagen stage filter`)."""
    funnel, corpus = summary.funnel, summary.corpus
    rejected_by = {str(criterion): count for criterion, count in funnel.rejected_by.items()}
    lines: list[tuple[str, str]] = [
        ("documents", str(corpus.documents)),
        ("inputs skipped", _with_reasons(corpus.skipped, corpus.skipped_by_reason)),
        ("chunks", f"{corpus.chunks} (identical chunks dropped: {corpus.duplicate_chunks})"),
        ("sampled chunks", _sampled(summary)),
        ("drafted", str(funnel.drafted)),
        ("generation failed", _with_reasons(sum(funnel.generation_failed.values()), funnel.generation_failed)),
        ("critique failed", _with_reasons(sum(funnel.critique_failed.values()), funnel.critique_failed)),
        ("undecided", _with_reasons(sum(funnel.undecided.values()), funnel.undecided)),
        ("rejected by critics", _with_reasons(funnel.rejected, rejected_by)),
        ("too long", str(funnel.too_long)),
        ("free checks", _with_reasons(sum(funnel.checks_rejected.values()), funnel.checks_rejected)),
        ("near-duplicates", str(funnel.duplicates)),
        ("same meaning", _by_meaning(summary)),
    ]
    target = summary.target
    if target is not None:
        lines.append(("over the target", str(funnel.over_target)))
    lines.append(("kept", str(funnel.kept)))
    if summary.certified is not None:
        from qagen.generation.kept_quality import certified_sentence  # it reads `dataset/`, which this writes

        lines.append(("certified", certified_sentence(summary.certified).removeprefix("certified: ")))
    if target is not None:
        from qagen.generation.target import counted_at

        rounds = f"{target.rounds} round{'s' if target.rounds != 1 else ''}"
        held_to = f"; counted at {passing}" if (passing := counted_at(summary.certified)) else ""
        lines.append(
            (
                "target",
                f"{target.target} ({target.drafts} drafts of at most {target.max_drafts}, in {rounds}{held_to})",
            )
        )
    for stage, usage in (("generation", summary.usage.generation), ("critique", summary.usage.critique)):
        cost = f", ${usage.cost_usd:.4f}" if usage.cost_usd is not None else ""
        cached = cached_note(usage.cached_input_tokens)
        tokens = f"{usage.input_tokens:,} in{cached} / {usage.output_tokens:,} out tokens{cost}"
        lines.append((f"{stage} calls", f"{usage.calls} ({tokens})"))
        batched = summary.batch.get(stage)
        if batched:
            lines.append((f"{stage} in batches", _batch_words(batched)))
    types = summary.question_types
    if set(types) - {"factoid"}:
        for name, counts in types.items():
            lines.append((f"{name} ({counts.share}%)", _type_words(counts)))
    width = max(len(label) for label, _ in lines)
    table = [f"  {label:<{width}}  {value}" for label, value in lines]
    # The commonest failure of each stage, with its first case: what there is to fix.
    examples = funnel.failure_examples
    for stage, failed in (("generation", funnel.generation_failed), ("critique", funnel.critique_failed)):
        if failed:
            commonest = max(failed, key=failed.__getitem__)
            if commonest in examples:
                table.append(f"  {stage} failed mostly with {commonest}, e.g. {examples[commonest]}")
        # Calls that got no reply (an error line, an expired batch, a timeout) are asked again by a re-run.
        unanswered = sum(count for reason, count in failed.items() if is_call_failure_reason(reason))
        if unanswered:
            table.append(
                f"  {unanswered} {stage} call{'s' if unanswered != 1 else ''} got no reply: "
                "re-run the same command to ask them again"
            )
    for check, count in funnel.decided_as_written.items():
        table.append(
            f"  {check}: {counted(count, 'verdict')} came with no usable token probabilities (none "
            "sent, or impossible ones): the written verdict decided"
        )
    if summary.kept_quality.stale:
        table.append(
            "  the estimate of the share of good kept questions is stale: the kept questions changed since their "
            "review sample was drawn (`qagen profile RUN` says how to draw it again)"
        )
    return "\n".join(table)


def _type_words(counts: TypeFunnel) -> str:
    """One question type's line: asked, sampled, drafted, rejected by reason, kept."""
    asked = "one per chunk" if counts.requested is None else str(counts.requested)
    short = f", {counts.short} the corpus had no passages for" if counts.short else ""
    rejected = _with_reasons(counts.rejected, counts.rejected_by)
    failed = counts.generation_failed + counts.critique_failed
    return (
        f"asked {asked}{short}, sampled {counts.sampled}, drafted {counts.drafted}, failed {failed}, "
        f"rejected {rejected}, kept {counts.kept}"
    )


def _batch_words(batched: BatchSpend) -> str:
    """The calls answered in batches, at batch prices and at the online prices they saved against."""
    calls, cost, online = batched.calls, batched.cost_usd, batched.online_cost_usd
    if cost is None or online is None:
        return f"{calls} calls, at half the online price (price unknown)"
    return f"{calls} calls, ${cost:.4f} at batch prices instead of ${online:.4f} online (saved ${online - cost:.4f})"


def _sampled(summary: BuildSummary) -> str:
    """The sample size, and the size asked for when the corpus had fewer chunks, or had no passages
    for some drafts (a multi-hop draft needs a pair of chunks: not "all of them")."""
    funnel = summary.funnel
    short = sum(counts.short for counts in summary.question_types.values())
    if short:
        return f"{funnel.sampled} (the corpus had no passages for {short} of the drafts asked for: see below)"
    if funnel.requested is not None and funnel.requested > funnel.sampled:
        return f"{funnel.sampled} (all of them: {funnel.requested} were asked for)"
    per_chunk = summary.settings.get("per_chunk", 1)
    if per_chunk > 1:  # the sample counts drafts: several a chunk
        return f"{funnel.sampled} drafts ({per_chunk} question/answer pairs a call of a chunk, for the types that can)"
    return str(funnel.sampled)


def _with_reasons(total: int, reasons: dict[str, int]) -> str:
    parts = [f"{name} {count}" for name, count in reasons.items() if count]
    return f"{total}" + (f" ({', '.join(parts)})" if parts else "")
