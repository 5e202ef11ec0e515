"""Run a RAG system over a test set, judge its answers, and write results and a summary.

Resumable like a build: every answer and every judge verdict is appended to the evaluation
directory as it arrives (`answers.jsonl`, `judgements.jsonl`), keyed by content hashes, so
re-running the same command pays for no call twice. `results.jsonl` and `summary.json` are
assembled from those records at the end.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import sys
from pathlib import Path
from typing import Any, Protocol

from pydantic import BaseModel, ConfigDict
from tqdm import tqdm

from qagen.concurrency import run_all
from qagen.evaluate.records import EvalItem, JudgeVerdict, RagOutput
from qagen.evaluate.scoring import DETERMINISTIC_GROUPS, deterministic_metrics
from qagen.evaluate.statistics import mean_ci
from qagen.evaluate.testset import TestSet
from qagen.llm import LLMClient
from qagen.store import RecordLog, record_key, write_json_atomic


class RagSystemLike(Protocol):
    name: str

    async def answer(self, question: str) -> RagOutput: ...


class AnswerRecord(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")

    id: str
    item_id: str
    system: str
    output: RagOutput


class JudgementRecord(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")

    id: str
    item_id: str
    judge_model: str
    verdict: JudgeVerdict


def _answer_key(item: EvalItem, system: str) -> str:
    return record_key("answer", item.id, item.question, system)


def _judgement_key(item: EvalItem, metric: str, judge: str, output: RagOutput) -> str:
    # The verdict depends on what was judged: the answer and the contexts, hashed together.
    payload = json.dumps([output.answer, [c.text for c in output.contexts]], ensure_ascii=False)
    digest = hashlib.sha256(payload.encode("utf-8")).hexdigest()
    return record_key("judgement", item.id, metric, judge, digest, item.true_answer)


def split_metrics(metrics: list[str]) -> tuple[set[str], list[str]]:
    """The deterministic groups and the LLM metric names asked for."""
    groups = {m for m in metrics if m in DETERMINISTIC_GROUPS}
    return groups, [m for m in metrics if m not in DETERMINISTIC_GROUPS]


class Evaluation:
    """One evaluation directory: the system's answers, the judges' verdicts, results and summary."""

    def __init__(self, out: Path, testset: TestSet, system: RagSystemLike, metrics: list[str], *, k: int) -> None:
        self.out = out
        self.testset = testset
        self.system = system
        self.groups, self.llm_metrics = split_metrics(metrics)
        self.k = k
        self.answers_log = RecordLog(out / "answers.jsonl", AnswerRecord)
        self.judgements_log = RecordLog(out / "judgements.jsonl", JudgementRecord)

    async def run(self, judge: LLMClient | None, *, concurrency: int, embed: Any = None, progress: bool = True) -> None:
        """Answer and judge every question, `concurrency` questions at a time."""
        from qagen.evaluate.judges import LLM_METRICS

        if self.llm_metrics and judge is None:
            raise ValueError("LLM metrics need a judge client")
        self.out.mkdir(parents=True, exist_ok=True)
        answers = self.answers_log.load()
        judgements = self.judgements_log.load()
        queue: asyncio.Queue[EvalItem] = asyncio.Queue()
        for item in self.testset.items:
            queue.put_nowait(item)
        bar = tqdm(
            total=len(self.testset.items), desc="evaluating", unit="question", disable=not progress, file=sys.stderr
        )
        with self.answers_log.writer() as answers_out, self.judgements_log.writer() as judgements_out:

            async def judge_one(item: EvalItem, metric: str, output: RagOutput) -> None:
                assert judge is not None
                key = _judgement_key(item, metric, judge.settings.spec, output)
                existing = judgements.get(key)
                if existing is not None and not existing.verdict.reason.startswith("api_error"):
                    return
                spec = LLM_METRICS[metric]
                verdict = await spec.run(
                    item.question,
                    output.answer or "",
                    item.true_answer,
                    [c.text for c in output.contexts[: self.k]],
                    judge,
                    embed,
                )
                record = JudgementRecord(id=key, item_id=item.id, judge_model=judge.settings.spec, verdict=verdict)
                judgements[key] = record
                judgements_out.append(record)

            async def worker() -> None:
                while not queue.empty():
                    item = queue.get_nowait()
                    key = _answer_key(item, self.system.name)
                    record = answers.get(key)
                    if record is None or record.output.answer is None:
                        output = await self.system.answer(item.question)
                        record = AnswerRecord(id=key, item_id=item.id, system=self.system.name, output=output)
                        answers[key] = record
                        answers_out.append(record)
                    if record.output.answer is not None:
                        await asyncio.gather(
                            *(
                                judge_one(item, metric, record.output)
                                for metric in self.llm_metrics
                                if record.output.contexts or not LLM_METRICS[metric].needs_contexts
                            )
                        )
                    bar.update(1)

            await run_all([worker for _ in range(max(1, min(concurrency, len(self.testset.items))))])
        bar.close()

    def write_results(self, judge_model: str | None) -> dict[str, Any]:
        """Assemble `results.jsonl` (one row per question, in test-set order) and `summary.json`."""
        answers = self.answers_log.load()
        judgements = self.judgements_log.load()
        rows: list[dict[str, Any]] = []
        for item in self.testset.items:
            record = answers.get(_answer_key(item, self.system.name))
            output = record.output if record else RagOutput(answer=None, error="not_answered_yet")
            row: dict[str, Any] = {
                "id": item.id,
                "question": item.question,
                "true_answer": item.true_answer,
                "source_doc": item.source_doc,
                "generated_answer": output.answer,
                "answer_error": output.error,
                "retrieved_docs": [c.text for c in output.contexts],
                "retrieved_sources": [c.source for c in output.contexts],
                **deterministic_metrics(item, output, self.k, self.groups),
            }
            for metric in self.llm_metrics:
                verdict = None
                if judge_model is not None and output.answer is not None:
                    found = judgements.get(_judgement_key(item, metric, judge_model, output))
                    verdict = found.verdict if found else None
                row[metric] = verdict.value if verdict else None
                row[f"{metric}_reason"] = (verdict.reason if verdict else "not_judged") if row[metric] is None else ""
                row[f"{metric}_raw"] = verdict.raw if verdict else []
                if verdict and verdict.detail:
                    row[f"{metric}_detail"] = verdict.detail
            rows.append(row)
        with (self.out / ".results.jsonl.tmp").open("w", encoding="utf-8") as handle:
            for row in rows:
                handle.write(json.dumps(row, ensure_ascii=False) + "\n")
        (self.out / ".results.jsonl.tmp").replace(self.out / "results.jsonl")
        summary = summarise(rows, self.k, self.llm_metrics, self.groups)
        summary.update(
            {
                "system": self.system.name,
                "judge_model": judge_model,
                "testset": self.testset.origin,
                "questions": len(rows),
                "answered": sum(row["generated_answer"] is not None for row in rows),
                "skipped_rows": [vars(skipped) for skipped in self.testset.skipped],
            }
        )
        write_json_atomic(self.out / "summary.json", summary)
        return summary


def metric_columns(llm_metrics: list[str], groups: set[str]) -> list[str]:
    columns = [column for group in sorted(groups) for column in DETERMINISTIC_GROUPS[group]]
    return [*llm_metrics, *columns]


def summarise(rows: list[dict[str, Any]], k: int, llm_metrics: list[str], groups: set[str]) -> dict[str, Any]:
    """Mean and 95% bootstrap interval of every metric over the questions where it has a value.

    `correctness` is summarised as the mean of (N-1)/4, the notebook's normalisation, so 1 means
    every answer scored 5; `mrr` is the mean reciprocal rank.
    """
    metrics: dict[str, Any] = {}
    for column in metric_columns(llm_metrics, groups):
        values = [row.get(column) for row in rows]
        present = [float(v) for v in values if v is not None]
        if column == "correctness":
            present = [(v - 1) / 4 for v in present]
        name = {"reciprocal_rank": "mrr", "chunk_reciprocal_rank": "chunk_mrr"}.get(column, column)
        name = name.replace("@k", f"@{k}")
        if not present:
            metrics[name] = {"mean": None, "low": None, "high": None, "n": 0, "missing": len(values)}
            continue
        ci = mean_ci(present)
        metrics[name] = {"mean": ci.mean, "low": ci.low, "high": ci.high, "n": ci.n, "missing": len(values) - ci.n}
    return {"k": k, "metrics": metrics}
