"""Which checks agree with a careful reviewer: every critic (the cookbook's 1-5 ratings, the yes/no
checks, the reader) asked of reviewed drafts by a live model, then each signal, each threshold and each
combination measured against the reviewer's labels, with no further call.

    # Ask (resumable: verdicts are kept in OUT/verdicts.jsonl by their task key; a re-run asks only
    # what is missing). llama.cpp's server, one request at a time:
    python benchmarks/bench_signals.py ask --base-url http://127.0.0.1:8766/v1 --model openai:qwen2.5-1.5b \\
        --out OUT --reviewed ../shared/reference/data/gitdoc_drafts_reviewed.jsonl \\
        --reviewed benchmarks/reviewed/pydoc_drafts_reviewed.jsonl --critics clear,reader,supported

    # Report (no model): per set and question type, each signal's kappa with the reviewer (95% bootstrap
    # interval), the precision and recall of its rejections, and the filters a build can be set to.
    python benchmarks/bench_signals.py report --out OUT --reviewed ... --reviewed ...

The drafts are the product's records (`Draft`, `Passages`) and the calls the product's critic tasks
(`CriticTask.request`/`parse`, sent by `LLMClient`), so what is measured is what a build asks and
reads. A reviewed set is JSON lines in one of two shapes: the git how-to set of `../shared` (`chunk`,
`question`, `answer`, `generation_raw`, `review`: factoids), or qagen's own (`question_type`,
`passages`, `retrieved` for unanswerable drafts, `question`, `answer`, `evidence`, `review`); see
benchmarks/reviewed/README.md.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
import time
from collections import Counter
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import Any, NamedTuple

from qagen.config import BuildConfig
from qagen.corpus.settings import CorpusSettings
from qagen.critics import BUNDLED_OPT_IN, CRITICS, CriticSpec, Vetting
from qagen.generation.checks.precheck import precheck
from qagen.generation.critique import CriticTask, Drafted
from qagen.generation.replies import parse_factoid_qa
from qagen.generation.tasks import BuildTasks
from qagen.generation.vetting import READER_AGREEMENT, decide, vet
from qagen.llm.backends import ModelSettings
from qagen.llm.clients import CallLimits, Clients
from qagen.llm.task import Reply
from qagen.question_types import QUESTION_TYPES
from qagen.records import Chunk, Critique, Draft, Passages
from qagen.review.kappa import Agreement, Pair, agreement

REPOSITORY = Path(__file__).resolve().parents[1]
GIT_REVIEWED = REPOSITORY.parent / "shared" / "reference" / "data" / "gitdoc_drafts_reviewed.jsonl"
PY_REVIEWED = REPOSITORY / "benchmarks" / "reviewed" / "pydoc_drafts_reviewed.jsonl"
COOKBOOK = ("standalone", "relevance", "groundedness")


class Reviewed(NamedTuple):
    """One reviewed draft, as the critics see it, and the reviewer's verdict."""

    set_name: str
    drafted: Drafted
    keep: bool | None
    """The reviewer keeps it; None: not labelled yet (its verdicts can be asked, not measured)."""
    review: dict[str, Any]


def _chunk(text: str, source: str, number: int) -> Chunk:
    return Chunk(id=f"{source}#{number}", source=source, text=text, start_index=0, end_index=len(text))


def read_reviewed(path: Path, *, labelled_only: bool = True) -> list[Reviewed]:
    """A reviewed set in either shape (the module's docstring): the drafts the reviewer labelled, or
    (`labelled_only=False`) every draft, labelled or not."""
    found: list[Reviewed] = []
    for line in path.read_text(encoding="utf-8").splitlines():
        if not line.strip():
            continue
        row = json.loads(line)
        review = row.get("review") or {}
        if labelled_only and review.get("keep") is None:
            continue
        if "passages" in row:
            chunks = tuple(_chunk(p["text"], p["document"], n) for n, p in enumerate(row["passages"]))
            question_type, evidence = row["question_type"], row.get("evidence")
            retrieved = tuple(_chunk(p["text"], p["document"], n) for n, p in enumerate(row.get("retrieved") or ()))
        else:
            chunks = (_chunk(row["chunk"], row["source_doc"], 0),)
            question_type, retrieved = "factoid", ()
            evidence = parse_factoid_qa(row["generation_raw"]).evidence
        draft = Draft(
            id=row["id"], model="reviewed", chunk_id=chunks[0].id, prompt_hash="reviewed",
            question=row["question"], answer=row["answer"], evidence=evidence,
        )  # fmt: skip
        drafted = Drafted(draft, Passages(question_type=question_type, chunks=chunks), retrieved)
        keep = review.get("keep")
        found.append(Reviewed(path.stem.split("_")[0], drafted, None if keep is None else bool(keep), review))
    return found


