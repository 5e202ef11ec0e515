"""Test-set quality with a real model: the free checks, the critics and the set's profile, measured.

    # Replay (no model, seconds): the reviewed drafts' recorded replies read again, every check
    # measured against the reviewer's labels, the recorded critics' kappa with them.
    python benchmarks/bench_quality.py --replay

    # Live: a model behind llama.cpp's OpenAI-compatible server (the lead runs this).
    python -m llama_cpp.server --model qwen2.5-coder-1.5b-instruct-q4_k_m.gguf --host 127.0.0.1 --port 8080 \\
        --model_alias qwen --n_ctx 4096
    python benchmarks/bench_quality.py --base-url http://127.0.0.1:8080/v1 --model openai:qwen --limit 40

    # The same sample drafted without the evidence line (the drafting prompt with its two `Evidence`
    # lines removed, in a folder of its own): what the line changes in the drafts and the critics.
    mkdir no-evidence && grep -v -i evidence prompts/qa_generation.txt > no-evidence/qa_generation.txt
    python benchmarks/bench_quality.py --base-url http://127.0.0.1:8080/v1 --model openai:qwen --limit 40 \
        --prompts-dir no-evidence --no-reviewed

Live mode makes three measurements, each printed as a table:

1. A small set built from a real corpus nobody here wrote (git's how-to pages from Debian's
   git-doc package, HTML only, unless --corpus names another folder), every critic asked on every
   draft and no free check (so each check can be compared with the critics), then filtered again
   (no call) with the checks on, as a build makes them: the funnel, each critic's pass rate, the
   evidence check's rejections and how often the groundedness critic failed the same drafts, the
   easiness figures, and seconds and prompt tokens per kept question (of the measurement run, all
   critics asked, and the critics' prompt tokens the checks would have saved).
2. The reviewed drafts (`../shared/reference/data/gitdoc_drafts_reviewed.jsonl`) critiqued by the
   live model: their recorded replies are replayed by the stand-in LLM as the generator, the live
   model is the critic; each critic's Cohen's kappa (with its bootstrap interval) with the
   reviewer's labels.
3. The replay measurement below.

Replay mode: each check's rejections on the reviewed drafts against the reviewer's labels
(precision, recall, drafts the reviewer kept that it rejects: `qagen.review.check_precision`), the
evidence check's agreement with the recorded groundedness critic, the recorded critics' kappa, and
the easiness of the reviewed drafts among their own chunks.
"""

from __future__ import annotations

import argparse
import json
import math
import shutil
import sys
import tempfile
import time
from collections import Counter
from collections.abc import Sequence
from functools import partial
from pathlib import Path
from typing import NamedTuple

# The stand-in servers sit at the repository's root (standins/), outside the installed package;
# appended, so qagen itself still comes from the install or PYTHONPATH.
sys.path.append(str(Path(__file__).resolve().parents[1]))
sys.path.append(str(Path(__file__).resolve().parent))  # score_data, beside this file

from datasets import Dataset, load_from_disk

from qagen.config import BuildConfig
from qagen.corpus.chunk_index import ChunkIndex
from qagen.corpus.settings import ChunkSettings, CorpusSettings
from qagen.critics import CRITICS
from qagen.generation.checks.easiness import copied_share
from qagen.generation.checks.evidence import EVIDENCE_NOT_FOUND
from qagen.generation.checks.rules import FREE_CHECKS
from qagen.generation.pipeline import build, finalize, load_sample
from qagen.generation.tasks import BuildTasks
from qagen.llm.backends import ModelSettings
from qagen.llm.untrusted import neutralize
from qagen.records import Chunk
from qagen.review.check_precision import (
    EVIDENCE_CHECK,
    PASS_SCORE,
    ReviewedDraft,
    critic_agreement,
    groundedness_agrees,
    measure_checks,
    read_reviewed,
    rejections,
)
from qagen.review.kappa import Agreement, Pair, agreement
from qagen.runs.rundir import RunDir

REPOSITORY = Path(__file__).resolve().parents[1]
REVIEWED = REPOSITORY.parent / "shared" / "reference" / "data" / "gitdoc_drafts_reviewed.jsonl"
GIT_HOWTO = Path("/usr/share/doc/git-doc/howto")
CRITIC_NAMES = [spec.name for spec in CRITICS]


def _share(part: int, whole: int) -> str:
    return f"{part}/{whole} ({part / whole:.0%})" if whole else f"{part}/0"


def _figure(value: float | None, digits: int = 2) -> str:
    return "-" if value is None else f"{value:.{digits}f}"


