"""What a build of several question types made, per type: drafted and kept, three kept examples, and
how many of a question's content words its passage spells out (`copied_share`), for every parsed
draft and for the kept ones; `reworded` against `factoid` is the figure issue 22 asks for.

    python benchmarks/question_types_report.py RUN_DIR [--examples 3]

Reads `RUN_DIR/candidates` and `RUN_DIR/summary.json`; makes no call.
"""

from __future__ import annotations

import argparse
import json
import statistics
from pathlib import Path

from datasets import load_from_disk

from qagen.generation.checks.easiness import copied_share


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("run_dir", type=Path)
    parser.add_argument("--examples", type=int, default=3)
    args = parser.parse_args()
    summary = json.loads((args.run_dir / "summary.json").read_text(encoding="utf-8"))
    rows = list(load_from_disk(str(args.run_dir / "candidates")))
    for name, counts in summary["question_types"].items():
        of_type = [row for row in rows if row.get("question_type", "factoid") == name]
        drafted = [row for row in of_type if row["question"] is not None]
        kept = [row for row in of_type if row["status"] == "kept"]
        print(f"\n== {name} ({counts['share']}%): asked {counts['requested']}, drafted {counts['drafted']}, "
              f"kept {counts['kept']}; rejected {counts['rejected_by']}")  # fmt: skip
        for label, chosen in (("drafted", drafted), ("kept", kept)):
            shares = [s for row in chosen if (s := copied_share(row["question"], row["context"])) is not None]
            if shares:
                print(
                    f"   copied share ({label}, n={len(shares)}): mean {statistics.fmean(shares):.2f}, "
                    f"median {statistics.median(shares):.2f}"
                )
        for row in kept[: args.examples]:
            sources = " + ".join(row.get("source_docs") or [row["source_doc"]])
            print(f"   - Q: {row['question']}\n     A: {row['answer']}\n     from: {sources}")


if __name__ == "__main__":
    main()
