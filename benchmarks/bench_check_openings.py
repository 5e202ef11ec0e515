"""Whether a check can share its draft's prefix and still judge: the `supported` check's P(yes) asked of
reviewed factoid drafts in three openings, and how well each separates the drafts a reviewer keeps.

Issue 29 wants every call about a draft to begin with the same text, so a server's prefix cache reads it
once. The drafting prompt opens with its instructions and a check with its passage, so they share
nothing; the openings measured here make them share:

- `plain`: the check as a build sends it (`critique_supported.txt`: the passage, the question and
  answer, the yes/no question).
- `after_draft`: the drafting prompt's text through its passage's data block, a line saying a different
  task follows, then the check without its own passage block. It shares the drafting call's whole prompt
  up to the passage's end, and every check shares the instructions with every drafting call.
- `follow_up`: the drafting conversation itself (the drafting prompt, the draft as the assistant's reply),
  then the yes/no question as a new turn: a prefix cache holds everything before the question.

    # Ask (resumable: answers are kept in OUT/answers.jsonl by draft and opening):
    python benchmarks/bench_check_openings.py ask --base-url http://127.0.0.1:8766/v1 --out OUT \\
        --reviewed benchmarks/reviewed/gitman_build_reviewed.jsonl --openings plain,after_draft,follow_up
    # Report (no model): per opening, the P(yes) AUC against the labels and each cut's rejections, on the
    # drafts asked in every opening named:
    python benchmarks/bench_check_openings.py report --out OUT --openings plain,after_draft

The drafts are the product's records and the requests its own (`DraftTask.request`, the `supported`
task's `request`), so what is measured is what a build would send. Session 11 measured it with
Qwen2.5-Coder-1.5B on llama.cpp, 30 drafts of git's manual pages (gitman_build and gitman_build2, 11 good):
plain AUC 0.82 (P(yes) < 0.7 rejects 13, all bad; 17 kept, 0.65 good); `after_draft` 0.78 (P(yes) about 0.1
lower; its best cut, < 0.6, rejects 16 at precision 0.81); `follow_up` 0.49 (P(yes) 0.65-0.75 for every
draft: a model judging its own reply agrees with it).
"""

from __future__ import annotations

import argparse
import json
import math
import sys
import time
import urllib.request
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from bench_signals import read_reviewed, task_for

from qagen.generation.draft import DraftTask
from qagen.generation.passage_frame import FRAME_CLOSING
from qagen.generation.replies import FACTOID_LABEL
from qagen.question_types.factoid import FACTOID

OPENINGS = ("plain", "after_draft", "follow_up")
TASK_CHANGE = "\n\nA different task about the same context follows. Do only what it asks.\n\n"
FOLLOW_UP = (
    "Now check that draft against the context. Is its answer correct, and fully supported by the context? "
    "Answer with one word, Yes or No."
)
CUTS = (0.5, 0.55, 0.6, 0.65, 0.7, 0.75)


def _messages(opening: str, drafted: Any, model: str) -> list[dict[str, str]]:
    """The chat messages of the `supported` check of one draft in one opening."""
    check = task_for("supported", "factoid", model)
    assert check is not None
    checked = check.request(drafted)[-1].content
    drafting = DraftTask(model, None, FACTOID).request(drafted.passages)[-1].content
    if opening == "plain":
        return [{"role": "user", "content": checked}]
    if opening == "after_draft":
        closing = FRAME_CLOSING.strip()
        through_passage = drafting[: drafting.rindex(closing) + len(closing)]
        own = checked.split(FRAME_CLOSING, 1)[1]  # the check without its opening block of the passage
        return [{"role": "user", "content": through_passage + TASK_CHANGE + own}]
    draft = drafted.draft
    reply = f"{FACTOID_LABEL}: {draft.question}\nAnswer: {draft.answer}\nEvidence: {draft.evidence or ''}"
    return [
        {"role": "user", "content": drafting},
        {"role": "assistant", "content": reply},
        {"role": "user", "content": FOLLOW_UP},
    ]


def _p_yes(base_url: str, messages: list[dict[str, str]]) -> float | None:
    """P(yes) over the yes/no tokens at the reply's first position (None: neither among the top 10)."""
    body = {
        "model": "qwen2.5-1.5b", "messages": messages, "temperature": 0, "max_tokens": 2,
        "logprobs": True, "top_logprobs": 10,
    }  # fmt: skip
    request = urllib.request.Request(
        f"{base_url.rstrip('/')}/chat/completions",
        data=json.dumps(body).encode("utf-8"),
        headers={"Content-Type": "application/json"},
    )
    with urllib.request.urlopen(request, timeout=900) as response:
        first = json.load(response)["choices"][0]["logprobs"]["content"][0]
    mass = {"yes": 0.0, "no": 0.0}
    for token in first["top_logprobs"]:
        word = token["token"].strip().lower()
        if word in mass:
            mass[word] += math.exp(token["logprob"])
    total = mass["yes"] + mass["no"]
    return mass["yes"] / total if total else None


