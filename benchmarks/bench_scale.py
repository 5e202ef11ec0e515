"""A build at scale: CPU, memory and time per stage as drafts grow, and efficiency at high latency.

    python benchmarks/bench_scale.py                          # everything (about an hour on 2 cores)
    python benchmarks/bench_scale.py --sizes 2000,8000 --no-efficiency
    python benchmarks/bench_scale.py --sizes 3000,30000 --no-efficiency --compare /path/to/other/checkout
    python benchmarks/bench_scale.py --no-scale --efficiency 0.2x32
    python benchmarks/bench_scale.py --dry-run-mb 1000        # chunk + sample 1,000 MB, no LLM
    python benchmarks/bench_scale.py --sizes 2000 --no-efficiency --question-types factoid=50,unanswerable=50

Scale (`--sizes`, drafts; 0 ms stand-in, `--scale-concurrency` in flight): for each size, a fresh
word-salad corpus of about 1.2 chunks per draft, one `qagen build`, then the same command again (a
no-op re-run). Printed per size: CPU ms per LLM call and peak RSS of the whole CLI process, the
time of each stage (chunk, LLM stage, finalize; near-duplicate removal and the drafts' BM25 ranks
inside finalize, and bm25s indexing every chunk wherever it happens, with how many times it happened, also on their own)
and of the no-op re-run, and each stage's own peak RSS (Linux: the process's peak is reset as a
stage begins); then the log-log slope of each from the smallest to the largest size
(1.0 is linear); and CPU ms per call of each stage, the sizes side by side, with its share of the
process' CPU. With `--compare PATH` each size is built a second time importing qagen from PATH (a
checkout of another commit), and the two are printed side by side (CPU per call and its ratio, peak
RSS, no-op re-run), with whether both wrote the same candidate and kept rows. Stage times come from timers wrapped around the pipeline's stage functions in the
build's own process (`_DRIVER`); CPU and memory are the process's own rusage (`os.wait4`). The
builds draft factoids, or the mix of `--question-types` (unanswerable questions' critic searches
the chunks during the LLM stage). They find near-duplicates by the word-overlap rule alone
(`--dedup-embeddings none`): with the dense extra installed a build's default embeds every question
with all-MiniLM-L6-v2 and compares each with every kept one, whose model and all-pairs comparison
would be measured instead of the build (`--dedup-embeddings local` measures them).

Efficiency (`--efficiency LATENCYxCONCURRENCY[:CALLS]`): a plain `qagen build` CLI process against
the stand-in with that latency, enough drafts for CALLS calls (default 3,300 at 200 ms x 32 and
9,100 at 1 s x 256); efficiency = calls x latency / concurrency / wall, start-up included.

What it measured last, with what still grows: docs/benchmarks.md ("Memory and CPU of a large build").

The stand-in LLM runs in a process of its own, so its CPU is not counted; on a 2-core machine it
still competes with the build, so run the big sizes alone.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import random
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import NamedTuple

WORDS = (
    "the of and to in a is that for it as was with be by on not he this are or his from at which but have an they "
    "you were her she there been one all we their has would when if so no will more can said who what about up out "
    "them into some time could then than other only its these new two may first any like now people my made over did"
).split(" ")
REPOSITORY = Path(__file__).resolve().parents[1]
"""This checkout: the builds import its qagen unless told another (`--compare`), and its `standins/`."""
CHUNKS_PER_MB = 555  # word salad at the default 2,000/200 chunking
CALLS_PER_DRAFT = 3.3  # a little under the stand-in's 3.44 at its 0.8 pass rate, so CALLS is reached

_DRIVER = r"""
import json, sys, time
import bm25s
from qagen.corpus import chunk_index
from qagen.generation import dedup, pipeline

log = open(sys.argv[1], "a", encoding="utf-8")
spent = {stage + part: 0.0 for stage in ("dedup", "index", "ranks") for part in ("", " cpu", " calls", " MB", " rise MB")}
open_peaks = []  # the peak RSS (MB) of each stage being timed, innermost last
process_peak = [0.0]  # the process's peak RSS before the last reset (the reset hides it from rusage too)

def status_mb(field):
    with open("/proc/self/status", encoding="ascii") as status:
        line = next(line for line in status if line.startswith(field + ":"))
    return int(line.split()[1]) / 1024

