"""What one prefix per draft saves on a real server (issue 29, must-show 4): prompt tokens the server
evaluated per kept question, read from its own timing log, and the share of kept questions a reviewer
keeps, for one version of qagen; two versions' results side by side.

    # llama-cpp-python's server prints, per call, `prompt eval time = ... ms / N tokens` (its
    # llama_perf_context_print, on by default: `--verbose true`) to its stderr, kept in LOG.
    # Run once as the build is by default and once with the shared prefix on (`build.shared_prefix`);
    # or each version with its own qagen (PYTHONPATH), this script from any checkout that has it:
    PYTHONPATH=$PWD python benchmarks/bench_prefix.py run --label before --out /tmp/prefix-before \\
        --base-url http://127.0.0.1:8766/v1 --model openai:qwen2.5-1.5b --server-log ~/.cache/qagen-real-model/server.log
    PYTHONPATH=$PWD python benchmarks/bench_prefix.py run --label after --out /tmp/prefix-after --shared-prefix \\
        --base-url http://127.0.0.1:8766/v1 --model openai:qwen2.5-1.5b --server-log ~/.cache/qagen-real-model/server.log
    python benchmarks/bench_prefix.py compare /tmp/prefix-before /tmp/prefix-after

`run` makes two measurements, each a default `qagen build` (checks vetting, factoids, the server's
one-request-at-a-time concurrency of 1) but the model, and the shared prefix with `--shared-prefix`:

1. Cost: a build of `--limit` drafts (30) from git's manual pages (Debian's git-doc, the 20 pages of
   benchmarks/reviewed/gitman_build_reviewed.jsonl, seed 21: the same sample for every version). The
   server log's lines written while it runs are read: every `prompt eval time = X ms / N tokens` line
   is one call's evaluated prompt tokens (after any prefix it reused). Printed: calls, kept, prompt
   tokens sent (the build's own count), evaluated by the server, and both per kept question.
2. Quality: the reviewed drafts of benchmarks/reviewed/gitman_build_reviewed.jsonl built again, their
   drafting replies replayed by the stand-in LLM (so every version judges the same drafts) and the
   real model as the critic, with each version's requests; the kept drafts' share the reviewer keeps,
   with its 95% Wilson interval.

Nothing else may use the server while it runs: the log's lines are counted by where they are written.
"""

from __future__ import annotations

import argparse
import json
import re
import shutil
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

# The stand-in servers sit at the repository's root (standins/), outside the installed package;
# appended, so qagen itself still comes from the install or PYTHONPATH (the version measured).
sys.path.append(str(Path(__file__).resolve().parents[1]))

REPOSITORY = Path(__file__).resolve().parents[1]
REVIEWED = REPOSITORY / "benchmarks" / "reviewed" / "gitman_build_reviewed.jsonl"
GIT_DOC = Path("/usr/share/doc/git-doc")
RESULT = "prefix_cost.json"

PROMPT_EVAL = re.compile(r"prompt eval time\s*=\s*(?P<ms>[\d.]+)\s*ms\s*/\s*(?P<tokens>\d+)\s*tokens")
"""llama.cpp's per-call timing line (`llama_perf_context_print: prompt eval time = 812.31 ms / 402 tokens
(...)`; `llama_print_timings:` in older builds): the prompt tokens the server evaluated for one call."""
PREFIX_HIT = re.compile(r"Llama\.generate: (?P<reused>\d+) prefix-match hit, remaining (?P<left>\d+) prompt tokens")
"""llama-cpp-python's line when a call reuses the previous prompt's longest common prefix."""


class ServerLog:
    """The lines a server writes to its log file from now on."""

    def __init__(self, path: Path) -> None:
        if not path.is_file():
            sys.exit(f"The server log {path} is not there: give the file the server's stderr goes to.")
        self.path = path
        self.start = path.stat().st_size

    def written(self) -> str:
        with self.path.open("rb") as log:
            log.seek(self.start)
            return log.read().decode("utf-8", errors="replace")


def evaluated(text: str) -> dict[str, Any]:
    """Per-call evaluated prompt tokens and milliseconds in a stretch of server log, and the prefix reuse."""
    calls = [(float(m["ms"]), int(m["tokens"])) for m in PROMPT_EVAL.finditer(text)]
    hits = [(int(m["reused"]), int(m["left"])) for m in PREFIX_HIT.finditer(text)]
    return {
        "calls": len(calls),
        "evaluated_tokens": sum(tokens for _, tokens in calls),
        "prompt_eval_seconds": round(sum(ms for ms, _ in calls) / 1000, 1),
        "prefix_hits": len(hits),
        "reused_tokens": sum(reused for reused, _ in hits),
    }


