"""Build throughput against a stand-in LLM with a set latency, side by side with the notebook's loop.

    python benchmarks/bench_build.py                 # 200 ms per call, 32 in flight, >= 3,200 calls
    python benchmarks/bench_build.py --calls 800     # quicker

Prints, from one run on one machine (ratios are measured side by side, since machines are noisy):
- the whole `qagen build` CLI process (start-up included) against the bound calls x latency /
  concurrency, as an efficiency ratio;
- the same work through a faithful re-implementation of the notebook's sequential loop (one call
  at a time, four calls per draft), and the speed-up per draft;
- LLM calls and tokens per draft and per kept question, and each critic's calls per draft (a critic
  is asked only of the drafts every earlier one passed);
- chunking throughput (MB/s) and peak memory of `qagen stage chunk` over the whole corpus.

It measures the checkout in the working directory (`python -m qagen` imports it before any on
PYTHONPATH): run it from another checkout's root to measure that one. The builds run with Python's
bytecode cache on, filled before the first measured run (`cli_environment`; `--no-bytecode-cache`).
"""

from __future__ import annotations

import argparse
import json
import math
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

# The stand-in servers sit at the repository's root (standins/), outside the installed package;
# appended, so qagen itself still comes from the install or PYTHONPATH.
sys.path.append(str(Path(__file__).resolve().parents[1]))

from standins.corpus import write_corpus
from standins.llm.server import StandInLLM

PYTHON_DOCS = Path("/usr/share/doc/python3.11/html/_sources")


def corpus_path(work: Path) -> Path:
    """The Python docs (Debian's python3.11-doc: 497 reST files, 12 MB) when installed, else a generated corpus."""
    if PYTHON_DOCS.is_dir():
        return PYTHON_DOCS
    return write_corpus(work / "corpus", documents=400, paragraphs=12)


def cli_environment(work: Path, tree: Path | None = None, *, bytecode: bool = True) -> dict[str, str]:
    """The environment of a measured `qagen` process (`tree`: the checkout put on PYTHONPATH; None: the
    environment's). With `bytecode`, Python's bytecode cache is on, as where users run qagen (pip
    compiles an install, an editable one writes `__pycache__` on first use), even where
    PYTHONDONTWRITEBYTECODE turns it off (then every process compiles qagen's modules from source,
    0.1-0.15 s of CPU of a build's start-up on these machines); kept under `work`, so no checkout is written
    to, and filled for the whole package before any measured run (`warm_bytecode`)."""
    env = {**os.environ, "OPENAI_API_KEY": "bench-key"}
    if tree is not None:
        env["PYTHONPATH"] = str(tree)
    if bytecode:
        env.pop("PYTHONDONTWRITEBYTECODE", None)
        env["PYTHONPYCACHEPREFIX"] = str(work / "pycache")
    return env


def duplicates_by_meaning() -> str:
    """How the measured builds find duplicates by meaning: their default, `--dedup-embeddings local`, embeds
    every question with the dense extra's model when it is installed, and uses the word rule alone without;
    QAGEN_DEDUP_EMBEDDINGS=none in the environment turns it off."""
    from qagen.generation.embedders import missing_dense_modules

    if os.environ.get("QAGEN_DEDUP_EMBEDDINGS", "local").strip().lower() in {"", "none", "off"}:
        return "the word rule alone (QAGEN_DEDUP_EMBEDDINGS is off)"
    missing = missing_dense_modules("local")
    return "the word rule alone (no dense extra)" if missing else "all-MiniLM-L6-v2 (the dense extra is installed)"


def warm_bytecode(env: dict[str, str], corpus: Path, work: Path, cwd: Path | None = None) -> None:
    """Fill the bytecode cache of `env` (nothing without one): the `qagen` package compiled, and one small
    build against a stand-in, for the other modules a build imports (the cache holds every module's
    bytecode, the standard library's and the installed packages' too) and the corpus read once. `cwd`:
    where the measured builds run (`python -m qagen` imports the checkout there first)."""
    if "PYTHONPYCACHEPREFIX" not in env:
        return
    code = "import compileall, os, qagen; compileall.compile_dir(os.path.dirname(qagen.__file__), quiet=1)"
    subprocess.run([sys.executable, "-c", code], check=True, env=env, cwd=cwd)
    with StandInLLM() as server:
        run_build(corpus, work / "warm-up", server.base_url, 20, 8, env=env, cwd=cwd)


