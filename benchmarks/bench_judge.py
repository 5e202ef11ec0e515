"""Whether `qagen evaluate`'s judge tells a right answer from a wrong one, measured against labels.

The labelled answer set is `benchmarks/judged/answers.jsonl` (its README says how it was made and
labelled): reviewed questions of two corpora (git's manual pages, Python's standard-library pages),
each with four answers of known correctness: the reference itself, another question's reference of
the same corpus (always wrong), the bundled BM25 baseline's answer and a closed-book answer by the
same model. Every answer was labelled blind, before any judge read it. The questions are split in two:
`tune` (what the judge's prompt and cut were chosen on) and `held_out` (what the must-shows report).

    # 1. The test sets and corpora (no model): benchmarks/judged/questions.jsonl, then per corpus a test
    #    set and the corpus's pages under WORK.
    python benchmarks/bench_judge.py prepare --work WORK
    # 2. The systems' answers (resumable: `qagen evaluate` directories under WORK/answers).
    python benchmarks/bench_judge.py answer --work WORK --base-url http://127.0.0.1:8766/v1 --model openai:qwen2.5-1.5b
    # 3. The answers to label (no judge has seen them): benchmarks/judged/answers.jsonl, labels empty.
    python benchmarks/bench_judge.py collect --work WORK
    # 4. Judge every answer with each variant (resumable: one `qagen evaluate --answers` per corpus, system
    #    and variant under WORK/judged, the product's own records), then the figures per split.
    python benchmarks/bench_judge.py judge --work WORK --base-url ... --model ... --variants answer_correct,correctness
    python benchmarks/bench_judge.py report --work WORK --variants answer_correct,correctness

A variant is a metric of `qagen evaluate` (`--metrics NAME`); what is measured is what the product
asks and reads. Per variant and split: AUC of the per-answer value against the labels, the share of
decisions (the metric's own cut) that agree with them, the share of swapped references judged
correct, calls and prompt tokens per answer.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import shutil
import subprocess
import sys
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any, NamedTuple

REPOSITORY = Path(__file__).resolve().parents[1]
JUDGED = REPOSITORY / "benchmarks" / "judged"
REVIEWED = REPOSITORY / "benchmarks" / "reviewed"
QUESTIONS = JUDGED / "questions.jsonl"
ANSWERS = JUDGED / "answers.jsonl"
SYSTEMS = ("reference", "swapped", "bm25", "closed_book")
SPLITS = ("tune", "held_out")
ALL = "all"
"""Both halves together (for `qagen compare` over every question; never for a held-out figure)."""

GIT_PAGES = Path("/usr/share/doc/git-doc")
PY_PAGES = Path("/usr/share/doc/python3.11/html/_sources/library")

# The reviewed factoids a reviewer keeps (benchmarks/reviewed/README.md), one per distinct question:
# git's manual pages (two builds of the same 20 pages), and Python's pages (two sets of other pages);
# twelve of each, as many as the shared model answers and judges in the time a session has.
CHOSEN: dict[str, tuple[tuple[str, str], ...]] = {
    "git": (
        ("gitman_build_reviewed.jsonl", "What is the command used to clean up the bisection state"),
        ("gitman_build_reviewed.jsonl", "How can I retrieve stash entries that were mistakenly"),
        ("gitman_build_reviewed.jsonl", "What is the default notes merge strategy in Git?"),
        ("gitman_build_reviewed.jsonl", "What does the `--score-debug` option do?"),
        ("gitman_build_reviewed.jsonl", "What does `-o` do in the `git grep` command?"),
        ("gitman_build_reviewed.jsonl", "How does the `git reflog` command determine"),
        ("gitman_build_reviewed.jsonl", "What is the purpose of the `set` subcommand"),
        ("gitman_build_reviewed.jsonl", "What is the command used to mark commits as good or bad"),
        ("gitman_build_reviewed.jsonl", 'What is the purpose of the "notes.rewrite.<command>"'),
        ("gitman_build_reviewed.jsonl", "What command is used to create a bundle file"),
        ("gitman_build_reviewed.jsonl", "What command in git-sparse-checkout allows you to disable"),
        ("gitman_build2_reviewed.jsonl", "What does the `list` command do in relation to worktrees?"),
    ),
    "python": (
        ("pydoc_drafts_reviewed.jsonl", "What is the purpose of the `UUID.bytes` attribute?"),
        ("pydoc_drafts_reviewed.jsonl", "What is the default value of the `doublequote` attribute"),
        ("pydoc_drafts_reviewed.jsonl", "What is the name of the module in Python that provides Unix"),
        ("pydoc_drafts_reviewed.jsonl", "What is the purpose of the `heapq` module in Python?"),
        ("pydoc_drafts_reviewed.jsonl", "What is the name of the module providing password input?"),
        ("pydoc_drafts_reviewed.jsonl", "What is the time complexity of the insort function?"),
        ("pydoc_drafts_reviewed.jsonl", "What is the name of the exception class raised when non-blocking"),
        ("pydoc_drafts_reviewed.jsonl", "What is the purpose of the `gzip` module in Python?"),
        ("pyheld_build_reviewed.jsonl", "What type coercion flags are currently supported"),
        ("pyheld_build_reviewed.jsonl", "What is the maximum depth of tree that can be set for BLAKE2s?"),
        ("pyheld_build_reviewed.jsonl", "What does the `S_ISDIR` function return?"),
        ("pyheld_build_reviewed.jsonl", "What is the purpose of the `deepcopy` function in Python?"),
    ),
}

CLOSED_BOOK_PROMPT = (
    "Answer the question from what you know, in one or two sentences. Give the answer itself; do not "
    "say where it can be found.\n\nQuestion: {question}"
)
"""The closed-book reader's prompt: the same model as the baseline's reader, without passages."""


def _digest(*parts: str) -> str:
    return hashlib.sha256("\x00".join(parts).encode("utf-8")).hexdigest()[:16]


def _read_jsonl(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]


def _write_jsonl(path: Path, rows: Iterable[dict[str, Any]]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    text = "".join(json.dumps(row, ensure_ascii=False) + "\n" for row in rows)
    path.write_text(text, encoding="utf-8")


# --------------------------------------------------------------------------- prepare


def chosen_questions() -> list[dict[str, Any]]:
    """The chosen reviewed questions, each once, with its corpus, passage and split.

    The split alternates within each corpus in the order `CHOSEN` lists them, so both halves hold
    both corpora and both builds; it was fixed before any answer was made."""
    rows: list[dict[str, Any]] = []
    for corpus, picks in CHOSEN.items():
        for position, (file, opening) in enumerate(picks):
            found = [
                row
                for row in _read_jsonl(REVIEWED / file)
                if row["question"].startswith(opening) and (row.get("review") or {}).get("keep")
            ]
            if not found:
                raise SystemExit(f"no kept question of {file} opens with {opening!r}")
            row = found[0]
            rows.append(
                {
                    "id": _digest(corpus, row["question"]),
                    "corpus": corpus,
                    "split": SPLITS[position % 2],
                    "question": row["question"],
                    "answer": row["answer"],
                    "source_doc": row["passages"][0]["document"],
                    "passage": row["passages"][0]["text"],
                    "reviewed_in": file,
                    "reviewed_id": row["id"],
                }
            )
    return rows


def _corpus_pages(corpus: str, questions: list[dict[str, Any]]) -> list[Path]:
    """The pages a corpus's baseline searches: every page its reviewed sets were drafted from."""
    if corpus == "git":
        names = {
            "git-stash", "git-worktree", "git-bisect", "git-cherry-pick", "git-tag", "git-reflog", "git-clean",
            "git-blame", "git-describe", "git-archive", "git-bundle", "git-notes", "git-sparse-checkout",
            "git-maintenance", "git-gc", "git-grep", "git-shortlog", "git-switch", "git-restore", "git-range-diff",
        }  # fmt: skip
        return [GIT_PAGES / f"{name}.txt" for name in sorted(names)]
    files = {"pydoc_drafts_reviewed.jsonl", "pyheld_build_reviewed.jsonl"}
    documents = {
        passage["document"] for file in files for row in _read_jsonl(REVIEWED / file) for passage in row["passages"]
    }
    return [PY_PAGES / f"{name}.txt" for name in sorted(documents)]


