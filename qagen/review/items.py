"""What a reviewer sees of one item: a draft with its chunk, or a system's answer to a test question.

The verdicts (the critics' scores and rationales, the judge's) are part of an item but are sent to
the page only once the reviewer has answered it, so that they cannot anchor the reviewer:
`ReviewItem.shown(reveal=False)` leaves them out.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any, Literal

from pydantic import Field

from qagen.config import BuildConfig
from qagen.errors import QagenError
from qagen.evaluate.judges.registry import LLM_METRICS
from qagen.generation.checks.evidence import place_quote
from qagen.generation.vetting import vet
from qagen.records import Critique, Draft, Record
from qagen.review.eval_answers import judge_says_correct
from qagen.review.run_drafts import read_run_drafts
from qagen.runs.rundir import RunDir

ItemKind = Literal["draft", "answer"]
SpanMatch = Literal["evidence", "evidence_missing", "exact", "loose", "none"]


class Span(Record):
    """Characters `start` to `end` of a text: where the answer occurs in it."""

    start: int
    end: int


class Verdict(Record):
    """One critic's (or judge's) reading of the item, shown after the reviewer has answered."""

    name: str = Field(description="The criterion (groundedness...) or the judge's metric (correctness, correct).")
    score: int | float | None = Field(
        description="Critics: what was held to the cut (P(yes), an expected rating, an agreement), or the written "
        "1-5 verdict when that decided; graders: 1.0 / 0.0; None when there is none."
    )
    rationale: str | None = Field(description="The critic's or judge's explanation.")
    failure: str = Field(description="Why there is no score (`not_asked`, a parse failure...); empty beside one.")
    passes: bool | None = Field(description="Whether it passed (as the run decided it); None without a score.")
    threshold: str = Field(description="What passing means, in words (e.g. `>= 4`).")


class Context(Record):
    """A passage the RAG system retrieved, with where the reference answer occurs in it."""

    text: str
    source: str | None
    spans: list[Span]


class ReviewItem(Record):
    """One item to label: a draft (kind `draft`) or a system's answer (kind `answer`)."""

    kind: ItemKind
    id: str = Field(description="The draft's id, or the evaluated question's id: the label's `item_id`.")
    source: str | None = Field(description="The document the chunk or the question came from.")
    question: str
    answer: str | None = Field(description="The drafted answer; for `answer` items the system's answer.")
    chunk: str | None = Field(default=None, description="The chunk the draft was made from (`draft` items).")
    question_type: str = Field(default="factoid", description="The draft's question type (`qagen.question_types`).")
    passages: list[Context] = Field(
        default_factory=list,
        description="The other passages of a draft made from several (a multi-hop question's second chunk).",
    )
    spans: list[Span] = Field(
        default_factory=list, description="Where the draft's quoted evidence, else its answer, is in the chunk."
    )
    match: SpanMatch = Field(
        default="none",
        description="What the spans are: the quoted evidence sentence as the build placed it (`evidence`); else the "
        "answer, found exactly, loosely or not at all (`evidence_missing`: a quote the chunk does not hold).",
    )
    reference: str | None = Field(default=None, description="The reference answer (`answer` items).")
    answer_error: str = Field(default="", description="Why the system gave no answer (`answer` items).")
    contexts: list[Context] = Field(default_factory=list, description="What the system retrieved, best first.")
    verdicts: list[Verdict] = Field(description="The critics' or the judge's verdicts (hidden until answered).")
    prompt_hashes: dict[str, str] = Field(description="The hash of every prompt behind the item and its verdicts.")

    def shown(self, *, reveal: bool) -> dict[str, Any]:
        """The item as the page receives it: without the verdicts until the reviewer has answered."""
        return self.model_dump(mode="json", exclude=None if reveal else {"verdicts"})


def answer_spans(text: str, answer: str | None) -> tuple[list[Span], SpanMatch]:
    """Where `answer` occurs in `text`: exactly; else ignoring case and runs of white space; else nowhere."""
    needle = (answer or "").strip()
    if not needle:
        return [], "none"
    exact = _occurrences(text, needle)
    if exact:
        return [Span(start=start, end=start + len(needle)) for start in exact], "exact"
    folded_text, origin = _folded(text)
    folded_needle, _ = _folded(" ".join(needle.split()))
    loose = [
        Span(start=origin[start], end=origin[start + len(folded_needle) - 1] + 1)
        for start in _occurrences(folded_text, folded_needle)
    ]
    return loose, "loose" if loose else "none"


def _occurrences(text: str, needle: str) -> list[int]:
    """Start of every non-overlapping occurrence of `needle` in `text`."""
    starts: list[int] = []
    start = text.find(needle)
    while start >= 0:
        starts.append(start)
        start = text.find(needle, start + len(needle))
    return starts