def fold_peak():
    # Linux keeps one peak RSS a process (VmHWM), which writing 5 to clear_refs resets: each stage
    # reads it into every stage still open before resetting it, so nested stages each see their own.
    peak = status_mb("VmHWM")
    open_peaks[:] = [max(seen, peak) for seen in open_peaks]
    process_peak[0] = max(process_peak[0], peak)
    with open("/proc/self/clear_refs", "w", encoding="ascii") as clear:
        clear.write("5")

def timed(owner, names, stage, *, accumulate=False):
    name = next((n for n in names if hasattr(owner, n)), None)
    if name is None:
        return
    original = getattr(owner, name)
    def wrapper(*args, **kwargs):
        fold_peak()
        before = status_mb("VmRSS")
        open_peaks.append(before)
        started, cpu = time.perf_counter(), time.process_time()
        try:
            return original(*args, **kwargs)
        finally:
            seconds, cpu = time.perf_counter() - started, time.process_time() - cpu
            fold_peak()
            peak = open_peaks.pop()
            if accumulate:
                spent[stage] += seconds
                spent[f"{stage} cpu"] += cpu
                spent[f"{stage} calls"] = spent.get(f"{stage} calls", 0.0) + 1
                spent[f"{stage} MB"] = max(spent.get(f"{stage} MB", 0.0), peak)
                spent[f"{stage} rise MB"] = max(spent.get(f"{stage} rise MB", 0.0), peak - before)
            else:
                entry = {"stage": stage, "seconds": seconds, "cpu": cpu, "MB": peak, "start MB": before,
                         "process MB": process_peak[0], **spent}
                log.write(json.dumps(entry) + "\n")
                log.flush()
                spent.update(dict.fromkeys(spent, 0.0))
    setattr(owner, name, wrapper)

timed(pipeline, ["chunk_stage"], "chunk")
timed(pipeline, ["load_sample"], "sample")
timed(pipeline, ["run_llm_stages"], "llm")
timed(pipeline, ["write_outputs", "_finalize"], "finalize")
timed(dedup.NearDuplicateFilter, ["match"], "dedup", accumulate=True)
timed(dedup.NearDuplicateFilter, ["keep"], "dedup", accumulate=True)
timed(bm25s.BM25, ["index"], "index", accumulate=True)
timed(chunk_index.ChunkIndex, ["ranks"], "ranks", accumulate=True)
sys.argv = ["qagen", *sys.argv[2:]]
from qagen.cli.app import run
run()
"""


def write_corpus(root: Path, megabytes: float, files: int) -> int:
    """`megabytes` of word-salad paragraphs in `files` Markdown files (deterministic)."""
    rng = random.Random(0)
    root.mkdir(parents=True, exist_ok=True)
    per_file = int(megabytes * 1_000_000) // files
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


def corpus_for(work: Path, drafts: int) -> Path:
    """A corpus of about 1.2 chunks per draft (so sampling chooses), in files of about 100 kB."""
    megabytes = max(1.0, drafts * 1.2 / CHUNKS_PER_MB)
    root = work / f"corpus-{drafts}"
    write_corpus(root, megabytes, files=max(10, int(megabytes * 10)))
    return root


@contextmanager
def stand_in(latency: float, work: Path, log: Path | None = None) -> Iterator[str]:
    """The stand-in LLM in a process of its own (each request logged to `log`); yields its base URL."""
    port_file = work / f"port-{time.monotonic_ns()}"
    command = [sys.executable, "-m", "standins.llm.server", "--port", "0", "--port-file", str(port_file),
               "--latency", str(latency), *(["--log", str(log)] if log else [])]  # fmt: skip
    # From the repository's root, where `python -m` finds standins/ (it is not installed).
    server = subprocess.Popen(command, stdout=subprocess.DEVNULL, cwd=REPOSITORY)
    try:
        while not port_file.exists():
            if server.poll() is not None:
                raise RuntimeError("the stand-in LLM did not start")
            time.sleep(0.05)
        yield f"http://127.0.0.1:{port_file.read_text().strip()}/v1"
    finally:
        server.terminate()
        server.wait()


class Process(NamedTuple):
    wall: float
    cpu: float
    peak_mb: float


def run_process(command: list[str], pythonpath: str | None = None) -> Process:
    """Run a command importing qagen from `pythonpath` (None: this checkout); its wall time, CPU seconds
    (user + system) and peak RSS, from its own rusage.

    In a folder of its own: `python -c` and `python -m` put their working directory first on the
    path, so run from a checkout's root, a build meant to import another checkout's qagen imported
    that root's (`--compare` compared this checkout with itself)."""
    env = {**os.environ, "OPENAI_API_KEY": "bench-key", "PYTHONPATH": pythonpath or str(REPOSITORY)}
    with tempfile.TemporaryFile() as stderr, tempfile.TemporaryDirectory() as folder:
        started = time.perf_counter()
        child = subprocess.Popen(command, env=env, stdout=subprocess.DEVNULL, stderr=stderr, cwd=folder)
        _, status, usage = os.wait4(child.pid, 0)
        wall = time.perf_counter() - started
        child.returncode = os.waitstatus_to_exitcode(status)
        if child.returncode != 0:
            stderr.seek(0)
            message = stderr.read().decode(errors="replace")[-2000:]
            raise RuntimeError(f"{' '.join(command[:4])} ... exited with {child.returncode}:\n{message}")
    return Process(wall, usage.ru_utime + usage.ru_stime, usage.ru_maxrss / 1024)


