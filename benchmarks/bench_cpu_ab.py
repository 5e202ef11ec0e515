"""CPU per call of a build, this checkout against another, in alternating rounds (for a busy machine).

    python benchmarks/bench_cpu_ab.py /path/to/other/checkout --drafts 5000 --rounds 4

`bench_scale.py --compare` builds A, then B, once each: on a shared 2-core machine whose load moves
by several units in a minute, one such pair differs by 5-10% either way with nothing changed. Here
each round builds the same corpus with A and with B, one right after the other (A first in odd
rounds, B first in even ones), against one 0 ms stand-in (64 in flight, as `bench_scale.py`), and the
CPU (user + system, the whole CLI process's rusage) per LLM call is compared round by round: printed
are every round's pair, the median of the rounds' A/B ratios, and whether the last pair wrote the same
candidate and kept rows.
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from bench_scale import REPOSITORY, build_args, calls_of, corpus_for, run_process, same_outputs, stand_in


def cpu_per_call(work: Path, corpus: Path, base_url: str, drafts: int, pythonpath: str, name: str) -> float:
    """One fresh build with qagen imported from `pythonpath`: its CPU ms per LLM call."""
    out = work / name
    shutil.rmtree(out, ignore_errors=True)
    args = build_args(corpus, out, base_url, drafts, 64)
    process = run_process([sys.executable, "-m", "qagen", *args], pythonpath)
    return process.cpu * 1000 / calls_of(out)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("other", help="the other checkout (B): its qagen is imported from there")
    parser.add_argument("--drafts", type=int, default=5000)
    parser.add_argument("--rounds", type=int, default=4)
    args = parser.parse_args()
    work = Path(tempfile.mkdtemp(prefix="qagen-cpu-ab-"))
    corpus = corpus_for(work, args.drafts)
    sides = {"A": str(REPOSITORY), "B": args.other}
    print(f"{args.drafts:,} drafts, 0 ms stand-in, 64 in flight; A = {REPOSITORY}, B = {args.other}")
    print(f"  {'round':>5}  {'A ms/call':>9}  {'B ms/call':>9}  {'A/B':>6}  load")
    ratios = []
    with stand_in(0.0, work) as base_url:
        for number in range(1, args.rounds + 1):
            order = ("A", "B") if number % 2 else ("B", "A")
            cpu = {side: cpu_per_call(work, corpus, base_url, args.drafts, sides[side], side) for side in order}
            ratios.append(cpu["A"] / cpu["B"])
            print(f"  {number:>5}  {cpu['A']:>9.3f}  {cpu['B']:>9.3f}  {ratios[-1]:>6.3f}  {os.getloadavg()[0]:.1f}")
    print(f"median A/B over {len(ratios)} rounds: {statistics.median(ratios):.3f}")
    print(f"last round's outputs: {same_outputs(work / 'A', work / 'B')}")
    shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