def _gitman_corpus(work: Path) -> Path:
    pages = sorted({passage["document"] for line in _reviewed() for passage in line["passages"]})
    corpus = work / "gitman"
    corpus.mkdir(parents=True, exist_ok=True)
    for page in pages:
        source = GIT_DOC / page
        if not source.is_file():
            sys.exit(f"{source} is not there: apt-get install git-doc.")
        shutil.copy(source, corpus / page)
    return corpus


def _reviewed() -> list[dict[str, Any]]:
    return [json.loads(line) for line in REVIEWED.read_text(encoding="utf-8").splitlines() if line.strip()]


def _shared(args: argparse.Namespace) -> dict[str, Any]:
    """The build setting `--shared-prefix` asks for; nothing without it (a version that predates the
    setting refuses a field it does not know)."""
    return {"shared_prefix": True} if args.shared_prefix else {}


def cost(args: argparse.Namespace, work: Path) -> dict[str, Any]:
    from qagen.config import BuildConfig
    from qagen.corpus.settings import CorpusSettings
    from qagen.generation.pipeline import build
    from qagen.llm.backends import ModelSettings

    model = ModelSettings(spec=args.model, base_url=args.base_url, timeout=args.timeout)
    config = BuildConfig(
        corpus=CorpusSettings(path=str(_gitman_corpus(work))), n_generations=args.limit, seed=args.seed,
        generator=model, critic=model, concurrency=1, **_shared(args),
    )  # fmt: skip
    log = ServerLog(args.server_log)
    started = time.perf_counter()
    summary = build(config, work / "build", progress=not args.quiet).summary.model_dump(mode="json")
    seconds = time.perf_counter() - started
    server = evaluated(log.written())
    if not server["calls"]:
        print(
            f"warning: {args.server_log} got no `prompt eval time` line during the build: start the server with its "
            "timings printed (llama-cpp-python: `--verbose true`, its default; llama.cpp's llama-server prints them "
            "by default) and its stderr going to that file.",
            file=sys.stderr,
        )
    usage = summary["usage"]
    return {
        "kept": summary["funnel"]["kept"],
        "drafts": summary["funnel"]["sampled"],
        "calls": sum(stage["calls"] for stage in usage.values()),
        "sent_tokens": sum(stage["input_tokens"] for stage in usage.values()),
        "reported_cached_tokens": sum(stage.get("cached_input_tokens", 0) for stage in usage.values()),
        "seconds": round(seconds, 1),
        "server": server,
    }


def quality(args: argparse.Namespace, work: Path) -> dict[str, Any]:
    from datasets import Dataset, load_from_disk

    from qagen.config import BuildConfig
    from qagen.corpus.settings import ChunkSettings, CorpusSettings
    from qagen.generation.pipeline import build
    from qagen.llm.backends import ModelSettings
    from qagen.llm.untrusted import neutralize
    from qagen.review.estimate import wilson_interval
    from standins.llm.replies import recorded_key
    from standins.llm.server import StandInLLM

    lines = _reviewed()
    texts = [line["passages"][0]["text"] for line in lines]
    corpus = work / "reviewed-chunks"
    Dataset.from_dict({"text": texts, "source": [line["id"] for line in lines]}).save_to_disk(str(corpus))
    replies = {
        recorded_key(neutralize(text)): f"Factoid question: {line['question']}\nAnswer: {line['answer']}\n"
        f"Evidence: {line['evidence']}"
        for text, line in zip(texts, lines, strict=True)
    }
    with StandInLLM() as replayer:
        replayer.configure(recorded_drafts=replies)
        config = BuildConfig(
            corpus=CorpusSettings(hf_dataset=str(corpus), source_column="source"),
            chunking=ChunkSettings(chunk_size=max(map(len, texts)) + 1, chunk_overlap=0),
            n_generations=len(lines), seed=args.seed,
            generator=ModelSettings(spec="openai:recorded", base_url=replayer.base_url),
            critic=ModelSettings(spec=args.model, base_url=args.base_url, timeout=args.timeout), concurrency=1,
            **_shared(args),
        )  # fmt: skip
        build(config, work / "reviewed", progress=not args.quiet)
    keep = {line["id"]: bool(line["review"]["keep"]) for line in lines}
    kept = [row["source_doc"] for row in load_from_disk(str(work / "reviewed" / "dataset"))]
    good = sum(keep[source] for source in kept)
    low, high = wilson_interval(good, len(kept)) if kept else (0.0, 1.0)
    return {"reviewed": len(lines), "kept": len(kept), "kept_good": good, "share_good": [low, high]}


