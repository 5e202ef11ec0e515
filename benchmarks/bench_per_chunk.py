"""Several question/answer pairs per drafting call (`generation.per_chunk`, issue 40's must-show 4): two
builds of the same corpus and seed, at one pair a call and at N, side by side: the drafting calls, the prompt
tokens per draft and per kept question, and the kept share by the pair's place in its reply; the drafts of
both exported for a blind review; with the reviewer's labels, the share good by place and the prompt tokens
per kept good question.

    python benchmarks/bench_per_chunk.py CORPUS --out DIR --base-url http://127.0.0.1:8766/v1 \\
        --generator-model openai:qwen2.5-1.5b [-n 24] [--seed 11] [--per-chunk 3] [--concurrency 1] [-- BUILD FLAGS]
    # a reviewer labels DIR/drafts_to_review.jsonl blind (benchmarks/reviewed/README.md): one JSON line a draft,
    # `id` and `keep` (or merge_labels.py's lines, the label under `review`)
    python benchmarks/bench_per_chunk.py --report DIR --labels labels.jsonl
    python benchmarks/bench_per_chunk.py --standin --out DIR [-n 12]   # the stand-in LLM, labelled from its hidden truth

The builds are `qagen build` as a user runs it (`DIR/per_chunk_1`, `DIR/per_chunk_N`, the extra flags after
`--` passed to both), one after the other. `DIR/drafts_to_review.jsonl` holds every parsed draft of both in
`export_for_review.py`'s format, shuffled with the seed, naming neither the build nor the place of a pair.

Prompt tokens are the server's own counts (`summary.json`'s usage): drafting is the generator's calls; "all"
adds the checks' and critics' calls. A kept question is one in `dataset/`; a kept good one is kept and
labelled `keep`. With `--standin` the stand-in's hidden truth (`standins.llm.truth`, 40% good, the
`supported` P(yes) higher for good questions) labels every exported draft: the figures test the script, they
say nothing of a model.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import subprocess
import sys
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

sys.path.append(str(Path(__file__).resolve().parents[1]))
sys.path.append(str(Path(__file__).resolve().parent))

from datasets import load_from_disk
from export_for_review import drafts_to_review

from qagen.runs.rundir import RunDir

REPOSITORY = Path(__file__).resolve().parents[1]
REVIEW_FILE = "drafts_to_review.jsonl"
STANDIN_GOOD_RATE = 0.4
"""The share of good questions of the stand-in's hidden truth in `--standin` mode."""


@dataclass(frozen=True)
class Built:
    """One build's figures, read from its run directory."""

    name: str
    per_chunk: int
    drafting_calls: int
    drafting_prompt_tokens: int
    drafting_output_tokens: int
    all_prompt_tokens: int
    drafts: int
    parsed: int
    kept_ids: frozenset[str]
    position: dict[str, int]
    """Each draft's place in its reply (1 for a draft of one pair a call)."""
    status: dict[str, str]
    reason: dict[str, str]


def read_build(run_dir: Path) -> Built:
    """The figures of the build in `run_dir`."""
    run = RunDir(run_dir)
    per_chunk = run.stored_config().per_chunk
    summary = json.loads((run_dir / "summary.json").read_text(encoding="utf-8"))
    usage = summary["usage"]
    position: dict[str, int] = {}
    with (run_dir / "drafts.jsonl").open(encoding="utf-8") as log:
        for line in log:
            record = json.loads(line)
            if record.get("pairs") is None:  # a reply of several pairs is no draft
                position[record["id"]] = record.get("pair") or 1
    rows = list(load_from_disk(str(run_dir / "candidates")))
    return Built(
        name=f"per_chunk={per_chunk}",
        per_chunk=per_chunk,
        drafting_calls=usage["generation"]["calls"],
        drafting_prompt_tokens=usage["generation"]["input_tokens"],
        drafting_output_tokens=usage["generation"]["output_tokens"],
        all_prompt_tokens=usage["generation"]["input_tokens"] + usage["critique"]["input_tokens"],
        drafts=summary["funnel"]["sampled"],
        parsed=summary["funnel"]["drafted"],
        kept_ids=frozenset(row["id"] for row in rows if row["status"] == "kept"),
        position={row["id"]: position[row["id"]] for row in rows},
        status={row["id"]: row["status"] for row in rows},
        reason={row["id"]: row["reason"] for row in rows},
    )


def read_labels(path: Path) -> dict[str, bool]:
    """A reviewer's keep decisions by draft id: lines with `id` and `keep`, or `review.keep` (merge_labels.py)."""
    labels: dict[str, bool] = {}
    for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
        if not line.strip():
            continue
        row = json.loads(line)
        keep = row.get("keep", (row.get("review") or {}).get("keep"))
        if not isinstance(keep, bool) or "id" not in row:
            raise SystemExit(f"{path}:{number}: a label needs an `id` and a true/false `keep`")
        labels[str(row["id"])] = keep
    return labels


def _per(tokens: int, count: int) -> str:
    return f"{tokens / count:,.0f}" if count else "-"