def _folded(text: str) -> tuple[str, list[int]]:
    """`text` case-folded with every run of white space made one space, and for each of its
    characters the index of the character of `text` it came from (case folding can lengthen one)."""
    folded: list[str] = []
    origin: list[int] = []
    in_space = False
    for index, char in enumerate(text):
        if char.isspace():
            if not in_space:
                folded.append(" ")
                origin.append(index)
            in_space = True
            continue
        in_space = False
        for piece in char.casefold():
            folded.append(piece)
            origin.append(index)
    return "".join(folded), origin


# --- a build's drafts ---------------------------------------------------------------------------
def draft_items(run_dir: Path, ids: Sequence[str]) -> list[ReviewItem]:
    """The drafts `ids` of the run in `run_dir`, in that order, each with its chunk and critiques."""
    run = RunDir(run_dir)
    config = run.stored_config()
    drafts = run.drafts.load()
    missing = [draft_id for draft_id in ids if draft_id not in drafts]
    if missing:
        raise QagenError(
            f"{run_dir} has no draft {missing[0]} (and {len(missing) - 1} more of the review sample); "
            "the sample was drawn from another run: delete review_sample.json there to draw it again."
        )
    wanted = set(ids)
    chunk_ids = {drafts[draft_id].chunk_id for draft_id in ids}
    chunks = {chunk.id: chunk for chunk in run.iter_chunks() if chunk.id in chunk_ids}
    critiques: dict[tuple[str, str], Critique] = {}
    for critique in run.critiques.iter_records():
        if critique.draft_id in wanted:
            seen = critiques.get((critique.draft_id, critique.criterion))
            # A critique with a score wins over a failed one of the same criterion.
            if seen is None or not seen.ok or critique.ok:
                critiques[(critique.draft_id, critique.criterion)] = critique
    rows = read_run_drafts(run_dir)
    items: list[ReviewItem] = []
    for draft_id in ids:
        draft = drafts[draft_id]
        row = rows.get(draft_id)
        chunk = chunks.get(draft.chunk_id)
        if chunk is None:
            raise QagenError(f"{run_dir} has no chunk {draft.chunk_id} for draft {draft_id}; its chunks.jsonl changed.")
        spans, match = _draft_spans(draft, chunk.text)
        # The critics of the draft's question type only: another type's critic never rates it.
        vetting = {task.criterion for task in rows.tasks.types[row.question_type].critics} if row else None
        verdicts = [
            _critic_verdict(spec.name, critiques.get((draft_id, spec.name)), config)
            for spec in config.critic_specs()
            if vetting is None or spec.name in vetting
        ]
        hashes = {"generation": draft.prompt_hash}
        hashes.update({name: found.prompt_hash for (d, name), found in critiques.items() if d == draft_id})
        items.append(
            ReviewItem(
                kind="draft",
                id=draft_id,
                source=chunk.source,
                question=draft.question or "",
                answer=draft.answer,
                chunk=chunk.text,
                question_type=row.question_type if row is not None else "factoid",
                passages=[
                    Context(text=text, source=source, spans=[])
                    for text, source in zip(row.contexts[1:], row.source_docs[1:], strict=True)
                ]
                if row is not None
                else [],
                spans=spans,
                match=match,
                verdicts=verdicts,
                prompt_hashes=hashes,
            )
        )
    return items


def _draft_spans(draft: Draft, chunk: str) -> tuple[list[Span], SpanMatch]:
    """The quoted evidence where the build places it (`checks.evidence`); else the answer's occurrences."""
    if draft.evidence:
        placed = place_quote(draft.evidence, chunk)
        if placed.start is not None and placed.end is not None:
            return [Span(start=placed.start, end=placed.end)], "evidence"
        spans, _ = answer_spans(chunk, draft.answer)
        return spans, "evidence_missing"
    return answer_spans(chunk, draft.answer)


_MEASURED_WORDS = {"p_yes": "P(yes)", "expected_rating": "expected rating", "agreement": "agreement"}


def _critic_verdict(criterion: str, critique: Critique | None, config: BuildConfig) -> Verdict:
    """A check's verdict as the build decided it (`vetting.vet`): what was held to the cut, and the cut."""
    if critique is None:
        return Verdict(name=criterion, score=None, rationale=None, failure="not_asked", passes=None, threshold="")
    decided = vet(config, critique)
    if decided is None:
        return Verdict(
            name=criterion, score=None, rationale=critique.rationale, failure=critique.reason, passes=None, threshold=""
        )
    relation = "<" if decided.kind == "lone_reader" else ">="
    if decided.measurement is None:  # the written word decided: a yes (5) passes, a no (1) does not
        score: float | int | None = decided.written
        threshold = "a written yes"
    else:
        score = decided.measurement
        threshold = f"{_MEASURED_WORDS.get(decided.measured_as, 'rating')} {relation} {decided.cut:g}"
    return Verdict(
        name=criterion,
        score=score,
        rationale=critique.rationale,
        failure=critique.reason,
        passes=decided.passed,
        threshold=threshold,
    )


