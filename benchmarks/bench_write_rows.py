"""Writing a build's `candidates/` and `dataset/`: time and peak memory, writer beside writer.

    python benchmarks/bench_write_rows.py                             # 1,000 and 30,000 candidates
    python benchmarks/bench_write_rows.py --before /work/main         # also the tree's earlier writer
    python benchmarks/bench_write_rows.py --sizes 1000 --repeat 5

Each measure runs in a fresh child process (its own imports, its own peak), which makes N candidate
rows of realistic size (a 2,000-character context, critics' rationales and raw replies: about 4 KB
a row, two in three kept) and writes them as a build does:

- `qagen`: the build's own writer in the tree on `PYTHONPATH` (`write.save_outputs`: `datasets`'
  `ArrowWriter` streaming both sets, then `save_to_disk`); with `--before PATH`, the same measure
  with `PYTHONPATH=PATH`, whichever writer that tree has (`arrow_rows.RowWriter`: pyarrow alone,
  streamed, no `datasets` import);
- `from_list`: every row held in a list, then `Dataset.from_list(...).save_to_disk(...)` per set
  (`datasets` the plain way, for its memory);
- `rows only`: the rows made (as the `CandidateRow` records the build's filter hands the writer)
  and dropped: what every measure above includes.

Printed per size and measure (median of `--repeat` runs): the child's wall time from start to exit
(interpreter, imports and the write), the time of the write alone (imports included: a build pays
them), CPU seconds, peak RSS, and the extra time and memory over `rows only`. Both outputs are
checked to load with `load_from_disk` with the rows' columns and counts.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import NamedTuple

THIS_TREE = str(Path(__file__).resolve().parents[1])

_CHILD = r"""
import json, random, sys, time
from pathlib import Path

started = time.perf_counter()
method, count, out = sys.argv[1], int(sys.argv[2]), Path(sys.argv[3])
rng = random.Random(1)
words = "the of harbour lighthouse glacier council measured recorded built during after northern century".split()
pool = [" ".join(rng.choice(words) for _ in range(400)) for _ in range(64)]

def dicts():
    for i in range(count):
        text = pool[i % 64]
        kept = i % 3 != 2
        yield {
            "context": text[:2000], "question": f"What was measured in year {i}?", "answer": text[:60],
            "source_doc": f"doc{i % 500}.txt", "groundedness_score": 5, "groundedness_eval": text[:300],
            "relevance_score": 4, "relevance_eval": text[300:600], "standalone_score": 5 if kept else 2,
            "standalone_eval": text[600:900], "id": f"{i:064x}", "chunk_id": f"{i + 1:064x}",
            "start_index": i * 1800, "end_index": i * 1800 + 2000, "generator_model": "openai:gpt-4o-mini",
            "critic_model": "openai:gpt-4o-mini", "qa_prompt_hash": "a" * 64, "groundedness_prompt_hash": "b" * 64,
            "relevance_prompt_hash": "c" * 64, "standalone_prompt_hash": "d" * 64,
            "status": "kept" if kept else "rejected", "reason": "" if kept else "standalone=2<4",
            "generation_raw": text[:200], "groundedness_raw": text[:400], "relevance_raw": text[400:800],
            "standalone_raw": text[800:1200],
        }


from qagen.records import CandidateRow, DatasetRow


def rows():
    # What the build's filter hands the writer: one CandidateRow per sampled chunk.
    return (CandidateRow.model_validate(row) for row in dicts())


write_started = time.perf_counter()
if method == "rows":
    for row in rows():
        pass
elif method == "from_list":
    from datasets import Dataset
    from qagen.generation.write import row_columns, row_features
    every = [row.model_dump(include=set(row_columns(CandidateRow))) for row in rows()]
    kept = [{c: row[c] for c in row_columns(DatasetRow)} for row in every if row["status"] == "kept"]
    Dataset.from_list(every, features=row_features(CandidateRow)).save_to_disk(str(out / "candidates"), num_shards=1)
    Dataset.from_list(kept, features=row_features(DatasetRow)).save_to_disk(str(out / "dataset"), num_shards=1)