def critic_spec(name: str) -> CriticSpec:
    if name in BUNDLED_OPT_IN:
        return BUNDLED_OPT_IN.get(name)
    if name in CRITICS:
        return CRITICS.get(name)
    for spec in QUESTION_TYPES:
        for own in spec.own_critics:
            if own.name == name:
                return own
    raise SystemExit(f"no critic named {name}")


_EVERY_TYPE = {"factoid": 25, "multi_hop": 25, "unanswerable": 25, "reworded": 25}


@cache
def _build_tasks(model: str, names: tuple[str, ...], vetting: Vetting) -> BuildTasks:
    config = BuildConfig(
        corpus=CorpusSettings(path="."), question_types=_EVERY_TYPE, critic=ModelSettings(spec=model),
        critics=tuple(name for name in names if name in BUNDLED_OPT_IN), vetting=vetting,
    )  # fmt: skip
    return BuildTasks.for_config(config)


def task_for(name: str, question_type: str, model: str) -> CriticTask | None:
    """The critic's task as a build asks it of this question type (its prompt for the type included);
    None when a build does not vet the type with it."""
    vetting: Vetting = "cookbook" if name in COOKBOOK else "checks"
    names = tuple(spec.name for spec in BUNDLED_OPT_IN)
    return _build_tasks(model, names, vetting).types[question_type].critic(name)


# --------------------------------------------------------------------------------------------------
# ask
# --------------------------------------------------------------------------------------------------
def ask(args: argparse.Namespace) -> None:
    drafts = [draft for path in args.reviewed for draft in read_reviewed(path, labelled_only=False)]
    names = [name.strip() for name in args.critics.split(",") if name.strip()]
    settings = ModelSettings(
        spec=args.model, base_url=args.base_url, timeout=600, top_logprobs=5, max_output_tokens=400
    )
    args.out.mkdir(parents=True, exist_ok=True)
    store = args.out / "verdicts.jsonl"
    lines = store.read_text(encoding="utf-8").splitlines() if store.exists() else []
    done = {record.id: record for record in map(Critique.model_validate_json, lines)}
    config = BuildConfig(corpus=CorpusSettings(path="."))
    work: list[tuple[Drafted, list[CriticTask]]] = []
    for reviewed in drafts:
        if args.chain and _free_check(reviewed, config) is not None:
            continue  # a build asks no critic of a draft a free check rejects
        tasks = [task_for(name, reviewed.drafted.passages.question_type, args.model) for name in names]
        work.append((reviewed.drafted, [task for task in tasks if task is not None]))
    print(f"{len(work)} drafts ({len(done)} verdicts kept in {store})", file=sys.stderr)
    asyncio.run(_ask_all(settings, work, store, done, chain=args.chain))


async def _ask_all(
    settings: ModelSettings,
    work: list[tuple[Drafted, list[CriticTask]]],
    store: Path,
    done: dict[str, Critique],
    *,
    chain: bool,
) -> None:
    """Ask each draft's critics in order; with `chain`, stop at the first written score under 4, as a
    build's critics stop (the measurement of what today's default pays and keeps)."""
    clients = Clients.connect({"critic": settings}, CallLimits(concurrency=1, max_failure_rate=1.0))
    client = clients["critic"]
    started, calls = time.perf_counter(), 0
    try:
        with store.open("a", encoding="utf-8") as log:
            for number, (drafted, tasks) in enumerate(work, 1):
                for task in tasks:
                    record = done.get(task.key(drafted))
                    if record is None:
                        outcome = await client.complete(task.request(drafted))
                        record = (
                            task.parse(drafted, outcome)
                            if isinstance(outcome, Reply)
                            else task.failed(drafted, outcome)
                        )
                        log.write(record.model_dump_json() + "\n")
                        log.flush()
                        calls += 1
                        rate = (time.perf_counter() - started) / calls
                        said = f"{record.score} (p {record.probability})"
                        print(
                            f"draft {number}/{len(work)} {task.criterion} {said} ({rate:.1f} s a call)", file=sys.stderr
                        )
                    if chain and (record.score is None or record.score < 4):
                        break
    finally:
        await clients.aclose()


