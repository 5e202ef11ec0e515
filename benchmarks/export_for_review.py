"""A run's drafts as a reviewer labels them blind: the passages (with their documents), the question type,
the question and the answer, and nothing a critic or check said.

    python benchmarks/export_for_review.py RUN > drafts_to_review.jsonl

One JSON line per parsed draft: `id` (the draft's), `question_type`, `passages` (each `document`, `text`),
`question`, `answer`, and for an unanswerable question `retrieved`: the chunks a BM25 search of the whole
corpus finds for it (what decides whether the corpus answers it). With `--with-evidence`, also the
sentence the draft quoted as its evidence (what the free checks read; a reviewer does not see it). The
labels come back keyed by `id` (see benchmarks/reviewed/README.md).
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from qagen.corpus.chunk_index import ChunkIndex
from qagen.generation.pipeline import load_sample
from qagen.generation.tasks import BuildTasks
from qagen.question_types import QUESTION_TYPES
from qagen.records import Draft
from qagen.runs.rundir import RunDir


def drafts_to_review(run_dir: Path, *, with_evidence: bool = False) -> list[dict[str, object]]:
    """Every parsed draft of the run, in sample order, with what a blind reviewer sees."""
    run = RunDir(run_dir)
    config = run.stored_config()
    tasks = BuildTasks.for_config(config)
    drafts: dict[str, Draft] = {}
    with (run_dir / "drafts.jsonl").open(encoding="utf-8") as log:
        for line in log:
            draft = Draft.model_validate_json(line)
            drafts[draft.id] = draft
    index = ChunkIndex(run.iter_chunks)
    rows: list[dict[str, object]] = []
    for item in load_sample(config, run):
        draft = drafts.get(tasks.draft_key(item))
        if draft is None or not draft.ok:
            continue
        row: dict[str, object] = {
            "id": draft.id,
            "question_type": item.question_type,
            "passages": [{"document": chunk.source, "text": chunk.text} for chunk in item.chunks],
            "question": draft.question,
            "answer": draft.answer,
        }
        if not QUESTION_TYPES.get(item.question_type).answer_in_passages:
            found = index.top(draft.question or "")
            row["retrieved"] = [{"document": chunk.source, "text": chunk.text} for chunk in found]
        if with_evidence:
            row["evidence"] = draft.evidence
        rows.append(row)
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("run", type=Path, help="a run directory that holds drafts")
    parser.add_argument("--with-evidence", action="store_true", help="add the sentence each draft quoted")
    args = parser.parse_args()
    for row in drafts_to_review(args.run, with_evidence=args.with_evidence):
        sys.stdout.write(json.dumps(row, ensure_ascii=False) + "\n")


if __name__ == "__main__":
    main()