def prepare(args: argparse.Namespace) -> None:
    work: Path = args.work
    questions = chosen_questions()
    _write_jsonl(QUESTIONS, questions)
    for corpus in CHOSEN:
        of_corpus = [q for q in questions if q["corpus"] == corpus]
        _write_jsonl(work / f"testset_{corpus}.jsonl", of_corpus)
        folder = work / "corpus" / corpus
        folder.mkdir(parents=True, exist_ok=True)
        pages = _corpus_pages(corpus, of_corpus)
        missing = [str(page) for page in pages if not page.is_file()]
        if missing:
            raise SystemExit(f"missing pages (install git-doc and python3.11-doc): {', '.join(missing[:3])}")
        for page in pages:
            shutil.copyfile(page, folder / page.name)
        print(f"{corpus}: {len(of_corpus)} questions, {len(pages)} pages in {folder}")


# --------------------------------------------------------------------------- answer


def closed_book(question: str) -> str:
    """The closed-book reader (`qagen evaluate --rag benchmarks.bench_judge:closed_book`): the model
    answers from what it knows; its server and model come from QAGEN_BENCH_BASE_URL and QAGEN_BENCH_MODEL."""
    from openai import OpenAI

    client = OpenAI(base_url=os.environ["QAGEN_BENCH_BASE_URL"], api_key="EMPTY", timeout=300)
    model = os.environ["QAGEN_BENCH_MODEL"].split(":", 1)[-1]
    reply = client.chat.completions.create(
        model=model,
        messages=[{"role": "user", "content": CLOSED_BOOK_PROMPT.format(question=question)}],
        temperature=0,
        max_tokens=200,
    )
    return (reply.choices[0].message.content or "").strip()


