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
from typing import Any

REPOSITORY = Path(__file__).resolve().parents[1]
JUDGED = REPOSITORY / "benchmarks" / "judged"
REVIEWED = REPOSITORY / "benchmarks" / "reviewed"
QUESTIONS = JUDGED / "questions.jsonl"
ANSWERS = JUDGED / "answers.jsonl"
SYSTEMS = ("reference", "swapped", "bm25", "closed_book")
SPLITS = ("tune", "held_out")

GIT_PAGES = Path("/usr/share/doc/git-doc")
PY_PAGES = Path("/usr/share/doc/python3.11/html/_sources/library")

# The reviewed factoids a reviewer keeps (benchmarks/reviewed/README.md), one per distinct question:
# git's manual pages (two builds of the same 20 pages), and Python's pages (two sets of other pages).
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
        ("gitman_build2_reviewed.jsonl", "What does the `--candidates` option do"),
        ("gitman_build2_reviewed.jsonl", "What is the purpose of `--aggressive` in `git gc`?"),
        ("gitman_build2_reviewed.jsonl", "What is the default bundle version used by Git?"),
        ("gitman_build2_reviewed.jsonl", "What does the `-e` option do in the `git-clean` command?"),
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
        ("pyheld_build_reviewed.jsonl", "What is the name of the module that provides support for rational"),
        ("pyheld_build_reviewed.jsonl", "What is the default terminal size returned when `fallback`"),
        ("pyheld_build_reviewed.jsonl", "What is the maximum digest size of BLAKE2b?"),
        ("pydoc_drafts_reviewed.jsonl", "How can I convert a byte string to Base16 encoding in Python?"),
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
            "--corpus", str(work / "corpus" / corpus), "--k", "5", "--reader-model", args.model,
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
    return {row["id"]: row.get("generated_answer") for row in _read_jsonl(folder / "results.jsonl")}


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
                print(f"{question['id']} {system}: no answer (the system failed): left out", file=sys.stderr)
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


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    commands = parser.add_subparsers(dest="command", required=True)
    for name, function in (("prepare", prepare), ("answer", answer), ("collect", collect)):
        command = commands.add_parser(name)
        command.add_argument("--work", type=Path, required=True, help="where test sets, corpora and evaluations go")
        if name == "answer":
            command.add_argument("--base-url", required=True)
            command.add_argument("--model", required=True)
        command.set_defaults(run=function)
    args = parser.parse_args(argv)
    args.run(args)


if __name__ == "__main__":
    main()