def run_build(
    corpus: Path,
    out: Path,
    base_url: str,
    drafts: int,
    concurrency: int,
    *extra: str,
    env: dict[str, str],
    cwd: Path | None = None,
) -> tuple[float, dict]:
    """One `qagen build` process: its wall time and summary. It runs in `cwd` (None: this process'
    directory), whose checkout `python -m qagen` imports before any on PYTHONPATH."""
    command = [
        sys.executable, "-m", "qagen", "build", str(corpus), "--out", str(out), "--generator-model", "openai:stand-in",
        "--base-url", base_url, "--n-generations", str(drafts), "--concurrency", str(concurrency), "--seed", "1", "-q",
        *extra,
    ]  # fmt: skip
    started = time.perf_counter()
    subprocess.run(command, check=True, env=env, stdout=subprocess.DEVNULL, cwd=cwd)
    wall = time.perf_counter() - started
    return wall, json.loads((out / "summary.json").read_text())


def notebook_loop(corpus_run: Path, base_url: str, drafts: int) -> tuple[float, int]:
    """The cookbook's generation loop: for each sampled chunk, invoke the QA agent, then the three
    critique agents one after the other, each call waiting for the previous one."""
    from langchain_core.messages import HumanMessage
    from langchain_openai import ChatOpenAI

    from qagen.generation.draft import document_name
    from qagen.llm.prompts import load_prompt
    from qagen.runs.rundir import RunDir

    chat_model = ChatOpenAI(model="stand-in", base_url=base_url, api_key="bench-key", max_retries=2)
    qa, grounded = load_prompt("qa_generation"), load_prompt("critique_groundedness")
    relevance, standalone = load_prompt("critique_relevance"), load_prompt("critique_standalone")
    chunks = [chunk for _, chunk in zip(range(drafts), RunDir(corpus_run).iter_chunks(), strict=False)]
    calls = 0
    started = time.perf_counter()
    for chunk in chunks:
        prompt = qa.render(context=chunk.text, document=document_name(chunk.source))
        output = chat_model.invoke([HumanMessage(prompt)]).content
        calls += 1
        try:
            question = str(output).split("Factoid question: ")[1].split("Answer: ")[0]
        except IndexError:
            continue
        chat_model.invoke([HumanMessage(grounded.render(question=question, context=chunk.text))])
        chat_model.invoke([HumanMessage(relevance.render(question=question, audience="users"))])
        chat_model.invoke([HumanMessage(standalone.render(question=question))])
        calls += 3
    return time.perf_counter() - started, calls


def critic_calls(run: Path) -> dict[str, int]:
    """Critic calls by criterion, in the order first asked (the critics of the build's own question types)."""
    asked: dict[str, int] = {}
    for line in (run / "critiques.jsonl").read_text().splitlines():
        criterion = json.loads(line)["criterion"]
        asked[criterion] = asked.get(criterion, 0) + 1
    return asked