def build_args(
    corpus: Path,
    out: Path,
    base_url: str,
    drafts: int,
    concurrency: int,
    question_types: str | None = None,
    dedup_embeddings: str = "none",
) -> list[str]:
    types = ["--question-types", question_types] if question_types else []
    return ["build", str(corpus), "--out", str(out), "--generator-model", "openai:stand-in", "--base-url", base_url,
            "--n-generations", str(drafts), "--concurrency", str(concurrency), "--seed", "1", "-q",
            "--dedup-embeddings", dedup_embeddings, *types]  # fmt: skip


def calls_of(out: Path) -> int:
    usage = json.loads((out / "summary.json").read_text())["usage"]
    return int(usage["generation"]["calls"] + usage["critique"]["calls"])


class Measured(NamedTuple):
    drafts: int
    calls: int
    build: Process
    stages: dict[str, float]
    rerun: Process
    rerun_stages: dict[str, float]


def timed_build(args: list[str], timings: Path, pythonpath: str | None = None) -> tuple[Process, dict[str, float]]:
    """A build through `_DRIVER`: the process's numbers, and seconds per stage (`STAGE cpu`: CPU)."""
    timings.unlink(missing_ok=True)
    process = run_process([sys.executable, "-c", _DRIVER, str(timings), *args], pythonpath)
    stages: dict[str, float] = {}
    for line in timings.read_text().splitlines():
        entry = json.loads(line)
        # Resetting the peak for each stage resets the one rusage reports too: the driver kept the earlier peaks.
        process = process._replace(peak_mb=max(process.peak_mb, entry["process MB"]))
        stage = entry["stage"]
        parts = {stage: entry["seconds"], f"{stage} cpu": entry["cpu"]}
        parts |= {f"{stage} MB": entry["MB"], f"{stage} start MB": entry["start MB"]}
        parts.update({key: value for key, value in entry.items() if key.startswith(("dedup", "index", "ranks"))})
        for key, value in parts.items():
            # Times add up over the stage's runs; memory is the highest of them.
            combine = max if key.endswith("MB") else float.__add__
            stages[key] = combine(stages.get(key, 0.0), float(value))
    return process, stages


def measure_size(
    work: Path,
    base_url: str,
    drafts: int,
    concurrency: int,
    question_types: str | None,
    dedup_embeddings: str,
    pythonpath: str | None = None,
    name: str = "run",
) -> Measured:
    corpus = corpus_for(work, drafts)
    out = work / f"{name}-{drafts}"
    args = build_args(corpus, out, base_url, drafts, concurrency, question_types, dedup_embeddings)
    build, stages = timed_build(args, work / "timings.jsonl", pythonpath)
    rerun, rerun_stages = timed_build(args, work / "timings.jsonl", pythonpath)
    return Measured(drafts, calls_of(out), build, stages, rerun, rerun_stages)


def same_outputs(first: Path, second: Path) -> str:
    """Whether two runs wrote the same candidate rows and kept the same rows (their Arrow tables)."""
    import pyarrow as pa

    differing = []
    for folder in ("candidates", "dataset"):
        tables = []
        for run in (first, second):
            with pa.memory_map(str(run / folder / "data-00000-of-00001.arrow")) as source:
                tables.append(pa.ipc.open_stream(source).read_all())
        if not tables[0].equals(tables[1]):
            differing.append(folder)
    return "identical candidates and kept rows" if not differing else f"DIFFERENT: {', '.join(differing)}"


