"""Join a run's exported drafts (with their evidence) and a reviewer's blind labels into a reviewed set.

    python benchmarks/export_for_review.py RUN --with-evidence > drafts.jsonl
    python benchmarks/reviewed/merge_labels.py drafts.jsonl labels.jsonl --model "..." > reviewed.jsonl

Every draft must have a label and every label a draft: a missing one is an error, not a silent drop.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

LABEL_FIELDS = ("groundedness", "relevance", "standalone", "valid_for_type", "keep", "note")


def _lines(path: Path) -> list[dict[str, object]]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("drafts", type=Path)
    parser.add_argument("labels", type=Path)
    parser.add_argument("--model", required=True, help="the model and prompts that drafted them, as recorded")
    args = parser.parse_args()
    drafts = {str(row["id"]): row for row in _lines(args.drafts)}
    labels = {str(row["id"]): row for row in _lines(args.labels)}
    if drafts.keys() != labels.keys():
        sys.exit(
            f"drafts without a label: {sorted(drafts.keys() - labels.keys())}; "
            f"labels without a draft: {sorted(labels.keys() - drafts.keys())}"
        )
    for draft_id, draft in drafts.items():
        label = labels[draft_id]
        missing = [field for field in LABEL_FIELDS if field not in label]
        if missing:
            sys.exit(f"the label of {draft_id} lacks {missing}")
        row = {**draft, "model": args.model, "review": {field: label[field] for field in LABEL_FIELDS}}
        sys.stdout.write(json.dumps(row, ensure_ascii=False) + "\n")


if __name__ == "__main__":
    main()