def chunking(corpus: Path, work: Path, env: dict[str, str]) -> tuple[float, float, int]:
    """MB/s and the peak memory (MB) of one `qagen stage chunk` process over the whole corpus."""
    size = sum(p.stat().st_size for p in corpus.rglob("*") if p.is_file())
    out = work / "chunk-only"
    started = time.perf_counter()
    command = [sys.executable, "-m", "qagen", "stage", "chunk", str(corpus), "--out", str(out), "-q"]
    process = subprocess.Popen(command, stdout=subprocess.DEVNULL, env=env)
    _, status, usage = os.wait4(process.pid, 0)  # this process' own peak, not the earlier ones'
    wall = time.perf_counter() - started
    process.returncode = os.waitstatus_to_exitcode(status)
    if process.returncode:
        raise subprocess.CalledProcessError(process.returncode, command)
    return size / 1e6 / wall, usage.ru_maxrss / 1024, size


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--latency", type=float, default=0.2)
    parser.add_argument("--concurrency", type=int, default=32)
    parser.add_argument("--calls", type=int, default=3200, help="at least this many LLM calls in the build")
    parser.add_argument("--notebook-drafts", type=int, default=40, help="drafts for the sequential notebook loop")
    parser.add_argument(
        "--no-bytecode-cache", action="store_true", help="as PYTHONDONTWRITEBYTECODE: qagen compiled in every process"
    )
    args = parser.parse_args()
    work = Path(tempfile.mkdtemp(prefix="qagen-bench-"))
    corpus = corpus_path(work)
    env = cli_environment(work, bytecode=not args.no_bytecode_cache)
    warm_bytecode(env, corpus, work)
    cache = "off: compiled in every process" if args.no_bytecode_cache else "on"
    print(
        f"corpus: {corpus}; bytecode cache {cache}; duplicates by meaning: {duplicates_by_meaning()}; "
        f"load average {os.getloadavg()[0]:.2f}"
    )
    mb_per_s, peak_mb, size = chunking(corpus, work, env)
    print(f"chunking: {size / 1e6:.1f} MB at {mb_per_s:.1f} MB/s (whole CLI process), peak memory {peak_mb:.0f} MB")

    with StandInLLM(latency=args.latency) as server:
        # Calls per draft are about 3.4 at the stand-in's pass rates; ask for enough drafts, then top up.
        drafts = int(args.calls / 3.2)
        out = work / "run"
        wall, summary = run_build(corpus, out, server.base_url, drafts, args.concurrency, env=env)
        calls = summary["usage"]["generation"]["calls"] + summary["usage"]["critique"]["calls"]
        while calls < args.calls:
            # Enough drafts at the calls per draft just seen, each build a fresh run (chunking included).
            drafts = math.ceil(drafts * args.calls / max(calls, 1)) + 10
            wall, summary = run_build(corpus, work / f"run{drafts}", server.base_url, drafts, args.concurrency, env=env)
            out = work / f"run{drafts}"
            calls = summary["usage"]["generation"]["calls"] + summary["usage"]["critique"]["calls"]
        bound = calls * args.latency / args.concurrency
        funnel = summary["funnel"]
        tokens = sum(
            summary["usage"][s]["input_tokens"] + summary["usage"][s]["output_tokens"]
            for s in ("generation", "critique")
        )
        print(f"\nqagen build: {calls} calls, {args.latency * 1000:.0f} ms each, {args.concurrency} in flight")
        print(f"  wall {wall:.1f} s (CLI start-up included) vs bound {bound:.1f} s: efficiency {bound / wall:.3f}")
        print(f"  (load average {os.getloadavg()[0]:.2f}: the machine is shared)")
        drafted = funnel["drafted"]
        by_critic = ", ".join(f"{name} {count / drafted:.3f}" for name, count in critic_calls(out).items())
        print(f"  calls per draft {calls / drafted:.3f} (1 draft + critics: {by_critic}; notebook: 4)")
        print(
            f"  calls per kept question {calls / funnel['kept']:.2f}, tokens per draft {tokens / drafted:.0f}, per kept {tokens / funnel['kept']:.0f}"
        )

        _, full = run_build(
            corpus, work / "all-critics", server.base_url, 200, args.concurrency, "--all-critics", env=env
        )
        full_calls = full["usage"]["generation"]["calls"] + full["usage"]["critique"]["calls"]
        print(f"  with --all-critics: calls per draft {full_calls / full['funnel']['drafted']:.3f} (200 drafts)")

        nb_wall, nb_calls = notebook_loop(out, server.base_url, args.notebook_drafts)
        per_draft_qagen = wall / drafted
        per_draft_notebook = nb_wall / args.notebook_drafts
        print(
            f"\nnotebook loop: {args.notebook_drafts} drafts, {nb_calls} calls in {nb_wall:.1f} s ({nb_wall / nb_calls * 1000:.0f} ms per call)"
        )
        print(
            f"  time per draft: qagen {per_draft_qagen * 1000:.1f} ms vs notebook {per_draft_notebook * 1000:.0f} ms: {per_draft_notebook / per_draft_qagen:.1f}x faster"
        )


if __name__ == "__main__":
    main()