def report_comparison(pairs: list[tuple[Measured, Measured, str]], other: str) -> None:
    """This checkout (A) against `other` (B), size by size, each pair built one after the other."""
    print(f"\nA/B: this checkout (A) against {other} (B), each size built by both, one after the other")
    header = ("drafts", "A CPU ms/call", "B CPU ms/call", "A/B CPU", "A peak MB", "B peak MB", "A no-op s", "B no-op s")
    print("  " + "  ".join(f"{h:>13}" for h in header) + "  outputs")
    for a, b, outputs in pairs:
        cpu_a, cpu_b = a.build.cpu * 1000 / a.calls, b.build.cpu * 1000 / b.calls
        row = [f"{a.drafts:,}", f"{cpu_a:.3f}", f"{cpu_b:.3f}", f"{cpu_a / cpu_b:.3f}", f"{a.build.peak_mb:.0f}",
               f"{b.build.peak_mb:.0f}", f"{a.rerun.wall:.2f}", f"{b.rerun.wall:.2f}"]  # fmt: skip
        print("  " + "  ".join(f"{cell:>13}" for cell in row) + f"  {outputs}")


def slope(points: list[tuple[float, float]]) -> float:
    """The log-log slope from the first point to the last (1.0: linear)."""
    (x0, y0), (x1, y1) = points[0], points[-1]
    if min(x0, y0, x1, y1) <= 0 or x0 == x1:
        return math.nan
    return math.log(y1 / y0) / math.log(x1 / x0)


def report_scale(results: list[Measured], concurrency: int) -> None:
    print(f"\nscale: 0 ms stand-in, {concurrency} in flight (whole CLI process; stage times inside it)")
    header = ("drafts", "calls", "CPU ms/call", "w/o dedup", "LLM ms/call", "peak MB", "wall s", "chunk s",
              "LLM s", "finalize s", "dedup s", "ranks s", "bm25s index s", "indexed", "no-op s", "no-op MB")  # fmt: skip
    print("  " + "  ".join(f"{h:>11}" for h in header))
    for m in results:
        cpu = m.build.cpu * 1000 / m.calls
        row = [m.drafts, m.calls, cpu, cpu - m.stages.get("dedup cpu", 0.0) * 1000 / m.calls,
               m.stages.get("llm cpu", 0.0) * 1000 / m.calls, m.build.peak_mb, m.build.wall,
               m.stages.get("chunk", 0.0), m.stages.get("llm", 0.0), m.stages.get("finalize", 0.0),
               m.stages.get("dedup", 0.0), m.stages.get("ranks", 0.0), m.stages.get("index", 0.0),
               int(m.stages.get("index calls", 0)),
               m.rerun.wall, m.rerun.peak_mb]  # fmt: skip
        print("  " + "  ".join(f"{v:>11,}" if isinstance(v, int) else f"{v:>11.2f}" for v in row))
    memory = ("chunk", "sample", "llm", "finalize")
    print("  peak RSS by stage, MB (RSS as the stage began -> its peak; ranks, bm25s index: peak, and rise):")
    print("  " + "  ".join(f"{h:>15}" for h in ("drafts", *memory, "ranks", "bm25s index")))
    for m in results:
        cells = [f"{m.stages.get(f'{s} start MB', 0.0):.0f} -> {m.stages.get(f'{s} MB', 0.0):.0f}" for s in memory]
        inner = [
            f"{m.stages.get(f'{s} MB', 0.0):.0f} (+{m.stages.get(f'{s} rise MB', 0.0):.0f})" for s in ("ranks", "index")
        ]
        print("  " + "  ".join(f"{c:>15}" for c in (f"{m.drafts:,}", *cells, *inner)))
    print(
        "  (CPU ms/call: the whole CLI process, and without near-duplicate removal; LLM ms/call: the LLM"
        " stage's own CPU per call; dedup s: near-duplicate removal, inside finalize; ranks s: the drafts' BM25 ranks,"
        " inside finalize; bm25s index s: bm25s indexing the"
        " chunks, wherever it happens, and indexed: how many times)"
    )
    report_shares(results)
    if len(results) < 2:
        return
    series = {
        "chunk": [(m.drafts, m.stages.get("chunk", 0.0)) for m in results],
        "LLM stage": [(m.drafts, m.stages.get("llm", 0.0)) for m in results],
        "finalize": [(m.drafts, m.stages.get("finalize", 0.0)) for m in results],
        "finalize without dedup": [(m.drafts, m.stages["finalize"] - m.stages["dedup"]) for m in results],
        "dedup": [(m.drafts, m.stages.get("dedup", 0.0)) for m in results],
        "whole build (wall)": [(m.drafts, m.build.wall) for m in results],
        "whole build (CPU)": [(m.drafts, m.build.cpu) for m in results],
        "no-op re-run (wall)": [(m.drafts, m.rerun.wall) for m in results],
    }
    print(f"  log-log slope, {results[0].drafts:,} -> {results[-1].drafts:,} drafts (1.0 = linear):")
    for name, points in series.items():
        print(f"    {name:<24} {slope(points):5.2f}")


