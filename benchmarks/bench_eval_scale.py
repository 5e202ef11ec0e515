"""Peak memory and wall time of `qagen evaluate` over a large test set, and of its no-op re-run.

    python benchmarks/bench_eval_scale.py                        # 10,000 questions, answers file
    python benchmarks/bench_eval_scale.py --before /work/main    # the same, beside another checkout
    python benchmarks/bench_eval_scale.py --system baseline --chunks 40000

Writes a synthetic test set (questions with their source chunk and offsets) and, for `--system
answers`, an answers file whose every answer carries `--contexts` retrieved chunks of 1,800
characters (so `results.jsonl` is about 14 KB a row, as with a real RAG system). With `--system
baseline` the bundled BM25 baseline answers instead, over a generated corpus of `--chunks` chunks.
Then runs `qagen evaluate` (correctness judged by the stand-in LLM at 0 ms latency, plus the
retrieval and text metrics) as a CLI subprocess twice into the same directory: a first run, and a
re-run that has nothing left to do. For each it prints the wall time, the CPU time and the peak
resident memory of that process alone (`os.wait4`'s rusage of the child; CPU time is the steadier
figure on a shared machine).

The runs import qagen from this checkout (`PYTHONPATH`). With `--before PATH` the same two runs are
first made with `PYTHONPATH=PATH` (another checkout, read only), so the two columns come from one
machine in one sitting, and their summaries are compared number for number.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any, NamedTuple

# The stand-in servers sit at the repository's root (standins/), outside the installed package;
# appended, so qagen itself still comes from the install or PYTHONPATH.
sys.path.append(str(Path(__file__).resolve().parents[1]))

from standins.llm.server import StandInLLM

WORDS = (
    "lighthouse glacier violin volcano compass telescope bicycle windmill harbour station museum archive council "
    "river valley island engineers measured recorded built observed documented introduced replaced improved tested "
    "the a of in with during after before northern southern early modern first second third century year metres"
).split()
# One paragraph per chunk: two do not fit in the baseline's 2,000-character chunks, so each
# paragraph is a chunk of its own and a question's source offsets are its chunk's.
CHUNK_CHARS = 1800
THIS_TREE = str(Path(__file__).resolve().parents[1])


class Measured(NamedTuple):
    wall_s: float
    cpu_s: float
    peak_mb: float


def paragraph(rng: random.Random, label: str) -> str:
    """About `CHUNK_CHARS` characters of word salad that starts with a label of its own."""
    words = [label]
    size = len(label)
    while size < CHUNK_CHARS:
        word = rng.choice(WORDS)
        words.append(word)
        size += len(word) + 1
    return " ".join(words)[:CHUNK_CHARS]


def write_inputs(work: Path, questions: int, contexts: int, chunks: int, documents: int) -> tuple[Path, Path, Path]:
    """The corpus (`chunks` chunks in `documents` files), the test set and the answers file (deterministic)."""
    rng = random.Random(0)
    corpus = work / "corpus"
    corpus.mkdir(parents=True)
    per_document = max(1, chunks // documents)
    texts: list[list[str]] = []
    for document in range(documents):
        parts = [paragraph(rng, f"doc{document}part{part}") for part in range(per_document)]
        texts.append(parts)
        # Blank-line separated, so qagen's splitter cuts (about) at the parts.
        (corpus / f"doc-{document:05d}.md").write_text("\n\n".join(parts), encoding="utf-8")
    testset, answers = work / "testset.jsonl", work / "answers.jsonl"
    with testset.open("w", encoding="utf-8") as test_out, answers.open("w", encoding="utf-8") as answers_out:
        for number in range(questions):
            document = number % documents
            part = (number // documents) % per_document
            text = texts[document][part]
            start = part * (CHUNK_CHARS + 2)
            subject = " ".join(text.split()[1:6])
            # The chunk's own label makes the question findable by BM25 (and by the stand-in reader).
            question = f"Question {number}: what does doc{document}part{part} say after '{subject}'?"
            reference = " ".join(text.split()[6:14])
            source = f"doc-{document:05d}.md"
            row = {"id": f"q{number:06d}", "question": question, "answer": reference, "source_doc": source,
                   "context": text, "start_index": start, "end_index": start + len(text)}  # fmt: skip
            test_out.write(json.dumps(row) + "\n")
            # Half the answers retrieve the question's own chunk first, a quarter further down, a
            # quarter not at all; the rest of the contexts are other chunks.
            picked = [(rng.randrange(documents), rng.randrange(per_document)) for _ in range(contexts)]
            if number % 4 < 2:
                picked[0] = (document, part)
            elif number % 4 == 2:
                picked[-1] = (document, part)
            retrieved = [
                {"text": texts[d][p], "source": f"doc-{d:05d}.md", "start_index": p * (CHUNK_CHARS + 2)}
                for d, p in picked
            ]
            answer = reference if number % 3 else " ".join(rng.choice(WORDS) for _ in range(8))
            answers_out.write(json.dumps({"question": question, "answer": answer, "contexts": retrieved}) + "\n")
    return corpus, testset, answers


def run(command: list[str], pythonpath: str, cwd: Path) -> Measured:
    """Run `command` to its end; its wall time, CPU time (user + system) and own peak resident memory."""
    env = {**os.environ, "OPENAI_API_KEY": "bench-key", "PYTHONPATH": pythonpath}
    started = time.perf_counter()
    # Started in the work folder: `python -m` puts the current folder first on sys.path, which would
    # shadow PYTHONPATH with the checkout the benchmark was started from.
    process = subprocess.Popen(command, env=env, cwd=cwd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    assert process.stderr is not None
    errors = process.stderr.read()
    _, status, usage = os.wait4(process.pid, 0)
    wall = time.perf_counter() - started
    process.returncode = os.waitstatus_to_exitcode(status)
    if process.returncode != 0:
        sys.exit(f"{' '.join(command)} failed ({process.returncode}):\n{errors.decode(errors='replace')[-3000:]}")
    return Measured(wall, usage.ru_utime + usage.ru_stime, usage.ru_maxrss / 1024)  # KiB on Linux


def evaluate_twice(
    args: argparse.Namespace, inputs: tuple[Path, Path, Path], out: Path, url: str, pythonpath: str
) -> tuple[Measured, Measured]:
    corpus, testset, answers = inputs
    system = (
        ["--answers", str(answers)] if args.system == "answers" else ["--baseline", "bm25", "--corpus", str(corpus)]
    )
    command = [sys.executable, "-m", "qagen", "evaluate", str(testset), *system, "--out", str(out),
               "--reader-model", "openai:stand-in", "--base-url", url, "--concurrency", str(args.concurrency),
               "--metrics", args.metrics, "-q"]  # fmt: skip
    return run(command, pythonpath, out.parent), run(command, pythonpath, out.parent)


def imported_from(pythonpath: str, cwd: Path) -> str:
    """Where the child processes import qagen from, to show which checkout each column measures."""
    command = [sys.executable, "-c", "import qagen; print(qagen.__file__)"]
    env = {**os.environ, "PYTHONPATH": pythonpath}
    return subprocess.run(command, env=env, cwd=cwd, capture_output=True, text=True, check=True).stdout.strip()


def metrics_of(out: Path) -> dict[str, Any]:
    summary: dict[str, Any] = json.loads((out / "summary.json").read_text(encoding="utf-8"))
    return summary["metrics"]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--questions", type=int, default=10_000)
    parser.add_argument("--system", choices=("answers", "baseline"), default="answers")
    parser.add_argument("--contexts", type=int, default=7, help="contexts per answer in the answers file")
    parser.add_argument("--chunks", type=int, default=10_000, help="chunks in the corpus (the baseline's index)")
    parser.add_argument("--documents", type=int, default=500)
    parser.add_argument("--concurrency", type=int, default=64)
    parser.add_argument("--metrics", default="correctness,retrieval,text")
    parser.add_argument("--before", default=None, help="another checkout to measure first (PYTHONPATH)")
    args = parser.parse_args()
    work = Path(tempfile.mkdtemp(prefix="qagen-evalscale-"))
    started = time.perf_counter()
    inputs = write_inputs(work, args.questions, args.contexts, args.chunks, args.documents)
    sizes = ", ".join(f"{path.name} {path.stat().st_size / 1e6:.0f} MB" for path in inputs[1:])
    print(f"inputs in {work} ({sizes}; {time.perf_counter() - started:.0f} s)")
    columns: dict[str, tuple[Measured, Measured, Path]] = {}
    with StandInLLM(latency=0.0) as server:
        checkouts = [("before", args.before), ("after", THIS_TREE)] if args.before else [("this tree", THIS_TREE)]
        for label, pythonpath in checkouts:
            print(f"{label}: {imported_from(pythonpath, work)}")
            out = work / f"eval-{label.replace(' ', '-')}"
            first, again = evaluate_twice(args, inputs, out, server.base_url, pythonpath)
            columns[label] = (first, again, out)
    results_mb = (next(iter(columns.values()))[2] / "results.jsonl").stat().st_size / 1e6
    print(f"\nqagen evaluate, {args.questions:,} questions ({args.system}; results.jsonl {results_mb:.0f} MB)")
    print(f"{'':28}" + "".join(f"{label:>14}" for label in columns))
    rows = [
        ("first run: wall (s)", lambda m: f"{m[0].wall_s:.1f}"),
        ("first run: CPU (s)", lambda m: f"{m[0].cpu_s:.1f}"),
        ("first run: peak RSS (MB)", lambda m: f"{m[0].peak_mb:,.0f}"),
        ("no-op re-run: wall (s)", lambda m: f"{m[1].wall_s:.1f}"),
        ("no-op re-run: CPU (s)", lambda m: f"{m[1].cpu_s:.1f}"),
        ("no-op re-run: peak RSS (MB)", lambda m: f"{m[1].peak_mb:,.0f}"),
    ]
    for name, cell in rows:
        print(f"{name:28}" + "".join(f"{cell(measured):>14}" for measured in columns.values()))
    if len(columns) == 2:
        (_, _, before_out), (_, _, after_out) = columns.values()
        same = metrics_of(before_out) == metrics_of(after_out)
        print(f"\nsummary metrics (means, intervals, counts) identical before and after: {same}")


if __name__ == "__main__":
    main()