# --------------------------------------------------------------------------------------------------
# report
# --------------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class Signal:
    """A rejection rule over a draft's verdicts: True rejects, None when the verdict is missing."""

    name: str
    rejects: Callable[[dict[str, Critique]], bool | None]


def threshold_signal(critic: str, threshold: float, *, probability: bool) -> Signal:
    """Reject below `threshold`: a rating (its expectation with `probability`, else as written), or a
    yes/no critic's P(yes) (with `probability`, else its written yes/no), as a build's filter reads them."""
    spec = critic_spec(critic)
    # A rating's threshold is a whole number, as the build's setting is; a yes/no one is a cut on P(yes).
    held_to = (
        float(round(threshold))
        if spec.scale == "rating"
        else threshold
        if spec.scale == "yes_no" and probability
        else spec.yes_at
        if spec.scale == "yes_no"
        else READER_AGREEMENT
    )

    def rejects(verdicts: dict[str, Critique]) -> bool | None:
        verdict = verdicts.get(critic)
        if verdict is None or verdict.score is None:
            return None
        if not probability:
            verdict = verdict.model_copy(update={"probability": None})
        decided = decide(spec, verdict, held_to)
        return None if decided is None else not decided.passed

    label = (
        f"{critic}{' P(yes)' if spec.scale == 'yes_no' and probability else ' p' if probability else ''}<{threshold:g}"
    )
    return Signal(label, rejects)


def _free_check(reviewed: Reviewed, config: BuildConfig) -> str | None:
    """What a build rejects the draft for before any call: the build's checks, then its type's own."""
    drafted = reviewed.drafted
    spec = QUESTION_TYPES.get(drafted.passages.question_type)
    reason = precheck(drafted.draft, drafted.passages, config, answered=spec.answer_in_passages).reason
    return reason or (spec.check(drafted.draft, drafted.passages) if spec.check is not None else None)


def _line(name: str, rejected: list[bool], keeps: list[bool], ids: list[str]) -> str:
    pairs = [Pair(item, not reject, keep) for item, reject, keep in zip(ids, rejected, keeps, strict=True)]
    found: Agreement = agreement(pairs)
    n_rejected = sum(rejected)
    true_rejections = sum(1 for reject, keep in zip(rejected, keeps, strict=True) if reject and not keep)
    bad = sum(1 for keep in keeps if not keep)
    precision = f"{true_rejections / n_rejected:.2f}" if n_rejected else "-"
    recall = f"{true_rejections / bad:.2f}" if bad else "-"
    kappa = "-" if found.kappa is None else f"{found.kappa:+.2f}"
    interval = "" if found.kappa_low is None else f"[{found.kappa_low:+.2f}, {found.kappa_high:+.2f}]"
    kept = [keep for reject, keep in zip(rejected, keeps, strict=True) if not reject]
    share = f"{sum(kept) / len(kept):.2f}" if kept else "-"
    good = sum(keeps)
    yield_ = f"{sum(kept) / good:.2f}" if good else "-"
    return (
        f"  {name:<34} n={len(ids):<3} rejects {n_rejected:>3} precision {precision:>4} recall {recall:>4} "
        f"kappa {kappa:>5} {interval:<16} kept {len(kept):>3} share-good {share:>4} yield {yield_:>4}"
    )


class FilterOutcome(NamedTuple):
    """A filter's outcome on a group of reviewed drafts."""

    kept: int
    kept_good: int
    good: int
    undecided: int

    def line(self, label: str) -> str:
        share = f"{self.kept_good / self.kept:.2f}" if self.kept else "-"
        yield_ = f"{self.kept_good / self.good:.2f}" if self.good else "-"
        undecided = f", {self.undecided} undecided (a verdict not asked)" if self.undecided else ""
        return f"  {label:<44} kept {self.kept:>3}, share-good {share:>4}, yield {yield_:>4}{undecided}"