def _qagen(*arguments: str, env: dict[str, str] | None = None) -> None:
    command = [sys.executable, "-m", "qagen", *arguments]
    print("$", " ".join(command[2:]), file=sys.stderr)
    environment = {**os.environ, "PYTHONPATH": str(REPOSITORY), **(env or {})}
    subprocess.run(command, check=True, env=environment, cwd=REPOSITORY)


def answer(args: argparse.Namespace) -> None:
    work: Path = args.work
    for corpus in CHOSEN:
        testset = str(work / f"testset_{corpus}.jsonl")
        _qagen(
            "evaluate", testset, "--out", str(work / "answers" / f"{corpus}_bm25"), "--baseline", "bm25",
            "--corpus", str(work / "corpus" / corpus), "--k", "3", "--chunk-size", "1000", "--reader-model", args.model,
            "--base-url", args.base_url, "--metrics", "retrieval,text", "--concurrency", "1", "-q",
        )  # fmt: skip
        _qagen(
            "evaluate", testset, "--out", str(work / "answers" / f"{corpus}_closed_book"),
            "--rag", "benchmarks.bench_judge:closed_book", "--metrics", "text", "--concurrency", "1", "-q",
            env={"QAGEN_BENCH_BASE_URL": args.base_url, "QAGEN_BENCH_MODEL": args.model},
        )  # fmt: skip


# --------------------------------------------------------------------------- collect


def _swapped(questions: list[dict[str, Any]]) -> dict[str, str]:
    """Each question's swapped answer: the reference of the question after it in its corpus (a
    derangement: never its own), so the wrong answer is of the same subject matter."""
    swapped: dict[str, str] = {}
    for corpus in CHOSEN:
        of_corpus = [q for q in questions if q["corpus"] == corpus]
        for position, question in enumerate(of_corpus):
            swapped[question["id"]] = of_corpus[(position + 1) % len(of_corpus)]["answer"]
    return swapped


