"""Peak memory and throughput of chunking and sampling a large corpus (no LLM involved).

    python benchmarks/bench_scale.py            # 1,000 MB of text in 1,000 files
    python benchmarks/bench_scale.py --mb 200

Runs `qagen build CORPUS --dry-run` (load, chunk, write chunks, sample, estimate) in a subprocess
and prints its wall time, throughput and peak resident memory, so the claim "a 1 GB corpus builds
with peak memory well under 1 GB" is a measurement.
"""

from __future__ import annotations

import argparse
import random
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

WORDS = (
    "the of and to in a is that for it as was with be by on not he this are or his from at which but have an they "
    "you were her she there been one all we their has would when if so no will more can said who what about up out "
    "them into some time could then than other only its these new two may first any like now people my made over did"
).split(" ")


def write_corpus(root: Path, megabytes: int, files: int) -> int:
    """`megabytes` of word-salad paragraphs in `files` Markdown files (deterministic)."""
    rng = random.Random(0)
    root.mkdir(parents=True, exist_ok=True)
    per_file = megabytes * 1_000_000 // files
    total = 0
    for index in range(files):
        parts: list[str] = []
        size = 0
        while size < per_file:
            paragraph = " ".join(rng.choice(WORDS) for _ in range(rng.randint(40, 160))) + f" ({index}-{size})."
            parts.append(paragraph)
            size += len(paragraph) + 2
        text = "\n\n".join(parts)
        (root / f"part-{index:05d}.md").write_text(text, encoding="utf-8")
        total += len(text.encode("utf-8"))
    return total


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--mb", type=int, default=1000, help="corpus size in megabytes")
    parser.add_argument("--files", type=int, default=1000)
    parser.add_argument("--n-generations", type=int, default=5000)
    args = parser.parse_args()
    work = Path(tempfile.mkdtemp(prefix="qagen-scale-"))
    started = time.perf_counter()
    size = write_corpus(work / "corpus", args.mb, args.files)
    print(f"wrote {size / 1e6:,.0f} MB in {args.files} files in {time.perf_counter() - started:.0f} s")
    command = [sys.executable, "-m", "qagen", "build", str(work / "corpus"), "--out", str(work / "run"),
               "--n-generations", str(args.n_generations), "--dry-run", "-q"]  # fmt: skip
    started = time.perf_counter()
    completed = subprocess.run(command, capture_output=True, text=True, check=True)
    wall = time.perf_counter() - started
    peak_mb = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024
    chunks = sum(1 for _ in (work / "run" / "chunks.jsonl").open(encoding="utf-8"))
    print(completed.stdout.strip())
    print(
        f"\nqagen build --dry-run over {size / 1e6:,.0f} MB: {chunks:,} chunks in {wall:.0f} s "
        f"({size / 1e6 / wall:.1f} MB/s), peak memory {peak_mb:,.0f} MB ({peak_mb / (size / 1e6):.2f} x the corpus)"
    )


if __name__ == "__main__":
    main()