else:
    try:
        from qagen.generation.arrow_rows import RowWriter
    except ImportError:
        from qagen.generation.write import save_outputs
        save_outputs(rows(), out / "dataset", out / "candidates")
        method = "datasets ArrowWriter"
    else:
        try:  # the columns a build without extra critics leaves out, where the tree has them
            from qagen.generation.write import omitted_columns
            omit = omitted_columns(False)
        except ImportError:
            omit = ()
        with RowWriter(out / "dataset", DatasetRow, *([omit] if omit else [])) as kept, \
                RowWriter(out / "candidates", CandidateRow, *([omit] if omit else [])) as every:
            for candidate in rows():
                row = candidate.model_dump()
                every.add(row)
                if row["status"] == "kept":
                    kept.add(row)
        method = "arrow_rows (pyarrow)"
print(json.dumps({"write_s": time.perf_counter() - write_started, "writer": method}))
"""

_CHECK = r"""
import json, sys
from datasets import load_from_disk
out = sys.argv[1]
print(json.dumps({name: [load_from_disk(f"{out}/{name}").num_rows, load_from_disk(f"{out}/{name}").column_names]
                  for name in ("dataset", "candidates")}))
"""


class Measure(NamedTuple):
    wall_s: float
    write_s: float
    cpu_s: float
    peak_mb: float
    writer: str


def measure(tree: str, method: str, count: int, work: Path) -> Measure:
    out = Path(tempfile.mkdtemp(dir=work))
    env = {**os.environ, "PYTHONPATH": tree, "HF_DATASETS_DISABLE_PROGRESS_BARS": "1"}
    started = time.perf_counter()
    child = subprocess.Popen(
        [sys.executable, "-c", _CHILD, method, str(count), str(out)],
        env=env,
        stdout=subprocess.PIPE,
        text=True,
        cwd=work,  # `-c` puts the working directory first on sys.path: not a checkout's
    )
    stdout = child.stdout.read() if child.stdout else ""
    _, status, usage = os.wait4(child.pid, 0)
    wall = time.perf_counter() - started
    if status != 0:
        raise SystemExit(f"{method} at {count} rows failed (status {status})")
    reported = json.loads(stdout.strip().splitlines()[-1])
    if method != "rows":
        check = subprocess.run(
            [sys.executable, "-c", _CHECK, str(out)], env=env, capture_output=True, text=True, cwd=work
        )
        loaded = json.loads(check.stdout)
        kept = sum(1 for i in range(count) if i % 3 != 2)
        assert loaded["candidates"][0] == count and loaded["dataset"][0] == kept, loaded
        assert len(loaded["candidates"][1]) == 26 and len(loaded["dataset"][1]) == 20, loaded
    return Measure(
        wall, reported["write_s"], usage.ru_utime + usage.ru_stime, usage.ru_maxrss / 1024, reported["writer"]
    )


def median(measures: list[Measure]) -> Measure:
    return Measure(
        statistics.median(m.wall_s for m in measures),
        statistics.median(m.write_s for m in measures),
        statistics.median(m.cpu_s for m in measures),
        statistics.median(m.peak_mb for m in measures),
        measures[0].writer,
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--sizes", type=int, nargs="+", default=[1000, 30000], help="candidate rows per measure")
    parser.add_argument("--repeat", type=int, default=3, help="runs per measure (the median is printed)")
    parser.add_argument("--before", help="another checkout whose writer is measured beside this tree's")
    args = parser.parse_args()
    setups = [("rows only", THIS_TREE, "rows")]
    if args.before:
        setups.append(("before: qagen", args.before, "qagen"))
    setups += [("qagen", THIS_TREE, "qagen"), ("from_list", THIS_TREE, "from_list")]
    header = f"{'rows':>7}  {'measure':<14} {'writer':<22} {'wall s':>7} {'write s':>8} {'cpu s':>6} {'peak MB':>8}"
    print(header + f"  {'+s over rows':>12} {'+MB over rows':>13}")
    with tempfile.TemporaryDirectory() as work:
        for count in args.sizes:
            base: Measure | None = None
            for label, tree, method in setups:
                result = median([measure(tree, method, count, Path(work)) for _ in range(args.repeat)])
                base = base or result
                print(
                    f"{count:>7}  {label:<14} {result.writer:<22} {result.wall_s:>7.2f} {result.write_s:>8.2f} "
                    f"{result.cpu_s:>6.2f} {result.peak_mb:>8.0f}  {result.wall_s - base.wall_s:>12.2f} "
                    f"{result.peak_mb - base.peak_mb:>13.0f}",
                    flush=True,
                )


if __name__ == "__main__":
    main()