def _system_answers(folder: Path) -> dict[str, str | None]:
    """Each question's answer as the evaluation recorded it (`answers.jsonl`, as it arrived), by question id."""
    path = folder / "answers.jsonl"
    return {row["item_id"]: row["output"].get("answer") for row in _read_jsonl(path)} if path.is_file() else {}


def collect(args: argparse.Namespace) -> None:
    """The answers to label: every question's four answers, labels empty (kept when already given)."""
    work: Path = args.work
    questions = _read_jsonl(QUESTIONS)
    swapped = _swapped(questions)
    made = {
        (corpus, system): _system_answers(work / "answers" / f"{corpus}_{system}")
        for corpus in CHOSEN
        for system in ("bm25", "closed_book")
    }
    earlier = {row["id"]: row for row in _read_jsonl(ANSWERS)} if ANSWERS.exists() else {}
    rows: list[dict[str, Any]] = []
    for question in questions:
        texts = {
            "reference": question["answer"],
            "swapped": swapped[question["id"]],
            "bm25": made[question["corpus"], "bm25"].get(question["id"]),
            "closed_book": made[question["corpus"], "closed_book"].get(question["id"]),
        }
        for system in SYSTEMS:
            text = texts[system]
            if text is None:
                print(
                    f"{question['id']} {system}: no answer (not made yet, or the system failed): left out",
                    file=sys.stderr,
                )
                continue
            key = _digest(question["id"], system)
            before = earlier.get(key, {})
            rows.append(
                {
                    "id": key,
                    "question_id": question["id"],
                    "corpus": question["corpus"],
                    "split": question["split"],
                    "system": system,
                    "answer": text,
                    "correct": before.get("correct"),
                    "label_note": before.get("label_note"),
                }
            )
    _write_jsonl(ANSWERS, rows)
    print(f"{len(rows)} answers in {ANSWERS}")


# --------------------------------------------------------------------------- judge


def _labelled(systems: Sequence[str] = SYSTEMS) -> list[dict[str, Any]]:
    """The labelled answers of `systems`; an unlabelled one stops everything (no judge reads it before its label)."""
    rows = [row for row in _read_jsonl(ANSWERS) if row["system"] in systems]
    unlabelled = [row["id"] for row in rows if row.get("correct") is None]
    if unlabelled:
        raise SystemExit(f"{len(unlabelled)} answers have no label yet (e.g. {unlabelled[0]}): label them first")
    return rows


def _eval_dir(work: Path, variant: str, split: str, system: str) -> Path:
    return work / "judged" / variant / split / system


def judge(args: argparse.Namespace) -> None:
    """Each variant over each split's answers of each system: one `qagen evaluate --answers` each."""
    work: Path = args.work
    questions = {row["id"]: row for row in _read_jsonl(QUESTIONS)}
    answers = _labelled(args.systems)
    for split in args.splits:
        testset = work / f"testset_{split}.jsonl"
        _write_jsonl(testset, [q for q in questions.values() if split in (q["split"], ALL)])
        for system in args.systems:
            rows = [row for row in answers if split in (row["split"], ALL) and row["system"] == system]
            file = work / "answers_files" / f"{split}_{system}.jsonl"
            _write_jsonl(
                file,
                [{"id": r["question_id"], "question": questions[r["question_id"]]["question"], "answer": r["answer"]}
                 for r in rows],
            )  # fmt: skip
            for variant in args.variants:
                if split == ALL:
                    _seed_from_splits(work, variant, system)
                _qagen(
                    "evaluate", str(testset), "--answers", str(file), "--out",
                    str(_eval_dir(work, variant, split, system)), "--reader-model", args.model,
                    "--base-url", args.base_url, "--metrics", f"{variant},text", "--concurrency", "1", "-q",
                )  # fmt: skip