def ask(args: argparse.Namespace) -> None:
    if not args.base_url.startswith(("http://127.0.0.1", "http://localhost")):
        sys.exit("Give --base-url of a server on this machine (127.0.0.1).")
    store = args.out / "answers.jsonl"
    args.out.mkdir(parents=True, exist_ok=True)
    done = {(row["id"], row["opening"]) for row in _rows(store)}
    openings = [name for name in args.openings.split(",") if name]
    unknown = set(openings) - set(OPENINGS)
    if unknown:
        sys.exit(f"Unknown opening {sorted(unknown)}; the openings are {', '.join(OPENINGS)}.")
    with store.open("a", encoding="utf-8") as out:
        for path in args.reviewed:
            for reviewed in read_reviewed(path):
                drafted = reviewed.drafted
                if drafted.passages.question_type != "factoid":
                    continue
                for opening in openings:
                    if (drafted.draft.id, opening) in done:
                        continue
                    started = time.monotonic()
                    p_yes = _p_yes(args.base_url, _messages(opening, drafted, args.model))
                    row = {"id": drafted.draft.id, "set": reviewed.set_name, "opening": opening,
                           "keep": reviewed.keep, "p_yes": p_yes}  # fmt: skip
                    out.write(json.dumps(row) + "\n")
                    out.flush()
                    print(
                        f"{drafted.draft.id} {opening}: {p_yes} ({time.monotonic() - started:.0f} s)", file=sys.stderr
                    )


def _rows(store: Path) -> list[dict[str, Any]]:
    if not store.exists():
        return []
    return [json.loads(line) for line in store.read_text(encoding="utf-8").splitlines() if line.strip()]


def auc(scored: list[tuple[float, bool]]) -> float | None:
    """The chance that a draft the reviewer keeps scores above one they do not (ties count half)."""
    good = [p for p, keep in scored if keep]
    bad = [p for p, keep in scored if not keep]
    if not good or not bad:
        return None
    wins = sum((g > b) + 0.5 * (g == b) for g in good for b in bad)
    return wins / (len(good) * len(bad))


def report(args: argparse.Namespace) -> None:
    rows = _rows(args.out / "answers.jsonl")
    by_draft: dict[str, dict[str, dict[str, Any]]] = {}
    for row in rows:
        by_draft.setdefault(row["id"], {})[row["opening"]] = row
    chosen = [name for name in args.openings.split(",") if name]
    openings = [name for name in chosen if any(name in asked for asked in by_draft.values())]
    # Only drafts asked in every opening: the comparison is on one sample.
    common = [asked for asked in by_draft.values() if all(name in asked for name in openings)]
    print(f"{len(common)} drafts asked in every opening ({', '.join(openings)}), the reviewer keeps "
          f"{sum(bool(asked[openings[0]]['keep']) for asked in common)}")  # fmt: skip
    for name in openings:
        # One label a draft (a draft in two reviewed sets may carry two reviewers' labels): the first opening's.
        scored = [(asked[name]["p_yes"] or 0.0, bool(asked[openings[0]]["keep"])) for asked in common]
        found = auc(scored)
        print(f"{name:<12} AUC {'-' if found is None else f'{found:.2f}'}")
        for cut in CUTS:
            rejected = [keep for p, keep in scored if p < cut]
            kept = [keep for p, keep in scored if p >= cut]
            precision = f"{rejected.count(False) / len(rejected):.2f}" if rejected else "-"
            share = f"{sum(kept) / len(kept):.2f}" if kept else "-"
            print(f"   P(yes) < {cut:<4}: rejects {len(rejected):>3} (precision {precision:>4}), "
                  f"kept {len(kept):>3} (share good {share:>4})")  # fmt: skip


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("action", choices=("ask", "report"))
    parser.add_argument("--out", type=Path, required=True, help="where the answers are kept")
    parser.add_argument("--reviewed", type=Path, action="append", default=[], help="a reviewed set (repeatable)")
    parser.add_argument("--base-url", default="", help="the model's OpenAI-compatible server on 127.0.0.1")
    parser.add_argument("--model", default="openai:qwen2.5-1.5b", help="the critic model's spec")
    parser.add_argument("--openings", default=",".join(OPENINGS), help="openings to ask, comma-separated")
    args = parser.parse_args()
    if args.action == "ask":
        ask(args)
    else:
        report(args)


if __name__ == "__main__":
    main()
