"""The reviewed drafts as the combined score reads them: each draft's signals (`qagen.generation.score`), its
reviewer label, and whether the default filter keeps it, from the reviewed sets and the live verdicts asked
of them (`bench_signals.py ask`). No model call. Read by `bench_quality.py --certify` and `fit_score.py`.

- `supported` and `reader`: the live verdicts, found by the product's task keys and decided by
  `vetting.vet` at the default cuts (the measurement: P(yes), the reader's agreement; None when the
  written word decided).
- `bm25_rank`: the question's own passage ranked by the product's BM25 (`ChunkIndex`) among every distinct
  passage of the reviewed sets drawn from the same corpus (`pydoc`, `gitman`, `gitdoc`, `pyheld`): tens to
  a few hundred passages, fewer than a build's corpus holds, so ranks are smaller than a build's. None for
  an unanswerable question (no retrieval target), as in a build.
- `extractive_share`, `restated_share`, `copied_share`: the product's functions (`checks.easiness`).
- `base_kept`: the default filter as far as the live verdicts go: the free checks, then each check a
  default build asks of the type that was asked live (`supported`; the reader for unanswerable drafts)
  at its default cut. The default's other checks of multi-hop and unanswerable drafts (`clear`, the lone
  readers, `needs_both`, `not_in_corpus`) were not asked live and are not applied.
"""

from __future__ import annotations

import hashlib
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import NamedTuple

sys.path.insert(0, str(Path(__file__).resolve().parent))

from bench_signals import _EVERY_TYPE, Reviewed, _free_check, read_reviewed, task_for

from qagen.config import BuildConfig
from qagen.corpus.chunk_index import ChunkIndex, RankQuery
from qagen.corpus.settings import CorpusSettings
from qagen.generation.checks.easiness import copied_share, extractive_share, restated_share
from qagen.generation.score import CHECK_SIGNALS, Signals
from qagen.generation.tasks import BuildTasks
from qagen.generation.vetting import vet
from qagen.llm.backends import ModelSettings
from qagen.question_types import QUESTION_TYPES
from qagen.records import Chunk, Critique

REPOSITORY = Path(__file__).resolve().parents[1]
REVIEWED_SETS = (
    REPOSITORY.parent / "shared" / "reference" / "data" / "gitdoc_drafts_reviewed.jsonl",
    *sorted((REPOSITORY / "benchmarks" / "reviewed").glob("*_reviewed.jsonl")),
)
"""Every reviewed set: the git how-to set of `../shared` and qagen's own (benchmarks/reviewed/README.md)."""
LIVE_VERDICTS = REPOSITORY / "benchmarks" / "reviewed" / "live_verdicts.jsonl"
MODEL = "openai:qwen2.5-1.5b"
HELD_OUT = frozenset({"pyheld_build"})
"""The sets that decided nothing (benchmarks/reviewed/README.md): kept out of the shipped coefficients' fit."""


class Labelled(NamedTuple):
    """One reviewed draft with its live verdicts."""

    set_name: str
    """The reviewed set's file name without `_reviewed.jsonl`."""
    draft_id: str
    question_type: str
    keep: bool
    signals: Signals
    base_kept: bool
    """The default filter keeps it (see the module)."""


class Loaded(NamedTuple):
    drafts: list[Labelled]
    waiting: int
    """Labelled drafts left out: a check a default build asks of their type has no live verdict yet."""


def set_name(path: Path) -> str:
    return path.name.removesuffix(".jsonl").removesuffix("_reviewed")


def read_verdicts(path: Path) -> dict[str, Critique]:
    """The live verdicts by task key (the last of a key wins, as a resumed `ask` appends)."""
    found: dict[str, Critique] = {}
    for line in path.read_text(encoding="utf-8").splitlines():
        if line.strip():
            record = Critique.model_validate_json(line)
            found[record.id] = record
    return found


def _passage(text: str) -> Chunk:
    """A passage as a chunk of the corpus its set was drawn from, named by its text (passages of one page
    from different drafts are the same chunk when their texts are)."""
    key = hashlib.sha256(text.encode("utf-8")).hexdigest()[:20]
    return Chunk(id=key, source=key, text=text, start_index=0, end_index=len(text))


def _ranks(members: Sequence[tuple[str, Reviewed]]) -> dict[str, int | None]:
    """Each draft's `bm25_rank` among the passages of the reviewed sets of its corpus (see the module)."""
    by_corpus: dict[str, list[Reviewed]] = {}
    for name, reviewed in members:
        by_corpus.setdefault(name.split("_")[0], []).append(reviewed)
    ranks: dict[str, int | None] = {}
    for group in by_corpus.values():
        chunks: dict[str, Chunk] = {}
        for reviewed in group:
            for passage in (*reviewed.drafted.passages.chunks, *reviewed.drafted.retrieved):
                chunk = _passage(passage.text)
                chunks[chunk.id] = chunk
        index = ChunkIndex(lambda chunks=chunks: list(chunks.values()))  # type: ignore[misc]
        queries = []
        for reviewed in group:
            spec = QUESTION_TYPES.get(reviewed.drafted.passages.question_type)
            own = _passage(reviewed.drafted.passages.first.text).id if spec.answer_in_passages else None
            queries.append(RankQuery(reviewed.drafted.draft.question or "", own))
        for reviewed, rank in zip(group, index.ranks(queries), strict=True):
            ranks[reviewed.drafted.draft.id] = rank
    return ranks


def load(
    reviewed_sets: Sequence[Path] = REVIEWED_SETS, verdicts_path: Path = LIVE_VERDICTS, model: str = MODEL
) -> Loaded:
    """The labelled drafts of `reviewed_sets` with the verdicts of `verdicts_path` (see the module)."""
    verdicts = read_verdicts(verdicts_path)
    members = [(set_name(path), reviewed) for path in reviewed_sets for reviewed in read_reviewed(path)]
    ranks = _ranks(members)
    config = BuildConfig(corpus=CorpusSettings(path="."), question_types=_EVERY_TYPE)
    default_tasks = BuildTasks.for_config(config.model_copy(update={"critic": ModelSettings(spec=model)}))
    drafts: list[Labelled] = []
    waiting = 0
    for name, reviewed in members:
        drafted, question_type = reviewed.drafted, reviewed.drafted.passages.question_type
        values: dict[str, float | None] = {}
        asked: list[str] = []
        passed: dict[str, bool] = {}
        for check in CHECK_SIGNALS:
            task = task_for(check, question_type, model)
            critique = verdicts.get(task.key(drafted)) if task is not None else None
            verdict = vet(config, critique) if critique is not None else None
            if verdict is not None:
                asked.append(check)
                values[check] = verdict.measurement
                passed[check] = verdict.passed
        default_checks = [task.criterion for task in default_tasks.types[question_type].critics]
        live_defaults = [check for check in default_checks if check in CHECK_SIGNALS]
        if any(check not in passed for check in live_defaults):
            waiting += 1
            continue
        draft = drafted.draft
        question, answer = draft.question or "", draft.answer or ""
        values |= {
            "bm25_rank": ranks[draft.id],
            "extractive_share": extractive_share(answer, [chunk.text for chunk in drafted.passages.chunks]),
            "restated_share": restated_share(question, answer),
            "copied_share": copied_share(question, drafted.passages.first.text),
        }
        base_kept = _free_check(reviewed, config) is None and all(passed[check] for check in live_defaults)
        drafts.append(
            Labelled(name, draft.id, question_type, bool(reviewed.keep), Signals(values, tuple(asked)), base_kept)
        )
    return Loaded(drafts, waiting)