def _seed_from_splits(work: Path, variant: str, system: str) -> None:
    """Both halves in one evaluation (what `qagen compare` pairs): its verdict log starts with the halves'
    verdicts, which the evaluation finds by their keys (the answer, reference, judge and prompt), so
    nothing is judged twice."""
    folder = _eval_dir(work, variant, ALL, system)
    if (folder / "judgements.jsonl").exists():
        return
    # An evaluation directory first (no judge: nothing asked), then its verdict log.
    testset, answers = work / f"testset_{ALL}.jsonl", work / "answers_files" / f"{ALL}_{system}.jsonl"
    _qagen("evaluate", str(testset), "--answers", str(answers), "--out", str(folder), "--metrics", "text", "-q")
    lines = [
        line
        for split in SPLITS
        if (log := _eval_dir(work, variant, split, system) / "judgements.jsonl").is_file()
        for line in log.read_text(encoding="utf-8").splitlines(keepends=True)
    ]
    (folder / "judgements.jsonl").write_text("".join(lines), encoding="utf-8")


# --------------------------------------------------------------------------- report


def auc(values: Sequence[float], labels: Sequence[bool]) -> float | None:
    """The probability that a right answer scores above a wrong one (ties count half): Mann-Whitney's U
    over the number of right-wrong pairs; None without both kinds."""
    right = [v for v, label in zip(values, labels, strict=True) if label]
    wrong = [v for v, label in zip(values, labels, strict=True) if not label]
    if not right or not wrong:
        return None
    wins = sum(1.0 if r > w else 0.5 if r == w else 0.0 for r in right for w in wrong)
    return wins / (len(right) * len(wrong))


class Scored(NamedTuple):
    """One labelled answer and what one evaluation made of it."""

    answer: dict[str, Any]
    value: float | None
    detail: dict[str, Any]
    calls: int
    prompt_tokens: int


def scored(work: Path, variant: str, split: str) -> list[Scored]:
    """The split's labelled answers with the variant's value, detail, calls and prompt tokens."""
    found: list[Scored] = []
    answers = [row for row in _labelled() if split in (row["split"], ALL)]
    for system in SYSTEMS:
        folder = _eval_dir(work, variant, split, system)
        if not (folder / "results.jsonl").is_file():
            print(f"  ({variant} has not judged {system} on {split}: left out)")
            continue
        results = {row["id"]: row for row in _read_jsonl(folder / "results.jsonl")}
        usage: dict[str, tuple[int, int]] = {}
        for record in _read_jsonl(folder / "judgements.jsonl"):
            verdict = record["verdict"]
            usage[record["item_id"]] = (len(verdict.get("raw") or []), verdict["usage"]["input_tokens"])
        for answer in answers:
            if answer["system"] != system:
                continue
            row = results.get(answer["question_id"])
            if row is None or answer["question_id"] not in usage:
                print(f"  ({variant} has no verdict on {system}'s answer to {answer['question_id']}: left out)")
                continue
            calls, tokens = usage[answer["question_id"]]
            found.append(Scored(answer, row.get(variant), row.get(f"{variant}_detail") or {}, calls, tokens))
    return found


class Reading(NamedTuple):
    """One way of reading a variant's verdicts: a per-answer value and the cut its decision is made at."""

    name: str
    value: Any  # (Scored) -> float | None
    cut: float


def readings(variant: str) -> list[Reading]:
    """The product's own reading of the variant, and the alternatives measured beside it."""
    from qagen.evaluate.judges.registry import LLM_METRICS

    cut = LLM_METRICS.get(variant).correct_at
    own = Reading(f"{variant} (the product's value, correct at >= {cut:g})", lambda s: s.value, cut)
    if variant == "correctness":
        return [
            own,
            Reading("correctness, written score, correct at >= 4 (issue 43's cut)", lambda s: s.detail.get("score"), 4),
            Reading("correctness, written score, correct at >= 3", lambda s: s.detail.get("score"), 3),
        ]
    if variant == "answer_correct":
        return [
            own,
            Reading("answer_correct, P(yes) without the key-term cap", lambda s: s.detail.get("p_yes"), cut),
            Reading(
                "answer_correct, the written word", lambda s: {"yes": 1.0, "no": 0.0}.get(s.detail.get("written")), cut
            ),
            Reading("token F1 alone (correct at >= 0.3)", lambda s: s.detail.get("token_f1"), 0.3),
            Reading("key-term containment alone (correct at >= 0.5)", lambda s: s.detail.get("containment"), 0.5),
        ]
    return [own]