def build_outcome(
    members: Sequence[Reviewed], verdicts: dict[str, Critique], model: str, vetting: str, *, written: bool
) -> FilterOutcome:
    """What a build with `vetting` (its free checks, then its critics in order, at their default
    thresholds) keeps of the drafts, from the stored verdicts; `written`: the scores as written, no
    probability (today's default before verdicts were read as probabilities)."""
    config = BuildConfig(corpus=CorpusSettings(path="."), question_types=_EVERY_TYPE, vetting=vetting)  # type: ignore[arg-type]
    tasks = BuildTasks.for_config(config.model_copy(update={"critic": ModelSettings(spec=model)}))
    kept = kept_good = undecided = 0
    for member in members:
        if _free_check(member, config) is not None:
            continue
        fate = "kept"
        for task in tasks.types[member.drafted.passages.question_type].critics:
            verdict = verdicts.get(task.key(member.drafted))
            if verdict is None or not verdict.ok:
                fate = "undecided"
                break
            if written:
                verdict = verdict.model_copy(update={"probability": None})
            decided = vet(config, verdict)
            if decided is None or not decided.passed:
                fate = "rejected"
                break
        undecided += fate == "undecided"
        if fate == "kept":
            kept += 1
            kept_good += bool(member.keep)
    return FilterOutcome(kept, kept_good, sum(bool(member.keep) for member in members), undecided)


def recorded_verdicts(paths: Iterable[Path], drafts: Sequence[Reviewed], model: str) -> dict[str, Critique]:
    """The critics' scores recorded with a reviewed set (the git set holds the same model's, without
    token probabilities), as the verdicts of today's tasks for those drafts."""
    recorded = _recorded_scores(paths)
    found: dict[str, Critique] = {}
    for member in drafts:
        for name, score in recorded.get(member.drafted.draft.id, {}).items():
            task = task_for(name, member.drafted.passages.question_type, model)
            if task is not None and score is not None:
                key = task.key(member.drafted)
                found[key] = Critique(
                    id=key, model=model, draft_id=member.drafted.draft.id, criterion=name, prompt_hash="recorded",
                    score=score,
                )  # fmt: skip
    return found


def report(args: argparse.Namespace) -> None:
    drafts = [draft for path in args.reviewed for draft in read_reviewed(path)]
    store = args.out / "verdicts.jsonl"
    by_key: dict[str, Critique] = {}
    for line in store.read_text(encoding="utf-8").splitlines():
        record = Critique.model_validate_json(line)
        by_key[record.id] = record
    config = BuildConfig(corpus=CorpusSettings(path="."))
    names = sorted({record.criterion for record in by_key.values()})
    verdicts: dict[str, dict[str, Critique]] = {}
    for reviewed in drafts:
        found: dict[str, Critique] = {}
        for name in names:
            task = task_for(name, reviewed.drafted.passages.question_type, args.model)
            stored = by_key.get(task.key(reviewed.drafted)) if task is not None else None
            if stored is not None and stored.ok:
                found[name] = stored
        verdicts[reviewed.drafted.draft.id] = found
    recorded = _recorded_scores(args.reviewed)
    groups: dict[str, list[Reviewed]] = {}
    for reviewed in drafts:
        groups.setdefault(reviewed.set_name, []).append(reviewed)
        groups.setdefault(f"{reviewed.set_name}/{reviewed.drafted.passages.question_type}", []).append(reviewed)
    signals = _signals(names)
    combos = _combinations(names)
    every = {**recorded_verdicts(args.reviewed, drafts, args.model), **by_key}
    print("Before and after, as a build filters (free checks, then the critics in order at their thresholds):")
    for group, members in sorted(groups.items()):
        print(f"{group} ({len(members)} drafts):")
        print(
            build_outcome(members, every, args.model, "cookbook", written=True).line(
                "before: cookbook critics, written scores"
            )
        )
        print(build_outcome(members, every, args.model, "checks", written=False).line("after: --vetting checks"))
    for group, members in sorted(groups.items()):
        ids = [member.drafted.draft.id for member in members]
        keeps = [bool(member.keep) for member in members]
        print(f"\n{group}: {len(members)} drafts, the reviewer keeps {sum(keeps)}")
        checks = [_free_check(member, config) is not None for member in members]
        print(_line("free checks (default on)", checks, keeps, ids))
        reasons = Counter(reason for member in members if (reason := _free_check(member, config)))
        for reason in sorted(reasons):  # each free check alone: its rejections' precision
            alone = [_free_check(member, config) == reason for member in members]
            print(_line(f"  {reason}", alone, keeps, ids))
        if any(member.drafted.draft.id in recorded for member in members):
            before = [any((recorded.get(i, {}).get(c) or 0) < 4 for c in COOKBOOK) for i in ids]
            print(_line("recorded cookbook critics >= 4", before, keeps, ids))
        for signal in signals:
            decided = [
                (i, r, k) for i, k in zip(ids, keeps, strict=True) if (r := signal.rejects(verdicts[i])) is not None
            ]
            if decided:
                print(
                    _line(
                        signal.name, [r for _, r, _ in decided], [k for _, _, k in decided], [i for i, _, _ in decided]
                    )
                )
        for label, rules in combos:
            rejected = []
            for member, check in zip(members, checks, strict=True):
                verdict = verdicts[member.drafted.draft.id]
                rejected.append(check or any(rule.rejects(verdict) is True for rule in rules))
            print(_line(f"checks + {label}", rejected, keeps, ids))