def _share(part: int, whole: int) -> str:
    return f"{part}/{whole} ({part / whole:.2f})" if whole else "0/0"


def report(builds: Sequence[Built], labels: dict[str, bool] | None) -> str:
    """The figures of the builds side by side, and with labels the share good and the tokens per kept good one."""
    width = 44
    column = 22
    lines = ["".ljust(width) + "".join(built.name.rjust(column) for built in builds)]

    def row(label: str, values: Sequence[str]) -> None:
        lines.append(label.ljust(width) + "".join(value.rjust(column) for value in values))

    row("drafting calls", [f"{b.drafting_calls:,}" for b in builds])
    row("drafts (pairs asked for)", [f"{b.drafts:,}" for b in builds])
    row("parsed drafts", [f"{b.parsed:,}" for b in builds])
    row("kept questions", [f"{len(b.kept_ids):,}" for b in builds])
    row("drafting prompt tokens", [f"{b.drafting_prompt_tokens:,}" for b in builds])
    row("  per draft", [_per(b.drafting_prompt_tokens, b.drafts) for b in builds])
    row("  per kept question", [_per(b.drafting_prompt_tokens, len(b.kept_ids)) for b in builds])
    row("all prompt tokens (drafting + checks)", [f"{b.all_prompt_tokens:,}" for b in builds])
    row("  per kept question", [_per(b.all_prompt_tokens, len(b.kept_ids)) for b in builds])
    row("drafting output tokens per draft", [_per(b.drafting_output_tokens, b.drafts) for b in builds])
    for built in builds:
        lines += ["", f"{built.name}, by the pair's place in its reply: kept of drafts (failed, why)"]
        for place in sorted(set(built.position.values())):
            ids = [draft for draft, at in built.position.items() if at == place]
            kept = sum(draft in built.kept_ids for draft in ids)
            failed = sorted({built.reason[draft] for draft in ids if built.status[draft] == "failed"})
            why = f"  failed {sum(built.status[d] == 'failed' for d in ids)}: {', '.join(failed)}" if failed else ""
            lines.append(f"  pair {place}: kept {_share(kept, len(ids))}{why}")
    if labels is not None:
        lines += ["", *labelled(builds, labels)]
    return "\n".join(lines)


def labelled(builds: Sequence[Built], labels: dict[str, bool]) -> list[str]:
    """Share good by place (of the labelled parsed drafts), among the kept, and prompt tokens per kept good."""
    known = {draft for built in builds for draft in built.position}
    unknown = sorted(set(labels) - known)
    if unknown:
        raise SystemExit(f"{len(unknown)} labels name no draft of these builds (e.g. {unknown[0]})")
    lines = ["with the reviewer's labels (share good: labelled keep)"]
    for built in builds:
        parsed = [draft for draft in built.position if built.status[draft] != "failed"]
        unlabelled = [draft for draft in parsed if draft not in labels]
        said = f" ({len(unlabelled)} parsed drafts have no label and are left out)" if unlabelled else ""
        lines.append(f"  {built.name}{said}")
        first: float | None = None
        for place in sorted({built.position[draft] for draft in parsed}):
            ids = [draft for draft in parsed if built.position[draft] == place and draft in labels]
            good = sum(labels[draft] for draft in ids)
            versus = ""
            if place == 1 and ids:
                first = good / len(ids)
            elif first is not None and ids:
                versus = f"  ({good / len(ids) - first:+.2f} against pair 1)"
            lines.append(f"    pair {place}: good {_share(good, len(ids))}{versus}")
        kept = [draft for draft in built.kept_ids if draft in labels]
        kept_good = sum(labels[draft] for draft in kept)
        lines.append(f"    kept: good {_share(kept_good, len(kept))}")
        lines.append(
            f"    prompt tokens per kept good question: drafting {_per(built.drafting_prompt_tokens, kept_good)}, "
            f"all {_per(built.all_prompt_tokens, kept_good)}"
        )
    return lines


def build(
    out: Path, corpus: Path, args: argparse.Namespace, per_chunk: int, extra: Sequence[str], *, in_process: bool = False
) -> None:
    """`qagen build` as a user runs it, into `out`: in a process of its own, or (`in_process`, the stand-in's
    quick builds) through the same command in this one."""
    flags = [
        "build", str(corpus), "--out", str(out), "--generator-model", args.generator_model, "--base-url",
        args.base_url, "-n", str(args.n), "--seed", str(args.seed), "--per-chunk", str(per_chunk), "--concurrency",
        str(args.concurrency), "-q", *extra,
    ]  # fmt: skip
    # A local OpenAI-compatible server takes any key; the client wants one.
    key = os.environ.get("OPENAI_API_KEY", "local")
    if in_process:
        from click.testing import CliRunner

        from qagen.cli.app import main as qagen

        result = CliRunner().invoke(qagen, flags, env={"OPENAI_API_KEY": key})
        if result.exit_code != 0:
            raise SystemExit(f"the build into {out} failed ({result.exit_code}):\n{result.output[-3000:]}")
        return
    env = {**os.environ, "PYTHONPATH": str(REPOSITORY), "OPENAI_API_KEY": key}
    command = [sys.executable, "-m", "qagen", *flags]
    done = subprocess.run(command, env=env, capture_output=True, text=True, cwd=REPOSITORY, check=False)
    if done.returncode != 0:
        raise SystemExit(f"the build into {out} failed ({done.returncode}):\n{done.stderr[-3000:]}")


