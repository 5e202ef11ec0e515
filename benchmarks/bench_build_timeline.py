"""Where the wall time of a `qagen build` CLI process goes against the latency bound, read from the
stand-in's log of when each call arrived (a reply leaves `latency` after its call arrived).

    python benchmarks/bench_build_timeline.py                         # this checkout, 1,220 drafts
    python benchmarks/bench_build_timeline.py /work/main --repeat 2   # this checkout and another, alternately

The bound is calls x latency / concurrency (`benchmarks/bench_build.py`'s); the wall time is split into
- start-up: the process started to its first call (imports, settings, chunking the corpus, sampling);
- calls: the first call to the last reply, itself split where the calls in flight first reach the
  concurrency (ramp), last fall below it (tail), and the steady part between, with the slot-seconds
  left idle in each (concurrency x time - calls' own latency: what the endpoint could have done);
- finalize: the last reply to the process's exit (filter, write the dataset, candidates and summary).
The build's CPU is split too: before its first call (start-up) and after its last reply (final), read
from /proc every 5 ms: figures the load of a shared machine stretches less than the wall time's.
Each run prints the load average it ran under: the machine is shared, so A/B runs alternate. The
builds run with Python's bytecode cache on, as users run qagen, even where PYTHONDONTWRITEBYTECODE is
set (`bench_build.cli_environment`; `--no-bytecode-cache` measures without it).
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import NamedTuple

sys.path.append(str(Path(__file__).resolve().parents[1]))

from bench_build import cli_environment, duplicates_by_meaning, warm_bytecode

from standins.corpus import write_corpus
from standins.llm.server import StandInLLM

REPOSITORY = Path(__file__).resolve().parents[1]
PYTHON_DOCS = Path("/usr/share/doc/python3.11/html/_sources")


class Timeline(NamedTuple):
    calls: int
    bound: float
    wall: float
    start_up: float
    ramp: float
    steady: float
    tail: float
    finalize: float
    idle_ramp: float
    idle_steady: float
    idle_tail: float
    load: float
    cpu: float = 0.0
    """The build process' CPU (user + system)."""
    server_cpu: float = 0.0
    """The stand-in's CPU (this process' while the build ran): it shares the machine's cores."""
    start_up_cpu: float = 0.0
    """The build process' CPU before its first call: what start-up costs, whatever the load."""
    finalize_cpu: float = 0.0
    """The build process' CPU after its last reply (the final write and the exit)."""

    @property
    def ratio(self) -> float:
        return self.bound / self.wall


def timeline(arrivals: list[float], started: float, ended: float, latency: float, concurrency: int) -> Timeline:
    """The split of one run's wall time from its calls' arrival times (seconds since the epoch)."""
    events = sorted([(t, 1) for t in arrivals] + [(t + latency, -1) for t in arrivals], key=lambda e: (e[0], e[1]))
    first, last = events[0][0], events[-1][0]
    in_flight, full_from, full_until = 0, None, first
    for moment, change in events:
        in_flight += change
        if in_flight >= concurrency:
            full_from = moment if full_from is None else full_from
            full_until = moment
        elif full_from is not None and change < 0 and in_flight == concurrency - 1:
            full_until = moment
    full_from = full_from if full_from is not None else first

    def busy(since: float, until: float) -> float:
        """Slot-seconds of calls in flight between two moments."""
        return sum(max(0.0, min(t + latency, until) - max(t, since)) for t in arrivals)

    def idle(since: float, until: float) -> float:
        return concurrency * (until - since) - busy(since, until)

    return Timeline(
        calls=len(arrivals),
        bound=len(arrivals) * latency / concurrency,
        wall=ended - started,
        start_up=first - started,
        ramp=full_from - first,
        steady=full_until - full_from,
        tail=last - full_until,
        finalize=ended - last,
        idle_ramp=idle(first, full_from),
        idle_steady=idle(full_from, full_until),
        idle_tail=idle(full_until, last),
        load=os.getloadavg()[0],
    )