def _recorded_scores(paths: Iterable[Path]) -> dict[str, dict[str, int | None]]:
    """The critics' scores recorded with a reviewed set (the git set holds the same model's)."""
    found: dict[str, dict[str, int | None]] = {}
    for path in paths:
        for line in path.read_text(encoding="utf-8").splitlines():
            if line.strip():
                row = json.loads(line)
                if "critics" in row:
                    found[row["id"]] = {name: verdict.get("score") for name, verdict in row["critics"].items()}
    return found


YES_AT_GRID = (0.5, 0.55, 0.6, 0.65, 0.7, 0.75, 0.8)
"""The P(yes) cuts tried for each yes/no critic."""


def _signals(names: Sequence[str]) -> list[Signal]:
    signals: list[Signal] = []
    for name in names:
        spec = critic_spec(name)
        signals.append(threshold_signal(name, 4 if spec.scale != "yes_no" else 0.5, probability=False))
        if spec.scale == "rating":
            signals.extend(threshold_signal(name, t, probability=True) for t in (3, 4, 5))
        elif spec.scale == "yes_no":
            signals.extend(threshold_signal(name, t, probability=True) for t in YES_AT_GRID)
    return signals


def _combinations(names: Sequence[str]) -> list[tuple[str, list[Signal]]]:
    cookbook = [threshold_signal(name, 4, probability=False) for name in COOKBOOK if name in names]
    combos: list[tuple[str, list[Signal]]] = []
    if cookbook:
        combos.append(("cookbook >= 4 (today's default)", cookbook))
        combos.append(("cookbook p >= 4", [threshold_signal(n, 4, probability=True) for n in COOKBOOK if n in names]))
    if "clear" in names and "supported" in names:
        for clear in YES_AT_GRID[1:6]:
            for supported in YES_AT_GRID[1:6]:
                rules = [threshold_signal("clear", clear, probability=True)]
                rules.append(threshold_signal("supported", supported, probability=True))
                combos.append((f"clear P>={clear:g} supported P>={supported:g}", rules))
                if "reader" in names:
                    rules = [*rules, threshold_signal("reader", 4, probability=False)]
                    combos.append((f"clear P>={clear:g} supported P>={supported:g} reader", rules))
    if "reader" in names:
        combos.append(("reader", [threshold_signal("reader", 4, probability=False)]))
    return combos


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("action", choices=("ask", "report"))
    parser.add_argument("--reviewed", type=Path, action="append", help="a reviewed set (repeatable)")
    parser.add_argument("--out", type=Path, required=True, help="where the verdicts are kept")
    parser.add_argument("--base-url", help="an OpenAI-compatible server on 127.0.0.1")
    parser.add_argument("--model", default="openai:qwen2.5-1.5b", help="the critic model's spec")
    parser.add_argument("--critics", default="clear,reader,supported", help="critics to ask, in this order")
    parser.add_argument(
        "--chain",
        action="store_true",
        help="ask as a build does: no critic of a draft a free check rejects, and none after a score under 4",
    )
    args = parser.parse_args()
    args.reviewed = args.reviewed or [path for path in (GIT_REVIEWED, PY_REVIEWED) if path.is_file()]
    if args.action == "ask":
        if not args.base_url:
            sys.exit("Give --base-url of a model's server.")
        ask(args)
    else:
        report(args)


if __name__ == "__main__":
    main()