def _figures(name: str, rows: list[Scored], value: Any, cut: float) -> str:
    pairs = [(value(row), bool(row.answer["correct"])) for row in rows]
    judged = [(v, label) for v, label in pairs if v is not None]
    area = auc([v for v, _ in judged], [label for _, label in judged])
    agree = sum((v >= cut) == label for v, label in judged)
    swapped = [value(row) for row in rows if row.answer["system"] == "swapped"]
    passed = sum(v is not None and v >= cut for v in swapped)
    calls = sum(row.calls for row in rows) / len(rows)
    tokens = sum(row.prompt_tokens for row in rows) / len(rows)
    area_text = "  -  " if area is None else f"{area:.3f}"
    return (
        f"  {name}\n    AUC {area_text}  decisions agree {agree}/{len(judged)} = {agree / max(1, len(judged)):.2f}"
        f"  swapped judged correct {passed}/{len(swapped)}  unread {len(pairs) - len(judged)}"
        f"  calls/answer {calls:.2f}  prompt tokens/answer {tokens:.0f}"
    )


VERDICTS = JUDGED / "verdicts.jsonl"
"""Every verdict the figures are made of (`report --save`), so they can be read again without the model."""


def save(work: Path, variants: Sequence[str]) -> None:
    """The verdicts of every variant on both halves, one line per answer and variant."""
    rows = [
        {
            "answer_id": row.answer["id"],
            "split": split,
            "variant": variant,
            "value": row.value,
            "detail": row.detail,
            "calls": row.calls,
            "prompt_tokens": row.prompt_tokens,
        }
        for variant in variants
        for split in SPLITS
        for row in scored(work, variant, split)
    ]
    _write_jsonl(VERDICTS, rows)
    print(f"{len(rows)} verdicts in {VERDICTS}")


def report(args: argparse.Namespace) -> None:
    if args.save:
        save(args.work, args.variants)
    answers = _labelled()
    for split in args.splits:
        of_split = [row for row in answers if split in (row["split"], ALL)]
        counts = {system: sum(row["correct"] for row in of_split if row["system"] == system) for system in SYSTEMS}
        per = {system: sum(row["system"] == system for row in of_split) for system in SYSTEMS}
        print(f"{split}: {len(of_split)} labelled answers; right by system: "
              + ", ".join(f"{system} {counts[system]}/{per[system]}" for system in SYSTEMS))  # fmt: skip
        for variant in args.variants:
            rows = scored(args.work, variant, split)
            if not rows:
                print(f"  {variant}: not judged on {split} yet")
                continue
            for reading in readings(variant):
                print(_figures(reading.name, rows, reading.value, reading.cut))


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    commands = parser.add_subparsers(dest="command", required=True)
    for name, function in (
        ("prepare", prepare), ("answer", answer), ("collect", collect), ("judge", judge), ("report", report),
    ):  # fmt: skip
        command = commands.add_parser(name)
        command.add_argument("--work", type=Path, required=True, help="where test sets, corpora and evaluations go")
        if name in ("answer", "judge"):
            command.add_argument("--base-url", required=True)
            command.add_argument("--model", required=True)
        if name in ("judge", "report"):
            command.add_argument("--variants", type=lambda text: text.split(","), default=["answer_correct"])
            command.add_argument(
                "--splits", type=lambda text: text.split(","), default=["tune"], help="tune, held_out or both"
            )
        if name == "judge":
            command.add_argument("--systems", type=lambda text: text.split(","), default=list(SYSTEMS))
        if name == "report":
            command.add_argument("--save", action="store_true", help=f"also write every verdict to {VERDICTS.name}")
        command.set_defaults(run=function)
    args = parser.parse_args(argv)
    args.run(args)


if __name__ == "__main__":
    main()