def run_once(
    env: dict[str, str], tree: Path, corpus: Path, out: Path, drafts: int, latency: float, concurrency: int
) -> Timeline:
    """One build of the checkout `tree` (on PYTHONPATH in `env`, `bench_build.cli_environment`)."""
    log = out.with_suffix(".log.jsonl")
    with StandInLLM(latency=latency, log_path=log) as llm:
        command = [
            sys.executable, "-m", "qagen", "build", str(corpus), "--out", str(out), "--generator-model",
            "openai:stand-in", "--base-url", llm.base_url, "--n-generations", str(drafts), "--concurrency",
            str(concurrency), "--seed", "1", "-q",
        ]  # fmt: skip
        children, own = resource.getrusage(resource.RUSAGE_CHILDREN), resource.getrusage(resource.RUSAGE_SELF)
        started = time.time()
        process = subprocess.Popen(command, env=env, cwd=tree, stdout=subprocess.DEVNULL)
        readings = _cpu_readings(process)
        ended = time.time()
        if process.returncode:
            raise subprocess.CalledProcessError(process.returncode, command)
        children_after, own_after = (
            resource.getrusage(resource.RUSAGE_CHILDREN),
            resource.getrusage(resource.RUSAGE_SELF),
        )
    entries = [json.loads(line) for line in log.read_text().splitlines()]
    arrivals = [
        e["time"] for e in entries if e["method"] == "POST" and e["kind"] in ("generation", "critique", "check")
    ]
    cpu = children_after.ru_utime + children_after.ru_stime - children.ru_utime - children.ru_stime
    server_cpu = own_after.ru_utime + own_after.ru_stime - own.ru_utime - own.ru_stime
    last_reply = max(arrivals) + latency
    return timeline(arrivals, started, ended, latency, concurrency)._replace(
        cpu=cpu,
        server_cpu=server_cpu,
        start_up_cpu=_cpu_at(readings, min(arrivals)),
        finalize_cpu=cpu - _cpu_at(readings, last_reply),
    )


def _cpu_readings(process: subprocess.Popen[bytes]) -> list[tuple[float, float]]:
    """(when, CPU seconds so far) of `process` every 5 ms until it exits, from /proc (its threads included)."""
    ticks = os.sysconf("SC_CLK_TCK")
    readings: list[tuple[float, float]] = []
    while process.poll() is None:
        try:
            fields = Path(f"/proc/{process.pid}/stat").read_text().rsplit(")", 1)[1].split()
        except (OSError, IndexError):
            break  # exited between the poll and the read
        readings.append((time.time(), (int(fields[11]) + int(fields[12])) / ticks))  # utime, stime
        time.sleep(0.005)
    process.wait()
    return readings


def _cpu_at(readings: list[tuple[float, float]], moment: float) -> float:
    """The CPU seconds of the last reading at or before `moment` (to the kernel's clock tick, 10 ms)."""
    before = [cpu for when, cpu in readings if when <= moment]
    return before[-1] if before else 0.0


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("others", nargs="*", type=Path, help="other checkouts, run alternately with this one")
    parser.add_argument("--drafts", type=int, default=1220, help="drafts of each build (about 1.5 calls each)")
    parser.add_argument("--latency", type=float, default=0.2)
    parser.add_argument("--concurrency", type=int, default=32)
    parser.add_argument("--repeat", type=int, default=1)
    parser.add_argument(
        "--no-bytecode-cache", action="store_true", help="as PYTHONDONTWRITEBYTECODE: qagen compiled in every process"
    )
    args = parser.parse_args()
    work = Path(tempfile.mkdtemp(prefix="qagen-timeline-"))
    corpus = PYTHON_DOCS if PYTHON_DOCS.is_dir() else write_corpus(work / "corpus", documents=400, paragraphs=12)
    trees = [REPOSITORY, *(path.resolve() for path in args.others)]
    # A cache of each checkout's own (the bytecode of two versions of a module must not meet).
    envs = [
        cli_environment(work / f"tree-{n}", tree, bytecode=not args.no_bytecode_cache) for n, tree in enumerate(trees)
    ]
    for number, env in enumerate(envs):
        (work / f"tree-{number}").mkdir()
        warm_bytecode(env, corpus, work / f"tree-{number}", cwd=trees[number])
    cache = "off: compiled in every process" if args.no_bytecode_cache else "on"
    print(
        f"corpus {corpus}, {args.drafts} drafts, {args.latency * 1000:.0f} ms per call, {args.concurrency} in flight, "
        f"bytecode cache {cache}, duplicates by meaning: {duplicates_by_meaning()}"
    )
    print(
        f"{'checkout':<24} {'load':>5} {'calls':>5} {'bound':>6} {'wall':>6} {'ratio':>6} | {'start-up':>8} "
        f"{'ramp':>5} {'steady':>6} {'tail':>5} {'final':>5} | idle slot-s: {'ramp':>5} {'steady':>6} {'tail':>5} | "
        "CPU s: build stand-in start-up final"
    )
    for repeat in range(args.repeat):
        for number, tree in enumerate(trees):
            out = work / f"run-{repeat}-{number}"
            t = run_once(envs[number], tree, corpus, out, args.drafts, args.latency, args.concurrency)
            print(
                f"{str(tree)[-24:]:<24} {t.load:5.2f} {t.calls:5d} {t.bound:6.2f} {t.wall:6.2f} {t.ratio:6.3f} | "
                f"{t.start_up:8.2f} {t.ramp:5.2f} {t.steady:6.2f} {t.tail:5.2f} {t.finalize:5.2f} | "
                f"{'':12} {t.idle_ramp:5.1f} {t.idle_steady:6.1f} {t.idle_tail:5.1f} | {'':6} {t.cpu:5.2f} {t.server_cpu:8.2f} {t.start_up_cpu:8.2f} {t.finalize_cpu:5.2f}",
                flush=True,
            )


if __name__ == "__main__":
    main()