def run(args: argparse.Namespace) -> None:
    import qagen

    work = args.out
    work.mkdir(parents=True, exist_ok=True)
    result = {
        "label": args.label,
        "qagen": str(Path(qagen.__file__).resolve().parent),
        "model": args.model,
        "cost": cost(args, work),
    }
    if not args.no_quality:
        result["quality"] = quality(args, work)
    (work / RESULT).write_text(json.dumps(result, indent=1) + "\n", encoding="utf-8")
    print(table([result]))


def _per(part: float, whole: int) -> str:
    return f"{part / whole:,.0f}" if whole else "-"


def table(results: list[dict[str, Any]]) -> str:
    """Each version's figures in a column, and the change from the first to the last."""
    rows: list[tuple[str, list[str]]] = []

    def row(name: str, values: list[str]) -> None:
        rows.append((name, values))

    costs = [result["cost"] for result in results]
    row("qagen", [result["label"] for result in results])
    row("drafts / kept", [f"{c['drafts']} / {c['kept']}" for c in costs])
    row("calls (build) / timed by server", [f"{c['calls']} / {c['server']['calls']}" for c in costs])
    row("prompt tokens sent", [f"{c['sent_tokens']:,}" for c in costs])
    row("prompt tokens evaluated by the server", [f"{c['server']['evaluated_tokens']:,}" for c in costs])
    row("  reused from its cache (prefix hits)", [f"{c['server']['reused_tokens']:,}" for c in costs])
    row("evaluated tokens per kept question", [_per(c["server"]["evaluated_tokens"], c["kept"]) for c in costs])
    row("prompt eval seconds per kept question", [_per(c["server"]["prompt_eval_seconds"], c["kept"]) for c in costs])
    row("wall seconds per kept question", [_per(c["seconds"], c["kept"]) for c in costs])
    qualities = [result.get("quality") for result in results]
    row(
        "reviewed drafts kept, reviewer keeps",
        [f"{q['kept_good']} of {q['kept']}" if q else "-" for q in qualities],
    )
    row(
        "kept share good [95% Wilson]",
        [
            f"{q['kept_good'] / q['kept']:.2f} [{q['share_good'][0]:.2f}, {q['share_good'][1]:.2f}]"
            if q and q["kept"]
            else "-"
            for q in qualities
        ],
    )
    width = max(len(name) for name, _ in rows)
    lines = [f"{name:<{width}}  " + "  ".join(f"{value:>22}" for value in values) for name, values in rows]
    if len(costs) > 1 and costs[0]["kept"] and costs[-1]["kept"]:
        before = costs[0]["server"]["evaluated_tokens"] / costs[0]["kept"]
        after = costs[-1]["server"]["evaluated_tokens"] / costs[-1]["kept"]
        if before:
            lines.append(f"\nevaluated prompt tokens per kept question: {after / before - 1:+.0%} from the first")
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    commands = parser.add_subparsers(dest="command", required=True)
    measure = commands.add_parser("run", help="measure the qagen on PYTHONPATH against a llama.cpp server")
    measure.add_argument("--base-url", required=True, help="the server's OpenAI-compatible URL on 127.0.0.1")
    measure.add_argument("--model", required=True, help="the model's spec as qagen names it (openai:ALIAS)")
    measure.add_argument("--server-log", required=True, type=Path, help="the file the server's stderr goes to")
    measure.add_argument("--out", type=Path, help="keep the runs and the result here (default: a temporary folder)")
    measure.add_argument("--label", default="this version", help="the column's name in the comparison")
    measure.add_argument("--limit", type=int, default=30, help="drafts of the cost build")
    measure.add_argument("--seed", type=int, default=21)
    measure.add_argument("--timeout", type=float, default=600.0, help="seconds to wait for one reply")
    measure.add_argument("--no-quality", action="store_true", help="skip the reviewed drafts' measurement")
    measure.add_argument("--shared-prefix", action="store_true", help="build with build.shared_prefix on")
    measure.add_argument("--quiet", action="store_true", help="no progress bars")
    compare = commands.add_parser("compare", help="the results of earlier runs side by side")
    compare.add_argument("outs", type=Path, nargs="+", help="the --out folders of `run`, first the one to compare with")
    args = parser.parse_args()
    if args.command == "run":
        args.out = args.out or Path(tempfile.mkdtemp(prefix="bench-prefix-"))
        run(args)
    else:
        print(table([json.loads((out / RESULT).read_text(encoding="utf-8")) for out in args.outs]))


if __name__ == "__main__":
    main()