def _kappa_line(name: str, found: Agreement) -> str:
    interval = f"[{_figure(found.kappa_low)}, {_figure(found.kappa_high)}]"
    return f"  {name:<14} n={found.n:<3} agreement {_figure(found.agreement)}  kappa {_figure(found.kappa)} {interval}"


# --------------------------------------------------------------------------------------------------
# Replay: the reviewed drafts' recorded replies
# --------------------------------------------------------------------------------------------------
def replay(reviewed: Path, limit: int | None) -> None:
    started = time.perf_counter()
    drafts = read_reviewed(reviewed)[:limit]
    print(f"Replay of {len(drafts)} reviewed drafts ({reviewed.name}), recorded replies read again, no model:\n")
    print("Free checks against the reviewer's labels (a label fails below 4; `keep` for answer_in_question):")
    print(f"  {'check':<20} {'label':<13} {'rejected':>8} {'precision':>9} {'recall':>11} {'kept by reviewer':>16}")
    for measure in measure_checks(drafts):
        recall = f"{_figure(measure.recall)} ({measure.true_rejections}/{measure.reviewer_fails})"
        print(
            f"  {measure.name:<20} {measure.label:<13} {measure.rejected:>8} {_figure(measure.precision):>9} "
            f"{recall:>11} {measure.kept_rejected:>16}"
        )
    on = [draft for draft in drafts if _rejected_by_default_checks(draft)]
    dropped_kept = sum(1 for draft in on if draft.review.get("keep") is True)
    not_kept = sum(1 for draft in drafts if draft.review.get("keep") is False)
    caught = len(on) - dropped_kept
    print(
        f"  all checks on by default, together: {len(on)} rejected, {caught} of them not kept by the reviewer; "
        f"recall of the reviewer's {not_kept} rejections {_figure(caught / max(1, not_kept))}"
    )
    agreed, scored = groundedness_agrees(drafts)
    print(
        f"\nThe recorded groundedness critic also failed {_share(agreed, scored)} of the evidence check's rejections."
    )
    print(
        "\nThe recorded critics against the reviewer (pass = score >= 4), Cohen's kappa with a 95% bootstrap interval:"
    )
    for name in CRITIC_NAMES:
        print(_kappa_line(name, critic_agreement(drafts, name)))
    print(_kappa_line("keep (all 3)", _keep_agreement(drafts)))
    _replay_easiness(drafts)
    print(f"\n{time.perf_counter() - started:.1f} s")


def _rejected_by_default_checks(draft: ReviewedDraft) -> bool:
    verdicts = rejections(draft)
    on = {check.name for check in FREE_CHECKS if check.default_on} | {EVIDENCE_CHECK}
    return any(verdicts[name] for name in on)


def _keep_agreement(drafts: Sequence[ReviewedDraft]) -> Agreement:
    pairs = [
        Pair(draft.id, all((draft.critic_scores.get(name) or 0) >= PASS_SCORE for name in CRITIC_NAMES), bool(keep))
        for draft in drafts
        if (keep := draft.review.get("keep")) is not None
    ]
    return agreement(pairs)