# --- an evaluation's answers --------------------------------------------------------------------
def answer_items(eval_dir: Path, ids: Sequence[str]) -> list[ReviewItem]:
    """The evaluated questions `ids` of `eval_dir/results.jsonl`, in that order, with the judge's verdicts."""
    rows = {str(row["id"]): row for row in _results(eval_dir)}
    missing = [item_id for item_id in ids if item_id not in rows]
    if missing:
        raise QagenError(
            f"{eval_dir / 'results.jsonl'} has no question {missing[0]} (and {len(missing) - 1} more of the "
            "review sample); delete review_sample.json there to draw the sample again."
        )
    hashes = _judge_prompt_hashes(eval_dir)
    items: list[ReviewItem] = []
    for item_id in ids:
        row = rows[item_id]
        reference = str(row.get("true_answer") or "")
        texts = list(row.get("retrieved_docs") or [])
        sources = list(row.get("retrieved_sources") or []) + [None] * len(texts)
        contexts = [
            Context(text=text, source=source, spans=answer_spans(text, reference)[0])
            for text, source in zip(texts, sources, strict=False)  # padded: a system may report no sources
        ]
        items.append(
            ReviewItem(
                kind="answer",
                id=item_id,
                source=row.get("source_doc"),
                question=str(row["question"]),
                answer=row.get("generated_answer"),
                reference=reference,
                answer_error=str(row.get("answer_error") or ""),
                contexts=contexts,
                verdicts=_judge_verdicts(row),
                prompt_hashes=hashes,
            )
        )
    return items


def _results(eval_dir: Path) -> list[dict[str, Any]]:
    path = eval_dir / "results.jsonl"
    try:
        with path.open(encoding="utf-8") as handle:
            return [json.loads(line) for line in handle if line.strip()]
    except (OSError, ValueError) as exc:
        raise QagenError(f"Cannot read {path} ({exc}); run the evaluation again to write it.") from exc


def _judge_verdicts(row: dict[str, Any]) -> list[Verdict]:
    """The answer_correct judge's value and its evidence, the correctness judge's 1-5 score and feedback, and
    the boolean `correct` grader, where asked."""
    verdicts: list[Verdict] = []
    if "answer_correct" in row:
        value = row["answer_correct"]
        detail = row.get("answer_correct_detail") or {}
        found = detail.get("key_terms_found") if isinstance(detail, dict) else None
        terms = detail.get("key_terms") if isinstance(detail, dict) else None
        verdicts.append(
            Verdict(
                name="answer_correct",
                score=value,
                rationale=None if terms is None else f"key terms found: {len(found or [])} of {len(terms)}",
                failure=str(row.get("answer_correct_reason") or ""),
                passes=None if value is None else judge_says_correct("answer_correct", value),
                threshold=f">= {LLM_METRICS.get('answer_correct').correct_at:g}",
            )
        )
    if "correctness" in row:
        score = row["correctness"]
        verdicts.append(
            Verdict(
                name="correctness",
                score=score,
                rationale=row.get("correctness_feedback"),
                failure=str(row.get("correctness_reason") or ""),
                passes=None if score is None else judge_says_correct("correctness", score),
                threshold="(score - 1) / 4 >= 0.5",
            )
        )
    if "correct" in row:
        value = row["correct"]
        detail = row.get("correct_detail") or {}
        verdicts.append(
            Verdict(
                name="correct",
                score=value,
                rationale=detail.get("explanation") if isinstance(detail, dict) else None,
                failure=str(row.get("correct_reason") or ""),
                passes=None if value is None else judge_says_correct("correct", value),
                threshold=">= 0.5",
            )
        )
    return verdicts


def _judge_prompt_hashes(eval_dir: Path) -> dict[str, str]:
    """Each prompt of the answer_correct and correctness judges and the `correct` grader by name, from
    `summary.json`, and the answer-judging prompt once more as `judge` (the labels' schema names it so):
    answer_correct's when it was asked, else the correctness judge's."""
    try:
        judges = json.loads((eval_dir / "summary.json").read_text(encoding="utf-8")).get("judges", {})
    except (OSError, ValueError):
        return {}  # an evaluation still running has no summary yet: the labels then carry no hash
    hashes: dict[str, str] = {}
    for metric in ("answer_correct", "correctness", "correct"):
        hashes.update({str(name): str(value) for name, value in judges.get(metric, {}).get("prompts", {}).items()})
    for judge_prompt in ("judge_correctness", "judge_answer_correct"):  # the default judge's last: it wins
        if judge_prompt in hashes:
            hashes["judge"] = hashes[judge_prompt]
    return hashes
