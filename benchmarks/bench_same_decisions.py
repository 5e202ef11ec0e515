"""Whether another checkout decides the same stand-in builds alike: the kept ids and every candidate's
status, for the vetting modes and the token-probability cases a refactor of the decision must keep.

    python benchmarks/bench_same_decisions.py /path/to/other/checkout [--drafts 60]

Each build runs `python -m qagen build` once with this checkout and once with the other on PYTHONPATH,
against the same stand-in LLM (this checkout's `standins/`), and prints one line a case. Issue 39
(decisions moved into `qagen/generation/vetting.py`) measured with it against 356c3df: every case the same.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

from datasets import load_from_disk

from standins.corpus import write_corpus
from standins.llm.server import StandInLLM

REPOSITORY = Path(__file__).resolve().parents[1]
CASES: dict[str, tuple[list[str], dict[str, Any]]] = {
    "cookbook, probabilities": (["--vetting", "cookbook"], {"logprobs": True, "pass_rate": 0.6}),
    "cookbook, written": (["--vetting", "cookbook"], {"pass_rate": 0.6}),
    "checks, disagreeing": (
        [],
        {"logprobs": True, "pass_rate": {"supported": 0.6}, "doubtful_yes_rate": 0.4, "doubtful_no_rate": 0.4},
    ),
    "checks, written": ([], {"pass_rate": {"supported": 0.6}}),
    "typed checks": (
        ["--question-types", "factoid=40,multi_hop=20,unanswerable=20,reworded=20"],
        {
            "logprobs": True, "pass_rate": 0.7, "doubtful_yes_rate": 0.3, "reader_mismatch_rate": 0.2,
            "single_hop_rate": 0.3, "answerable_rate": 0.3,
        },
    ),
}  # fmt: skip


def statuses(
    tree: Path, corpus: Path, out: Path, flags: list[str], knobs: dict[str, Any], drafts: int
) -> dict[str, str]:
    """Every candidate's status of one stand-in build made by the checkout `tree`."""
    with StandInLLM() as llm:
        llm.configure(**knobs)
        args = [sys.executable, "-m", "qagen", "build", str(corpus), "--out", str(out), "--generator-model",
                "openai:stand-in", "--base-url", llm.base_url, "-n", str(drafts), "--chunk-size", "400",
                "--chunk-overlap", "40", "--seed", "5", "-q", *flags]  # fmt: skip
        env = {**os.environ, "PYTHONPATH": str(tree), "OPENAI_API_KEY": "stand-in"}
        done = subprocess.run(args, env=env, capture_output=True, text=True, cwd=tree, check=False)
        if done.returncode != 0:
            raise SystemExit(f"the build of {tree} failed:\n{done.stderr[-2000:]}")
    return {row["id"]: row["status"] for row in load_from_disk(str(out / "candidates"))}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("other", type=Path, help="the other checkout (a git worktree of another commit)")
    parser.add_argument("--drafts", type=int, default=60, help="drafts a build")
    options = parser.parse_args()
    work = Path(tempfile.mkdtemp(prefix="same-decisions-"))
    corpus = write_corpus(work / "corpus")
    for case, (name, (flags, knobs)) in enumerate(CASES.items()):
        found = {
            label: statuses(tree, corpus, work / f"{label}-{case}", flags, knobs, options.drafts)
            for label, tree in (("other", options.other.resolve()), ("this", REPOSITORY))
        }
        kept = {label: sum(status == "kept" for status in rows.values()) for label, rows in found.items()}
        print(f"{name:<26} kept other {kept['other']:>3}  this {kept['this']:>3}  "
              f"same statuses: {found['other'] == found['this']}")  # fmt: skip


if __name__ == "__main__":
    main()