def export(out: Path, runs: Sequence[Path], seed: int) -> list[dict[str, object]]:
    """Every parsed draft of the runs, blind and shuffled, written to `out / REVIEW_FILE`."""
    rows = [row for run in runs for row in drafts_to_review(run)]
    random.Random(seed).shuffle(rows)
    with (out / REVIEW_FILE).open("w", encoding="utf-8") as written:
        for row in rows:
            written.write(json.dumps(row, ensure_ascii=False) + "\n")
    return rows


def runs_of(out: Path) -> list[Path]:
    """The builds of a bench directory, one pair a call first."""
    found = [path for path in out.glob("per_chunk_*") if (path / "summary.json").is_file()]
    return sorted(found, key=lambda path: int(path.name.rsplit("_", 1)[1]))


def main(argv: Sequence[str] | None = None) -> None:
    arguments = list(sys.argv[1:] if argv is None else argv)
    extra: list[str] = []
    if "--" in arguments:
        extra = arguments[arguments.index("--") + 1 :]
        arguments = arguments[: arguments.index("--")]
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("corpus", type=Path, nargs="?", help="the documents to build from (not with --report)")
    parser.add_argument("--out", type=Path, help="the bench directory: both builds and the export")
    parser.add_argument("--base-url", help="the generator's (and critics') OpenAI-compatible server")
    parser.add_argument("--generator-model", help="the model spec, e.g. openai:qwen2.5-1.5b")
    parser.add_argument("-n", type=int, default=24, help="drafts of each build (default 24)")
    parser.add_argument("--seed", type=int, default=11)
    parser.add_argument("--per-chunk", type=int, default=3, help="the pairs a call of the second build (default 3)")
    parser.add_argument("--concurrency", type=int, default=1, help="calls in flight (default 1: one local server)")
    parser.add_argument("--report", type=Path, help="only print the figures of a bench directory built before")
    parser.add_argument("--labels", type=Path, help="a reviewer's labels of the exported drafts")
    parser.add_argument("--standin", action="store_true", help="against the stand-in LLM, labelled from its truth")
    args = parser.parse_args(arguments)
    if args.report is not None:
        print(report([read_build(run) for run in runs_of(args.report)], _labels(args.labels)))
        return
    if args.out is None:
        parser.error("--out is needed to build")
    args.out.mkdir(parents=True, exist_ok=True)
    if args.standin:
        _standin(args, extra)
        return
    if args.corpus is None or args.base_url is None or args.generator_model is None:
        parser.error("CORPUS, --base-url and --generator-model are needed to build")
    runs = [args.out / f"per_chunk_{per_chunk}" for per_chunk in (1, args.per_chunk)]
    for run, per_chunk in zip(runs, (1, args.per_chunk), strict=True):
        build(run, args.corpus, args, per_chunk, extra)
    rows = export(args.out, runs, args.seed)
    print(report([read_build(run) for run in runs], _labels(args.labels)))
    print(f"\n{len(rows)} drafts to label blind: {args.out / REVIEW_FILE}")


def _labels(path: Path | None) -> dict[str, bool] | None:
    return None if path is None else read_labels(path)


def _standin(args: argparse.Namespace, extra: Sequence[str]) -> None:
    """Both builds against the stand-in LLM (its generated corpus unless one is given), every exported draft
    labelled from the stand-in's hidden truth (`labels.jsonl`), then the report with those labels."""
    from standins.corpus import write_corpus
    from standins.llm.server import StandInLLM
    from standins.llm.truth import is_good

    corpus = args.corpus or write_corpus(args.out / "corpus")
    with StandInLLM() as llm:
        llm.configure(logprobs=True, good_rate=STANDIN_GOOD_RATE, generation_format_variety=0.5)
        args.base_url, args.generator_model = llm.base_url, "openai:stand-in"
        chunking = ["--chunk-size", "400", "--chunk-overlap", "40"]
        runs = [args.out / f"per_chunk_{per_chunk}" for per_chunk in (1, args.per_chunk)]
        for run, per_chunk in zip(runs, (1, args.per_chunk), strict=True):
            build(run, corpus, args, per_chunk, [*chunking, *extra], in_process=True)
    rows = export(args.out, runs, args.seed)
    labels_file = args.out / "labels.jsonl"
    with labels_file.open("w", encoding="utf-8") as written:
        for row in rows:
            label: dict[str, Any] = {"id": row["id"], "keep": is_good(str(row["question"]), STANDIN_GOOD_RATE)}
            written.write(json.dumps(label) + "\n")
    print(report([read_build(run) for run in runs], read_labels(labels_file)))
    print(f"\n{len(rows)} drafts exported: {args.out / REVIEW_FILE}; labelled from the hidden truth: {labels_file}")


if __name__ == "__main__":
    main()
