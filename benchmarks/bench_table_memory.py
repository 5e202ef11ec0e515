"""Peak memory of reading a table whose one text cell is huge (.csv, .jsonl, .parquet).

    python benchmarks/bench_table_memory.py                # a 200 MB cell in each format
    python benchmarks/bench_table_memory.py --size-mb 50   # quicker

For each format, one file holding one row whose `text` cell is SIZE MB of ASCII prose (paragraphs,
commas, quotes: what a CSV writer has to quote and a JSON writer to escape). Two measures, each in
a fresh child process so that peaks do not mix:

- `read`: `read_table` alone, the document consumed and dropped (the cost of the reader);
- `chunk`: the whole `qagen stage chunk` command (reader, splitter, chunk file).

Printed per format and measure: the cell's and the file's size, the child's peak RSS, the same
child's peak over a one-row file of that format with a short cell (imports and the interpreter: the
baseline), and the ratio (peak - baseline) / cell size, the memory the cell cost per byte of it. The goal is 2-3x: the cell once
as read and once as text, never several copies.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import tempfile
from pathlib import Path

MIB = 2**20
PARAGRAPH = (
    'Entry {n}: the harbour master, who kept the "tide book" for thirty years, wrote that the north pier, '
    "the lighthouse and the old customs house were rebuilt after the storm of the third winter.\n\n"
)
FORMATS = ("csv", "jsonl", "parquet")

# The child: runs one measure on one file. It is started by a small launcher that reports the
# child's peak (RUSAGE_CHILDREN): Linux carries a process's peak RSS across exec, so a child
# started straight from this process (which held the Parquet cell to write it) would report ours.
_READ = """
import sys
from pathlib import Path
from qagen.corpus.load.tables import read_table
path = Path(sys.argv[1])
skipped = []
characters = 0
for document in read_table(path, path.name, text_column="text", source_column=None, skip=skipped.append):
    characters += len(document.text)
    del document
assert characters > 0 and not skipped, skipped
"""
_CHUNK = """
import runpy, sys
sys.argv = ["qagen", "stage", "chunk", sys.argv[1], "--out", sys.argv[2], "-q"]
runpy.run_module("qagen", run_name="__main__")
"""
_LAUNCHER = """
import resource, subprocess, sys
subprocess.run([sys.executable, "-c", *sys.argv[1:]], check=True, stdout=subprocess.DEVNULL)
print(resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024)
"""


def blocks(size: int) -> list[str]:
    """About `size` characters of prose, as 1 MiB blocks (never the whole cell in one string here)."""
    block = "".join(PARAGRAPH.format(n=n) for n in range(MIB // len(PARAGRAPH) + 1))[:MIB]
    return [block] * (size // MIB) if size >= MIB else [block[:size]]


def write_table(path: Path, size: int) -> Path:
    """One row, `id` and `text`, whose text is `size` characters."""
    parts = blocks(size)
    if path.suffix == ".csv":
        with path.open("w", encoding="utf-8", newline="") as handle:
            handle.write('id,text\r\n1,"')
            for part in parts:
                handle.write(part.replace('"', '""'))
            handle.write('"\r\n')
    elif path.suffix == ".jsonl":
        with path.open("w", encoding="utf-8") as handle:
            handle.write('{"id": 1, "text": "')
            for part in parts:
                handle.write(json.dumps(part)[1:-1])
            handle.write('"}\n')
    else:
        import pyarrow as pa
        import pyarrow.parquet as pq

        # Uncompressed and without a dictionary: the file is as large as the cell, as for the others.
        table = pa.table({"id": [1], "text": ["".join(parts)]})
        pq.write_table(table, path, compression="none", use_dictionary=False)
    return path


def peak_mib(measure: str, path: Path, work: Path) -> float:
    script = _READ if measure == "read" else _CHUNK
    out = work / f"run-{measure}-{path.stem}-{path.suffix[1:]}"
    env = {**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[1])}
    result = subprocess.run(
        [sys.executable, "-c", _LAUNCHER, script, str(path), str(out)],
        env=env,
        capture_output=True,
        text=True,
        check=True,
    )
    return float(result.stdout.strip().splitlines()[-1])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--size-mb", type=int, default=200, help="size of the one cell, in MiB (default 200)")
    parser.add_argument("--formats", default=",".join(FORMATS), help="comma-separated, of csv,jsonl,parquet")
    parser.add_argument("--measures", default="read,chunk", help="comma-separated, of read,chunk")
    args = parser.parse_args()
    print(f"{'format':8} {'measure':7} {'cell MiB':>9} {'file MiB':>9} {'peak MiB':>9} {'baseline':>9} {'ratio':>7}")
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        for suffix in args.formats.split(","):
            big = write_table(work / f"big.{suffix}", args.size_mb * MIB)
            small = write_table(work / f"small.{suffix}", 1000)
            size = big.stat().st_size / MIB
            cell = len("".join(blocks(args.size_mb * MIB))) / MIB
            for measure in args.measures.split(","):
                baseline = peak_mib(measure, small, work)
                peak = peak_mib(measure, big, work)
                ratio = (peak - baseline) / cell
                print(
                    f"{suffix:8} {measure:7} {cell:9.0f} {size:9.0f} {peak:9.0f} {baseline:9.0f} {ratio:6.2f}x",
                    flush=True,
                )
            big.unlink()
    print(f"(this process: {resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024:.0f} MiB)")


if __name__ == "__main__":
    main()