def report_shares(results: list[Measured]) -> None:
    """CPU ms per LLM call of each stage, the sizes side by side, with each stage's share of the
    process' CPU: a stage whose cost per call grows with the sample shows at a glance."""
    stages = [
        ("chunk", "chunk cpu"), ("sample", "sample cpu"), ("LLM stage", "llm cpu"), ("finalize", "finalize cpu"),
        ("  of which ranks", "ranks cpu"), ("  of which dedup", "dedup cpu"),
    ]  # fmt: skip
    print("  CPU ms per call by stage (share of the whole process' CPU):")
    print("  " + f"{'drafts':<20}" + "".join(f"{m.drafts:>20,}" for m in results))
    for name, key in stages:
        cells = [_share_cell(m.stages.get(key, 0.0), m) for m in results]
        print("  " + f"{name:<20}" + "".join(f"{cell:>20}" for cell in cells))
    outer = ("chunk", "sample", "llm", "finalize")
    rest = [_share_cell(m.build.cpu - sum(m.stages.get(f"{s} cpu", 0.0) for s in outer), m) for m in results]
    print("  " + f"{'start-up, the rest':<20}" + "".join(f"{cell:>20}" for cell in rest))
    print("  " + f"{'whole process':<20}" + "".join(f"{_share_cell(m.build.cpu, m):>20}" for m in results))


def _share_cell(cpu: float, m: Measured) -> str:
    return f"{cpu * 1000 / m.calls:.3f} ({100 * cpu / m.build.cpu:.0f}%)"


def measure_efficiency(work: Path, latency: float, concurrency: int, target_calls: int, *, trace: bool) -> None:
    drafts = math.ceil(target_calls / CALLS_PER_DRAFT)
    corpus = corpus_for(work, drafts)
    out = work / f"efficiency-{latency}x{concurrency}"
    log = work / f"requests-{latency}x{concurrency}.jsonl" if trace else None
    with stand_in(latency, work, log) as base_url:
        started = time.time()
        process, stages = timed_build(build_args(corpus, out, base_url, drafts, concurrency), work / "timings.jsonl")
        ended = time.time()
    calls = calls_of(out)
    bound = calls * latency / concurrency
    print(
        f"\nefficiency at {latency * 1000:.0f} ms x {concurrency} in flight: {calls:,} calls ({drafts:,} drafts), "
        f"wall {process.wall:.1f} s (whole CLI process) vs bound {bound:.1f} s: {bound / process.wall:.3f}"
    )
    inside = sum(stages.get(stage, 0.0) for stage in ("chunk", "sample", "llm", "finalize"))
    print(
        f"  of which: LLM stage {stages.get('llm', 0.0):.1f} s (bound / LLM stage {bound / stages['llm']:.3f}), "
        f"chunk + sample {stages.get('chunk', 0.0) + stages.get('sample', 0.0):.2f} s, "
        f"finalize {stages.get('finalize', 0.0):.2f} s (near-duplicate removal {stages.get('dedup', 0.0):.2f} s), "
        f"start-up and exit {process.wall - inside:.2f} s"
    )
    if log is not None:
        arrivals = sorted(json.loads(line)["time"] for line in log.read_text().splitlines())
        first, last = arrivals[0], arrivals[-1] + latency
        print(
            f"  requests: the first {first - started:.2f} s after the process started, the last reply "
            f"{ended - last:.2f} s before it ended; from first to last {last - first:.1f} s "
            f"(bound / that {bound / (last - first):.3f}); in the last {3 * latency:.0f} s, "
            f"{sum(t > last - 4 * latency for t in arrivals)} calls started"
        )
    if calls < target_calls:
        print(f"  (fewer calls than the {target_calls:,} asked: the critics rejected more than usual)")