def _replay_easiness(drafts: Sequence[ReviewedDraft]) -> None:
    # Each reviewed draft's chunk as a document of its own (the reviewed set records no sources).
    chunks = [Chunk(id=d.id, source=d.id, text=d.chunk, start_index=0, end_index=len(d.chunk)) for d in drafts]
    index = ChunkIndex(lambda: chunks)
    shares = [share for draft in drafts if (share := copied_share(draft.question, draft.chunk)) is not None]
    ranks = [rank for draft in drafts if (rank := index.rank(draft.question, draft.id)) is not None]
    first = sum(1 for rank in ranks if rank == 1)
    median = sorted(shares)[len(shares) // 2] if shares else None
    print(
        f"\nEasiness among the {len(drafts)} reviewed chunks: median copied share {_figure(median)}, "
        f"own chunk ranked first by BM25 {_share(first, len(ranks))}."
    )


# --------------------------------------------------------------------------------------------------
# Live: a real model
# --------------------------------------------------------------------------------------------------
def _howto_corpus(work: Path) -> Path:
    """git's how-to pages, HTML only (the package has each page as .txt too, which would repeat it)."""
    if not GIT_HOWTO.is_dir():
        sys.exit(f"{GIT_HOWTO} is not there: apt-get install git-doc, or give --corpus FOLDER.")
    corpus = work / "git-howto"
    corpus.mkdir(parents=True, exist_ok=True)
    for page in sorted(GIT_HOWTO.glob("*.html")):
        shutil.copy(page, corpus / page.name)
    return corpus


def _model(args: argparse.Namespace) -> ModelSettings:
    return ModelSettings(spec=args.model, base_url=args.base_url, timeout=args.timeout, max_output_tokens=512)


def live_build(args: argparse.Namespace, work: Path) -> None:
    corpus = args.corpus or _howto_corpus(work)
    model = _model(args)
    measured = BuildConfig(
        corpus=CorpusSettings(path=str(corpus)), n_generations=args.limit, seed=args.seed, generator=model,
        critic=model, concurrency=args.concurrency, all_critics=True, free_checks=(), check_evidence=False,
        max_failure_rate=1.0, prompts_dir=str(args.prompts_dir) if args.prompts_dir else None,
    )  # fmt: skip
    out = work / "build"
    started = time.perf_counter()
    result = build(measured, out, progress=not args.quiet)
    measured_summary = result.summary.model_dump(mode="json")
    seconds = _build_seconds(work, time.perf_counter() - started)
    every = {row["id"]: row for row in load_from_disk(str(out / "candidates"))}
    # The same records filtered as a build filters them: the free checks on, no call.
    checked = measured.model_copy(update={"free_checks": None, "check_evidence": True, "all_critics": False})
    tasks = BuildTasks.for_config(checked)
    with RunDir(out).locked() as run:
        run.open(checked, tasks.prompt_hashes())
        summary = finalize(checked, run, tasks, load_sample(checked, run)).model_dump(mode="json")
    rows = list(load_from_disk(str(out / "candidates")))
    funnel, profile = summary["funnel"], summary["profile"]
    print(f"\n1. A set built from {corpus} by {args.model}: {funnel['sampled']} drafts asked for.\n")
    print("Funnel, the free checks on (as a build makes it):")
    for key in ("sampled", "drafted", "generation_failed", "too_long", "checks_rejected", "rejected", "rejected_by"):
        print(f"  {key:<18} {funnel[key]}")
    print(f"  {'duplicates':<18} {funnel['duplicates']} by words, {funnel['semantic_duplicates']} by meaning")
    print(f"  {'kept':<18} {funnel['kept']}")
    print("\nEach critic's pass rate (score >= its threshold), every critic asked on every parsed draft:")
    for name, threshold in measured_summary["thresholds"].items():
        scores = [row[f"{name}_score"] for row in every.values() if row.get(f"{name}_score") is not None]
        print(f"  {name:<14} {_share(sum(1 for s in scores if s >= threshold), len(scores))}")
    evidence = [row for row in rows if row["reason"] == EVIDENCE_NOT_FOUND]
    grounded = [every[row["id"]]["groundedness_score"] for row in evidence]
    failed = sum(1 for score in grounded if score is not None and score < PASS_SCORE)
    rated = sum(1 for score in grounded if score is not None)
    print(
        f"\nEvidence check: {len(evidence)} drafts rejected as {EVIDENCE_NOT_FOUND} "
        f"({Counter(row['evidence_quote'] is not None for row in evidence)[True]} with a quoted sentence); "
        f"the groundedness critic failed {_share(failed, rated)} of them."
    )
    quoted = Counter(row["evidence_match"] for row in rows if row["evidence_match"])
    print(f"Evidence found by: {dict(quoted)}")
    easiness = profile["easiness"]
    print(
        f"\nEasiness of the kept questions: median copied share {_figure(easiness['copied_share']['median'])}, "
        f"own chunk ranked first by BM25 {_share(easiness['ranked_first'], easiness['bm25_rank']['count'])}, "
        f"in the top 5 {_figure(easiness['ranked_top5_share'])}."
    )
    kept = max(1, funnel["kept"])
    usage = measured_summary["usage"]
    prompt_tokens = usage["generation"]["input_tokens"] + usage["critique"]["input_tokens"]
    saved = _critic_tokens_of(out, {row["id"] for row in rows if row["reason"] in funnel["checks_rejected"]})
    print(
        f"\nPer kept question (measurement run: all critics asked on every draft): {seconds / kept:.1f} s, "
        f"{prompt_tokens / kept:,.0f} prompt tokens; the checks would have saved {saved:,} critic prompt tokens "
        f"({saved / max(1, usage['critique']['input_tokens']):.0%} of the critics')."
    )
    checked_out = {row["id"] for row in rows if row["reason"] in funnel["checks_rejected"]}
    thresholds = {spec.name: checked.threshold(spec.name) for spec in checked.critic_registry().asked()}
    calls = _calls(out)
    per_call = seconds / max(1, len(calls))
    print(
        "\nBefore and after the free checks, as a build asks its critics (in order, stopping at the first "
        "failing one),\nreplayed from the measurement run's records (seconds: the run's "
        f"{per_call:.1f} s a call times the calls):"
    )
    print(f"  {'':<22} {'kept':>4} {'calls':>6} {'prompt tokens':>14} {'s/kept':>7} {'tokens/kept':>12}")
    for label, skipped, kept_here in (
        ("without the checks", set(), measured_summary["funnel"]["kept"]),
        ("with the checks", checked_out, funnel["kept"]),
    ):
        n_calls, tokens = _chain_cost(calls, thresholds, skipped)
        each = max(1, kept_here)
        print(
            f"  {label:<22} {kept_here:>4} {n_calls:>6} {tokens:>14,} {n_calls * per_call / each:>7.1f} "
            f"{tokens / each:>12,.0f}"
        )


def _build_seconds(work: Path, this_run: float) -> float:
    """The measurement build's wall seconds summed over every run of the benchmark in `work`: a run
    that resumes it (after a crash, or to print again) adds its own seconds, not a fresh count."""
    ledger = work / "build_seconds.json"
    total = (json.loads(ledger.read_text(encoding="utf-8"))["seconds"] if ledger.is_file() else 0.0) + this_run
    ledger.write_text(json.dumps({"seconds": total}), encoding="utf-8")
    return float(total)


class _Call(NamedTuple):
    draft_id: str
    criterion: str | None  # None: the drafting call
    score: int | None
    input_tokens: int


def _calls(out: Path) -> list[_Call]:
    """Every call of a run, read from its record files (drafts, then critiques)."""
    found: list[_Call] = []
    for name in ("drafts.jsonl", "critiques.jsonl"):
        with (out / name).open(encoding="utf-8") as log:
            for line in log:
                record = json.loads(line)
                tokens = int((record.get("usage") or {}).get("input_tokens", 0))
                criterion = record.get("criterion")
                draft_id = record["draft_id"] if criterion else record["id"]
                found.append(_Call(draft_id, criterion, record.get("score"), tokens))
    return found


def _chain_cost(calls: Sequence[_Call], thresholds: dict[str, int], skipped: set[str]) -> tuple[int, int]:
    """Calls and prompt tokens had the critics been asked in order, stopping at the first failing one,
    and not at all for the drafts in `skipped` (rejected by a free check)."""
    drafting = [call for call in calls if call.criterion is None]
    verdicts = {(call.draft_id, call.criterion): call for call in calls if call.criterion is not None}
    n_calls, tokens = len(drafting), sum(call.input_tokens for call in drafting)
    for draft in drafting:
        if draft.draft_id in skipped:
            continue
        for criterion, threshold in thresholds.items():
            verdict = verdicts.get((draft.draft_id, criterion))
            if verdict is None:
                break  # never asked: the draft did not parse, or was too long
            n_calls, tokens = n_calls + 1, tokens + verdict.input_tokens
            if verdict.score is None or verdict.score < threshold:
                break
    return n_calls, tokens


def _critic_tokens_of(out: Path, draft_ids: set[str]) -> int:
    total = 0
    with (out / "critiques.jsonl").open(encoding="utf-8") as log:
        for line in log:
            record = json.loads(line)
            if record.get("draft_id") in draft_ids:
                total += int((record.get("usage") or {}).get("input_tokens", 0))
    return total


def live_critics(args: argparse.Namespace, work: Path, reviewed: Path) -> None:
    """The reviewed drafts critiqued by the live model: the stand-in replays their recorded drafts."""
    from standins.llm.replies import recorded_key
    from standins.llm.server import StandInLLM

    lines = [json.loads(line) for line in reviewed.read_text(encoding="utf-8").splitlines() if line.strip()]
    lines = lines[: args.limit]
    corpus = work / "reviewed-chunks"
    Dataset.from_dict({"text": [r["chunk"] for r in lines], "source": [r["id"] for r in lines]}).save_to_disk(
        str(corpus)
    )
    recorded = {recorded_key(neutralize(r["chunk"])): r["generation_raw"] for r in lines}
    out = work / "reviewed"
    with StandInLLM() as replayer:
        replayer.configure(recorded_drafts=recorded)
        config = BuildConfig(
            corpus=CorpusSettings(hf_dataset=str(corpus), source_column="source"),
            chunking=ChunkSettings(chunk_size=2000, chunk_overlap=0),
            generator=ModelSettings(spec="openai:recorded", base_url=replayer.base_url),
            critic=_model(args), concurrency=args.concurrency, all_critics=True, free_checks=(),
            check_evidence=False, dedup_embeddings=None, max_failure_rate=1.0,
        )  # fmt: skip
        build(config, out, progress=not args.quiet)
    by_id = {draft.id: draft for draft in read_reviewed(reviewed)}
    live: list[ReviewedDraft] = []
    for row in load_from_disk(str(out / "candidates")):
        draft = by_id.get(row["source_doc"])
        if draft is not None:
            scores = {name: row.get(f"{name}_score") for name in CRITIC_NAMES}
            live.append(draft._replace(critic_scores=scores))
    print(f"\n2. The {len(live)} reviewed drafts critiqued by {args.model} (pass = score >= 4), against the reviewer:")
    for name in CRITIC_NAMES:
        print(_kappa_line(name, critic_agreement(live, name)))
    print(_kappa_line("keep (all 3)", _keep_agreement(live)))
    agreed, scored = groundedness_agrees(live)
    print(f"  the live groundedness critic failed {_share(agreed, scored)} of the evidence check's rejections")


# --------------------------------------------------------------------------------------------------
# Certify: the signals, the combined score and certified acceptance on the reviewed drafts (no model)
# --------------------------------------------------------------------------------------------------
CERTIFY_CONFIDENCE = 0.9
CERTIFY_SPLITS = 50
BOOTSTRAP = 1000

ORIENTATION = {
    "supported": 1,
    "reader": 1,
    "bm25_rank": -1,
    "extractive_share": 1,
    "restated_share": -1,
    "copied_share": 1,
}
"""Each signal's direction, declared before any label was read: +1 when a higher value should mean a draft a
reviewer keeps (an AUC under 0.5 says the signal points the other way on these drafts)."""

OWN_CUTS = {"supported": 0.7, "reader": 0.5}
"""The checks' default cuts (`vetting`): their rejections' precision is measured there as well."""

BOTTOM = 0.2
"""Every signal's rejections are also measured as those of a cut rejecting its lowest fifth (oriented)."""


def _auc(values: Sequence[float], labels: Sequence[bool]) -> float | None:
    from sklearn.metrics import roc_auc_score

    return float(roc_auc_score(labels, values)) if 0 < sum(labels) < len(labels) else None


def _auc_interval(values: Sequence[float], labels: Sequence[bool], seed: int = 0) -> tuple[float, float] | None:
    """The 95% percentile bootstrap interval of the AUC (resampling drafts; Mann-Whitney's U from the ranks of
    each resample, ties counted half, as `roc_auc_score` counts them)."""
    import numpy as np
    from scipy.stats import rankdata

    rng = np.random.default_rng(seed)
    x, y = np.asarray(values, dtype=float), np.asarray(labels, dtype=bool)
    picks = rng.integers(0, len(x), (BOOTSTRAP, len(x)))
    xs, ys = x[picks], y[picks]
    positives = ys.sum(axis=1)
    negatives = len(x) - positives
    both = (positives > 0) & (negatives > 0)
    if both.sum() < BOOTSTRAP // 2:
        return None
    ranks = rankdata(xs, axis=1)
    u = (ranks * ys).sum(axis=1) - positives * (positives + 1) / 2
    aucs = u[both] / (positives[both] * negatives[both])
    low, high = np.percentile(aucs, [2.5, 97.5])
    return float(low), float(high)


def _signal_line(label: str, pairs: Sequence[tuple[float, bool]], own_cut: float | None) -> str:
    """AUC with its interval, and the precision of the rejections (at the check's own cut; of the lowest fifth)."""
    values, labels = [v for v, _ in pairs], [k for _, k in pairs]
    auc = _auc(values, labels)
    interval = _auc_interval(values, labels) if auc is not None else None
    shown = "-" if auc is None else f"{auc:.2f}"
    shown += f" [{interval[0]:.2f}, {interval[1]:.2f}]" if interval else ""
    ordered = sorted(pairs, key=lambda pair: pair[0])
    fifth = ordered[: max(1, round(len(ordered) * BOTTOM))] if ordered else []
    bottom = f"{sum(not k for _, k in fifth)}/{len(fifth)}" if fifth else "-"
    own = "-"
    if own_cut is not None:
        rejected = [k for v, k in pairs if v < own_cut]
        own = f"{sum(not k for k in rejected)}/{len(rejected)}" if rejected else "0/0"
    good = sum(labels)
    return f"  {label:<22} n={len(pairs):<4} good {good:<3} AUC {shown:<19} rejections bad: own cut {own:<7} lowest fifth {bottom}"


def certify_report(args: argparse.Namespace) -> None:
    """Issue 40's must-show 2 and the signals' measurements (see `benchmarks/score_data.py` for the data)."""
    import random

    from score_data import HELD_OUT, load

    from qagen.generation.score import SHIPPED, SIGNALS, ScoreModel, shipped_model
    from qagen.review.certify import Scored, certify
    from qagen.review.score_fit import Example, fit, split_apart

    started = time.perf_counter()
    loaded = load(verdicts_path=args.verdicts)
    drafts = loaded.drafts
    good_all = sum(d.keep for d in drafts)
    print(
        f"{len(drafts)} labelled drafts with their live verdicts ({args.verdicts}); {loaded.waiting} more labelled "
        f"drafts wait for a verdict a default build asks of their type. The reviewer keeps {good_all}."
    )
    types = sorted({d.question_type for d in drafts})
    for question_type in types:
        of_type = [d for d in drafts if d.question_type == question_type]
        print(f"  {question_type:<13} {len(of_type):>4} drafts, kept by the reviewer {sum(d.keep for d in of_type)}")
    base = [d for d in drafts if d.base_kept]
    base_good = sum(d.keep for d in base)
    print(
        f"\nThe default filter (free checks, then supported P(yes) >= 0.7; the reader's verdict for unanswerable "
        f"drafts), on every labelled draft: kept {len(base)}, share good {_figure(base_good / max(1, len(base)))}, "
        f"yield {_figure(base_good / max(1, good_all))}."
    )

    print("\nEach signal against the reviewer, oriented so that higher should mean kept (bm25_rank and restated_share")
    print("reversed); AUC with a 95% bootstrap interval; of its rejections, the ones the reviewer rejects too:")
    for group, members in [("every draft", drafts), ("kept by the default filter", base)]:
        print(f"{group}:")
        for question_type in ["all", *types]:
            of_type = [d for d in members if question_type in ("all", d.question_type)]
            print(f" {question_type}:")
            for name in SIGNALS:
                pairs = [
                    (ORIENTATION[name] * value, d.keep)
                    for d in of_type
                    if (value := d.signals.values.get(name)) is not None
                ]
                own = OWN_CUTS.get(name)
                if pairs:
                    print(_signal_line(name, pairs, own))

    if SHIPPED.is_file():
        model = shipped_model()
        held = [d for d in drafts if d.set_name in HELD_OUT]
        scored = [(p, d.keep) for d in held if (p := model.predict(d.question_type, d.signals.values, d.signals.asked))]
        print(f"\nThe shipped combined score on the held-out sets ({', '.join(sorted(HELD_OUT))}), never fitted on:")
        if scored:
            print(_signal_line("predicted_keep", scored, None))
        else:
            print("  no held-out draft with its verdicts yet")

    # Cross-validation: 50 random splits of every labelled draft into a calibration and a test half.
    def made(split: int) -> dict[str, object]:
        return {"split": split}

    def score_of(model: ScoreModel, d: object) -> float:
        found = model.predict(d.question_type, d.signals.values, d.signals.asked)  # type: ignore[attr-defined]
        return math.inf if found is None else found  # unscored: above any threshold, as `certify_run` counts it

    def supported(d: object) -> float:
        value = d.signals.values.get("supported")  # type: ignore[attr-defined]
        return math.inf if value is None else value

    rows: dict[str, list[tuple[bool, float | None, int, int, int, float | None]]] = {}
    combined_aucs: list[float] = []
    default_shares: list[float] = []
    default_yields: list[float] = []
    unscored = 0
    for split in range(CERTIFY_SPLITS):
        order = list(range(len(drafts)))
        random.Random(split).shuffle(order)
        calibration, test = order[: len(order) // 2], order[len(order) // 2 :]
        parts = split_apart(calibration, seed=10_000 + split)
        model = fit(
            [Example(drafts[i].question_type, drafts[i].signals, drafts[i].keep) for i in parts.fit], made(split)
        )
        test_good = sum(drafts[i].keep for i in test)
        test_base = [i for i in test if drafts[i].base_kept]
        if test_base:
            default_shares.append(sum(drafts[i].keep for i in test_base) / len(test_base))
        if test_good:
            default_yields.append(sum(drafts[i].keep for i in test_base) / test_good)
        scored_test = [(p, drafts[i].keep) for i in test if math.isfinite(p := score_of(model, drafts[i]))]
        unscored += sum(1 for i in test if not math.isfinite(score_of(model, drafts[i])))
        if (auc := _auc([p for p, _ in scored_test], [k for _, k in scored_test])) is not None:
            combined_aucs.append(auc)
        for label, score, labelled in (
            ("supported P(yes), labels of the whole calibration half", supported, calibration),
            ("supported P(yes), labels of the certifying part only", supported, parts.certify),
            ("combined score, fitted on the other part", partial(score_of, model), parts.certify),
        ):
            sample = [i for i in labelled if drafts[i].base_kept]
            result = certify([Scored(score(drafts[i]), drafts[i].keep) for i in sample], args.precision,
                             CERTIFY_CONFIDENCE)  # fmt: skip
            realized = yield_ = None
            if result.threshold is not None:
                above = [i for i in test_base if score(drafts[i]) >= result.threshold]
                realized = sum(drafts[i].keep for i in above) / len(above) if above else None
                yield_ = sum(drafts[i].keep for i in above) / test_good if test_good else None
            fitted = len(parts.fit) if label.startswith("combined") else 0
            rows.setdefault(label, []).append(
                (result.status == "certified", realized, len(sample), fitted, result.labels_above, yield_)
            )

    print(
        f"\nCross-validated certification, {CERTIFY_SPLITS} random splits of the {len(drafts)} drafts into a "
        f"calibration half and a test half; precision {args.precision}, confidence {CERTIFY_CONFIDENCE}. The "
        f"labels certified from are those of the calibration drafts the default filter keeps (a uniform kept "
        f"sample); the combined score's coefficients are fitted on half of the calibration half (every draft of "
        f"it, whatever the filter did) and it is certified from the other half; the test half is never read "
        f"before the threshold is set."
    )
    for label, outcomes in rows.items():
        certified = [o for o in outcomes if o[0]]
        realized = [o[1] for o in certified if o[1] is not None]
        held = sum(1 for value in realized if value >= args.precision)
        yields = [o[5] for o in certified if o[5] is not None]
        print(f"  {label}:")
        print(
            f"    certifies in {len(certified)} of {len(outcomes)} splits; kept-sample labels read "
            f"{_spread([o[2] for o in outcomes])}"
            + (f", labels fitted on {_spread([o[3] for o in outcomes])}" if outcomes[0][3] else "")
        )
        if certified:
            print(
                f"    where it certifies: labels at or above the threshold {_spread([o[4] for o in certified])}; "
                f"realized share good on the test half >= {args.precision} in {held} of {len(realized)} "
                f"(each: {', '.join(f'{value:.2f}' for value in realized)}); yield {_spread(yields)}"
            )
    print(
        f"  the default filter on the test halves: share good {_spread(default_shares)}, yield {_spread(default_yields)}"
    )
    print(
        f"  the combined score's AUC on the test halves (coefficients fitted on the calibration half's fitting part): "
        f"{_spread(combined_aucs)} over {len(combined_aucs)} splits; {unscored} test drafts unscored in all"
    )
    population_report(drafts)
    print(f"\n{time.perf_counter() - started:.1f} s")


POPULATION_DRAWS = 1000
POPULATION_LABELS = (23, 45, 90, 180)
POPULATION_PRECISIONS = (0.9, 0.8, 0.7)


def population_report(drafts: Sequence[object]) -> None:
    """Whether the certificate's guarantee holds on these drafts' real scores, without the split design's bias.

    The population is the labelled drafts the default filter keeps (all, or of some types); the labels
    certified from are `m` draws from it with replacement, so they are exactly the uniform, independent
    sample of the kept set the method assumes, and the realized share good above a certified threshold is
    the population's own (no test half). Learn-then-Test bounds P(certified and realized < precision) by
    1 - confidence over the draws; it says nothing of the share among the draws that certify, printed beside it.
    (The split design above draws calibration and test halves from one finite pool without replacement: a half
    lucky above a threshold leaves the other half the errors, so it is harsher than the guarantee.)
    """
    import random

    from qagen.review.certify import Scored, certify

    def supported(d: object) -> float:
        value = d.signals.values.get("supported")  # type: ignore[attr-defined]
        return math.inf if value is None else value  # undecided by P(yes): above any threshold, as `certify_run`

    print(
        f"\nThe guarantee on these scores (supported P(yes)): the population is the labelled drafts the default "
        f"filter keeps; {POPULATION_DRAWS} draws of m labels from it with replacement (a uniform kept sample); "
        f"realized = the population's share good at or above the certified threshold; confidence "
        f"{CERTIFY_CONFIDENCE}, so at most {1 - CERTIFY_CONFIDENCE:.2f} of the draws may certify a threshold "
        f"whose realized share is below the precision."
    )
    groups = {
        "every type": lambda d: True,
        "factoid and reworded": lambda d: d.question_type in ("factoid", "reworded"),
        "factoid": lambda d: d.question_type == "factoid",
    }
    for name, member in groups.items():
        population = [(supported(d), bool(d.keep)) for d in drafts if d.base_kept and member(d)]  # type: ignore[attr-defined]
        if not population:
            continue
        good = sum(k for _, k in population)
        ordered = sorted(population, key=lambda pair: -pair[0])
        best = max(
            (sum(k for _, k in ordered[:n]) / n for n in range(22, len(ordered) + 1)
             if n == len(ordered) or ordered[n][0] < ordered[n - 1][0]),
            default=None,
        )  # fmt: skip
        print(
            f"  {name}: {len(population)} kept drafts, share good {good / len(population):.2f}; the highest share "
            f"good at or above any threshold holding 22 or more of them: {_figure(best)}"
        )
        for precision in POPULATION_PRECISIONS:
            cells = []
            for m in POPULATION_LABELS:
                rng = random.Random(f"{name}-{precision}-{m}")
                certified = violated = 0
                for _ in range(POPULATION_DRAWS):
                    labels = [population[rng.randrange(len(population))] for _ in range(m)]
                    result = certify([Scored(score, kept) for score, kept in labels], precision, CERTIFY_CONFIDENCE)
                    if result.threshold is None:
                        continue
                    certified += 1
                    above = [kept for score, kept in population if score >= result.threshold]
                    violated += sum(above) / len(above) < precision
                cells.append(f"m={m}: certifies {certified}, realized below {violated}")
            print(f"    precision {precision}: " + "; ".join(cells))


def _spread(values: Sequence[float]) -> str:
    """Mean (min-max) of a list of figures."""
    if not values:
        return "-"
    mean = sum(values) / len(values)
    if all(float(v).is_integer() for v in values):
        return f"{mean:.1f} ({min(values):.0f}-{max(values):.0f})"
    return f"{mean:.2f} ({min(values):.2f}-{max(values):.2f})"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--replay", action="store_true", help="measure on the reviewed drafts' recorded replies only")
    parser.add_argument(
        "--certify",
        action="store_true",
        help="the signals, the combined score and certified acceptance on the reviewed sets with their live "
        "verdicts (no model): issue 40's must-show 2",
    )
    parser.add_argument(
        "--precision", type=float, default=0.9, help="the precision --certify's cross-validation certifies at"
    )
    parser.add_argument(
        "--verdicts",
        type=Path,
        default=REPOSITORY / "benchmarks" / "reviewed" / "live_verdicts.jsonl",
        help="the live verdicts asked of the reviewed sets (`bench_signals.py ask`), for --certify",
    )
    parser.add_argument("--base-url", help="an OpenAI-compatible server on 127.0.0.1 (llama.cpp's)")
    parser.add_argument("--model", default="openai:qwen", help="the model's spec as qagen names it (openai:ALIAS)")
    parser.add_argument("--limit", type=int, default=None, help="drafts: sampled chunks, and reviewed drafts used")
    parser.add_argument("--corpus", type=Path, help="a folder of documents (default: git-doc's how-to pages)")
    parser.add_argument("--reviewed", type=Path, default=REVIEWED, help="the reviewed drafts (JSON lines)")
    parser.add_argument("--out", type=Path, help="keep the runs here (default: a temporary folder)")
    parser.add_argument("--seed", type=int, default=42)
    parser.add_argument("--concurrency", type=int, default=1, help="calls in flight (llama.cpp serves one at a time)")
    parser.add_argument("--timeout", type=float, default=600.0, help="seconds to wait for one reply")
    parser.add_argument("--quiet", action="store_true", help="no progress bars")
    parser.add_argument(
        "--prompts-dir",
        type=Path,
        help="prompts replacing the bundled ones in measurement 1 (e.g. a drafting prompt without the evidence "
        "line, to compare with the bundled one on the same sample: same --seed and --limit)",
    )
    parser.add_argument(
        "--no-reviewed", action="store_true", help="skip measurement 2 (the reviewed drafts critiqued by the model)"
    )
    args = parser.parse_args()
    if args.certify:
        certify_report(args)
        return
    if not args.reviewed.is_file():
        sys.exit(f"The reviewed drafts are not at {args.reviewed}: give --reviewed PATH.")
    if args.replay:
        replay(args.reviewed, args.limit)
        return
    if not args.base_url:
        sys.exit("Give --base-url of a model's server (or --replay to measure on the recorded replies).")
    work = args.out or Path(tempfile.mkdtemp(prefix="bench-quality-"))
    work.mkdir(parents=True, exist_ok=True)
    if args.limit is None:
        args.limit = 40
    live_build(args, work)
    if not args.no_reviewed:
        live_critics(args, work, args.reviewed)
    print("\n3. ", end="")
    replay(args.reviewed, args.limit)
    print(f"\nruns kept in {work}")


if __name__ == "__main__":
    main()
