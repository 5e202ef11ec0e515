"""Fit the combined score's shipped coefficients (`qagen/generation/score_model.json`) on qagen's reviewed sets
with their live verdicts (`benchmarks/score_data.py`), leaving out the held-out sets, and write them with how
they were made (sets, labels, date, commit, library, command). No model call.

    python benchmarks/fit_score.py                       # writes qagen/generation/score_model.json
    python benchmarks/fit_score.py --verdicts OTHER.jsonl --out /tmp/score_model.json
"""

from __future__ import annotations

import argparse
import datetime
import subprocess
import sys
from collections import Counter
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from score_data import HELD_OUT, LIVE_VERDICTS, MODEL, load

from qagen.generation.score import SHIPPED
from qagen.review.score_fit import MIN_PER_CLASS, REGULARISATION, Example, fit

REPOSITORY = Path(__file__).resolve().parents[1]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--verdicts", type=Path, default=LIVE_VERDICTS, help="the live verdicts (bench_signals ask)")
    parser.add_argument("--out", type=Path, default=SHIPPED, help="where to write the coefficients")
    args = parser.parse_args()
    import sklearn

    loaded = load(verdicts_path=args.verdicts)
    used = [d for d in loaded.drafts if d.set_name not in HELD_OUT]
    commit = subprocess.run(
        ["git", "rev-parse", "--short", "HEAD"], cwd=REPOSITORY, capture_output=True, text=True, check=True
    ).stdout.strip()
    per_set = Counter(d.set_name for d in used)
    kept_per_set = Counter(d.set_name for d in used if d.keep)
    made = {
        "sets": {name: {"drafts": per_set[name], "kept": kept_per_set[name]} for name in sorted(per_set)},
        "held_out": sorted(HELD_OUT),
        "labels": "blind reviewer keep decisions of benchmarks/reviewed/*_reviewed.jsonl and "
        "../shared/reference/data/gitdoc_drafts_reviewed.jsonl (benchmarks/reviewed/README.md says how each was made)",
        "verdicts": f"{args.verdicts.name}: supported and reader asked live of every reviewed draft by {MODEL} "
        "(Qwen2.5-Coder-1.5B-Instruct Q4 GGUF, llama-cpp-python's server; benchmarks/reviewed/README.md)",
        "drafts_waiting_for_verdicts": loaded.waiting,
        "date": datetime.date.today().isoformat(),
        "commit": commit,
        "library": f"scikit-learn {sklearn.__version__} LogisticRegression(C={REGULARISATION}), L2, unscaled features",
        "min_per_class": MIN_PER_CLASS,
        "command": "python benchmarks/fit_score.py",
    }
    model = fit([Example(d.question_type, d.signals, d.keep) for d in used], made)
    args.out.write_text(model.model_dump_json(indent=1) + "\n", encoding="utf-8")
    print(f"{len(used)} labelled drafts ({sum(d.keep for d in used)} kept) of {len(per_set)} sets -> {args.out}")
    for variant in model.variants:
        own = ", ".join(f"{name} ({c.drafts}, {c.kept} kept)" for name, c in variant.by_type.items()) or "none"
        print(f"  reads {'+'.join(variant.checks)}: own coefficients {own}; pooled {variant.pooled.drafts}")


if __name__ == "__main__":
    main()