def dry_run(work: Path, megabytes: int, files: int, drafts: int) -> None:
    """Chunking and sampling alone (`--dry-run`): throughput and peak memory over a large corpus."""
    started = time.perf_counter()
    size = write_corpus(work / "corpus", megabytes, files)
    print(f"wrote {size / 1e6:,.0f} MB in {files} files in {time.perf_counter() - started:.0f} s")
    out = work / "dry-run"
    command = [sys.executable, "-m", "qagen", "build", str(work / "corpus"), "--out", str(out),
               "--n-generations", str(drafts), "--dry-run", "-q"]  # fmt: skip
    process = run_process(command)
    chunks = sum(1 for _ in (out / "chunks.jsonl").open(encoding="utf-8"))
    print(
        f"qagen build --dry-run over {size / 1e6:,.0f} MB: {chunks:,} chunks in {process.wall:.0f} s "
        f"({size / 1e6 / process.wall:.1f} MB/s), peak memory {process.peak_mb:,.0f} MB "
        f"({process.peak_mb / (size / 1e6):.2f} x the corpus)"
    )


def parse_setting(text: str) -> tuple[float, int, int]:
    """`0.2x32` or `1x256:9100` -> (latency s, concurrency, calls)."""
    setting, _, calls = text.partition(":")
    latency, _, concurrency = setting.partition("x")
    default_calls = 3300 if float(latency) < 0.5 else 9100
    return float(latency), int(concurrency), int(calls) if calls else default_calls


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--sizes", default="3000,30000,100000", help="drafts per scale run, comma-separated")
    parser.add_argument("--scale-concurrency", type=int, default=64)
    parser.add_argument("--no-scale", action="store_true", help="skip the scale runs")
    parser.add_argument(
        "--compare",
        metavar="PYTHONPATH",
        help="scale runs: build each size again importing qagen from this path (another checkout), and print "
        "CPU per call side by side, with whether both wrote the same candidate and kept rows",
    )
    parser.add_argument("--question-types", help="scale runs: the builds' --question-types (default: factoids alone)")
    parser.add_argument(
        "--dedup-embeddings", default="none", help="scale runs: the builds' --dedup-embeddings (default: none)"
    )
    parser.add_argument("--efficiency", default="0.2x32,1x256", help="LATENCYxCONCURRENCY[:CALLS], comma-separated")
    parser.add_argument("--no-efficiency", action="store_true", help="skip the efficiency runs")
    parser.add_argument("--trace", action="store_true", help="efficiency: log requests, split start-up/calls/end")
    parser.add_argument("--dry-run-mb", type=int, default=0, help="instead: chunk + sample this many MB, no LLM")
    parser.add_argument("--files", type=int, default=1000, help="with --dry-run-mb: files of the corpus")
    args = parser.parse_args()
    work = Path(tempfile.mkdtemp(prefix="qagen-scale-"))
    print(f"work directory: {work}; {calibration()}")
    if args.dry_run_mb:
        dry_run(work, args.dry_run_mb, args.files, 5000)
        return
    if not args.no_scale:
        sizes = sorted(int(size) for size in args.sizes.split(","))
        with stand_in(0.0, work) as base_url:
            results, pairs = [], []
            for drafts in sizes:
                settings = (args.scale_concurrency, args.question_types, args.dedup_embeddings)
                measured = measure_size(work, base_url, drafts, *settings)
                results.append(measured)
                if args.compare:
                    other = measure_size(work, base_url, drafts, *settings, pythonpath=args.compare, name="other")
                    outputs = same_outputs(work / f"run-{drafts}", work / f"other-{drafts}")
                    pairs.append((measured, other, outputs))
                print(f"  {drafts:,} drafts measured", file=sys.stderr)
        report_scale(results, args.scale_concurrency)
        if pairs:
            report_comparison(pairs, args.compare)
    if not args.no_efficiency:
        for setting in args.efficiency.split(","):
            measure_efficiency(work, *parse_setting(setting), trace=args.trace)
    print(f"\n{calibration()}; load average {os.getloadavg()[0]:.1f} on {os.cpu_count()} CPUs")


def calibration() -> str:
    """How fast this machine runs Python just now (CPU times on a shared machine vary with its load)."""
    started = time.process_time()
    total = 0
    for number in range(5_000_000):
        total += number
    return f"calibration: 5M additions in {time.process_time() - started:.2f} s CPU"


if __name__ == "__main__":
    main()
