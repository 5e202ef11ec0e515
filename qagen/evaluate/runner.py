"""Run a RAG system over a test set, judge its answers, and write results and a summary.

Resumable like a build: every answer and every judge verdict is appended to the evaluation
directory as it arrives (`answers.jsonl`, `judgements.jsonl`), keyed by content hashes of
everything it depends on, so re-running the same command pays for no call twice, and a changed
system, judge model, prompt, answer or context never reuses a stale verdict. Each question's
results row is appended to `results.jsonl` as soon as it is judged; at the end the file is
rewritten in test-set order and `summary.json` is written. The rows made during the run are
reused for that when nothing they depend on changed since (a re-run scores each question's texts
once, not twice). A re-run with nothing to do at all is not run (`qagen.evaluate.stamp`).
"""

from __future__ import annotations

import asyncio
import contextlib
import json
from collections.abc import Mapping
from functools import partial
from pathlib import Path
from typing import Any, NamedTuple

from qagen.evaluate.judges.registry import LLM_METRICS, Embed, JudgeInput, JudgeTask
from qagen.evaluate.metrics.scoring import DETERMINISTIC_METRICS, Reported, reported
from qagen.evaluate.records import (
    AnswerRecord,
    EvalItem,
    EvalSummary,
    EvalUsage,
    JudgementRecord,
    JudgeVerdict,
    RagOutput,
    ResultRow,
)
from qagen.evaluate.results import result_row, summarise
from qagen.evaluate.stamp import question_settled
from qagen.evaluate.systems.answers_file import AnswersFileSystem
from qagen.evaluate.systems.protocol import AnswerInterrupted, RagSystem, ReaderSystem
from qagen.evaluate.systems.replies import capped
from qagen.evaluate.systems.rerank.base import RerankingSystem, RerankItem, RerankRecord
from qagen.evaluate.testset import TestSet
from qagen.llm.cost import BatchTally
from qagen.llm.task import Task, add_usage
from qagen.records import Usage
from qagen.runs.batch.executor import BatchExecutor
from qagen.runs.batch.journal import Journal
from qagen.runs.executor import Executor
from qagen.runs.store import RecordLog, RecordStore, record_key, write_json_atomic


def system_identity(system: RagSystem) -> str:
    """The system's name plus the settings it describes (the baseline's chunking, reader, prompts):
    answers made with other settings are other answers."""
    describe = getattr(system, "describe", None)
    settings = describe() if callable(describe) else {}
    return f"{system.name} {json.dumps(settings, sort_keys=True, default=str)}"


def split_metrics(metrics: list[str]) -> tuple[set[str], list[str]]:
    """The deterministic groups and the LLM metric names asked for."""
    groups = {m for m in metrics if m in DETERMINISTIC_METRICS}
    return groups, [m for m in metrics if m not in DETERMINISTIC_METRICS]


class _MadeRow(NamedTuple):
    """A results row made during `Evaluation.run`, and the very objects it was made from."""

    output: RagOutput
    judge_keys: dict[str, str | None]
    verdicts: dict[str, JudgeVerdict | None]
    run: Reported
    row: ResultRow

    def still_valid(self, output: RagOutput, verdicts: dict[str, JudgeVerdict | None], run: Reported) -> bool:
        """Whether the row is what `result_row` would make from these (the same objects, so no compare)."""
        return (
            self.output is output
            and self.run == run
            and self.verdicts.keys() == verdicts.keys()
            and all(self.verdicts[metric] is verdict for metric, verdict in verdicts.items())
        )


class Evaluation:
    """One evaluation directory: the system's answers, the judges' verdicts, results and summary."""

    def __init__(
        self,
        out: Path,
        testset: TestSet,
        system: RagSystem,
        metrics: list[str],
        *,
        k: int,
        judge_model: str | None = None,
        embed: Embed | None = None,
    ) -> None:
        self.out = out
        self.testset = testset
        self.system = system
        self.groups, self.llm_metrics = split_metrics(metrics)
        if self.llm_metrics and judge_model is None:
            raise ValueError("LLM metrics need a judge model")
        self.k = k
        self.judge_model = judge_model
        self.judges = (
            {metric: JudgeTask(metric, judge_model, embed) for metric in self.llm_metrics} if judge_model else {}
        )
        self.identity = system_identity(system)
        self.answers_log = RecordLog(out / "answers.jsonl", AnswerRecord)
        self.judgements_log = RecordLog(out / "judgements.jsonl", JudgementRecord)
        # A baseline's reranker's orders (`reranks.jsonl`), found there on resume: never paid twice.
        self.reranks_log = RecordLog(out / "reranks.jsonl", RerankRecord)
        self._reranks: RecordStore[RerankRecord] | None = None
        # Answers read from the user's file cost nothing: read them afresh every run, so an edited
        # answers file is what gets judged (its new answers get new verdicts; unchanged ones keep theirs).
        self._always_ask = isinstance(system, AnswersFileSystem)
        # What a finished `run` leaves to `write_results`: the records it held (read again from
        # the logs otherwise) and the rows it made.
        self._records: tuple[dict[str, AnswerRecord], dict[str, JudgementRecord]] | None = None
        self._made: dict[str, _MadeRow] = {}
        self._written_in_order = False
        self.settled = False
        """Set by `write_results`: a re-run would make no call (`qagen.evaluate.stamp`)."""

    def _answer_key(self, item: EvalItem) -> str:
        return record_key("answer", item.id, item.question, self.identity)

    def _judge_input(self, item: EvalItem, answer: str, output: RagOutput) -> JudgeInput:
        return JudgeInput(item, answer, tuple(c.text for c in output.contexts[: self.k]))

    def _judge_keys(
        self, item: EvalItem, output: RagOutput, known: Mapping[str, JudgementRecord] | None = None
    ) -> dict[str, str | None]:
        """Every LLM metric's judgement key for the output (None: nothing to judge); the keys of the
        `known` records are theirs (a key hashes the answer and contexts: worth not doing twice)."""
        keys: dict[str, str | None] = {}
        judged: JudgeInput | None = None
        for metric in self.llm_metrics:
            if known is not None and metric in known:
                keys[metric] = known[metric].id
            elif output.answer is not None and metric in self.judges and LLM_METRICS.get(metric).judges(item):
                judged = judged or self._judge_input(item, output.answer, output)
                keys[metric] = self.judges[metric].key(judged)
            else:
                keys[metric] = None
        return keys

    @staticmethod
    def _verdicts(
        keys: dict[str, str | None], judgements: Mapping[str, JudgementRecord]
    ) -> dict[str, JudgeVerdict | None]:
        """Every LLM metric's stored verdict (None: not judged, or nothing to judge)."""
        found: dict[str, JudgeVerdict | None] = {}
        for metric, key in keys.items():
            record = judgements.get(key) if key is not None else None
            found[metric] = record.verdict if record is not None else None
        return found

    def _row(
        self, item: EvalItem, output: RagOutput, verdicts: dict[str, JudgeVerdict | None], run: Reported
    ) -> ResultRow:
        return result_row(item, output, verdicts, system=self.system.name, k=self.k, groups=self.groups, run=run)

    async def run(self, executor: Executor, *, progress: bool = True, system_slots: int | None = None) -> None:
        """Answer and judge every question, as many at a time as the executor allows, and the system
        asked at most `system_slots` questions at a time (the batch executor runs every question at
        once: a user's own system is still asked as online, a few at a time)."""
        self.out.mkdir(parents=True, exist_ok=True)
        self._records, self._made, self._written_in_order = None, {}, False
        made: dict[str, _MadeRow] = {}
        written: list[str] = []
        slots = asyncio.Semaphore(system_slots) if system_slots is not None else None
        reranking = isinstance(self.system, RerankingSystem) and self.system.reranker is not None
        with (
            self.answers_log.open() as answers,
            self.judgements_log.open() as judgements,
            self.reranks_log.open() if reranking else contextlib.nullcontext() as self._reranks,
            (self.out / "results.jsonl").open("w", encoding="utf-8") as results_out,
        ):
            # What the system reports so far: rows written during the run use it, the final rows
            # use the whole run's (`write_results`).
            so_far = reported(
                record.output
                for item in self.testset.items
                if (record := answers.get(self._answer_key(item))) is not None
            )

            # Questions that retrieved nothing while the system had not yet reported any context:
            # judged once it has (a system that never does is not judged on contexts at all).
            waiting: list[tuple[EvalItem, RagOutput]] = []

            async def judge(item: EvalItem, output: RagOutput, run: Reported) -> dict[str, JudgementRecord]:
                """The judgements made or found now, by metric."""
                if output.answer is None:
                    return {}
                judged = self._judge_input(item, output.answer, output)
                wait = output.retrieved_nothing(self.k) and not run.contexts
                reads_contexts = (LLM_METRICS.get(m) for m in self.judges)
                if wait and any(spec.needs_contexts and spec.judges(item) for spec in reads_contexts):
                    waiting.append((item, output))
                metrics = [
                    m
                    for m in self.judges
                    if LLM_METRICS.get(m).judges(item) and not (wait and LLM_METRICS.get(m).needs_contexts)
                ]
                records = await asyncio.gather(*(executor.run(self.judges[m], judged, judgements) for m in metrics))
                return dict(zip(metrics, records, strict=True))

            def write_row(
                item: EvalItem, output: RagOutput, judged: Mapping[str, JudgementRecord] | None = None
            ) -> None:
                keys = self._judge_keys(item, output, judged)
                verdicts = self._verdicts(keys, judgements.records)
                row = self._row(item, output, verdicts, so_far)
                made[item.id] = _MadeRow(output, keys, verdicts, so_far, row)
                written.append(item.id)
                results_out.write(_jsonl(row))
                results_out.flush()

            async def answer_and_judge(item: EvalItem) -> None:
                nonlocal so_far
                try:
                    output = await self._answer(item, answers, executor, slots)
                except AnswerInterrupted as stop:
                    write_row(item, stop.output)  # the question's row says it was interrupted; then the run stops
                    raise
                so_far = Reported(*(a or b for a, b in zip(so_far, reported([output]), strict=True)))
                write_row(item, output, await judge(item, output, so_far))

            await executor.map(
                self.testset.items, answer_and_judge, label="evaluating", unit="question", progress=progress
            )
            if waiting and so_far.contexts:
                outputs = {item.id: output for item, output in waiting}

                async def judge_waiting(item: EvalItem) -> None:
                    await judge(item, outputs[item.id], so_far)

                items = [item for item, _ in waiting]
                await executor.map(items, judge_waiting, label="judging", unit="question", progress=progress)
            self._records, self._made = (answers.records, judgements.records), made
            self._written_in_order = written == [item.id for item in self.testset.items]

    async def _answer(
        self,
        item: EvalItem,
        answers: RecordStore[AnswerRecord],
        executor: Executor,
        slots: asyncio.Semaphore | None,
    ) -> RagOutput:
        """The system's output for `item`: stored, else asked now and stored."""
        key = self._answer_key(item)
        record = answers.get(key)
        # A question without an answer is asked again: the failure may have been passing.
        if record is None or record.output.answer is None or self._always_ask:
            try:
                # Capped here, where every system's output passes, before it is stored or judged.
                output = capped(await self._ask_system(item, executor, slots))
            except AnswerInterrupted as stop:
                # Recorded as the system's output (a failure unless it answered in time); asked again on resume.
                interrupted = capped(stop.output)
                answers.add(AnswerRecord(id=key, item_id=item.id, system=self.system.name, output=interrupted))
                raise
            if record is None or record.output != output:
                record = AnswerRecord(id=key, item_id=item.id, system=self.system.name, output=output)
                answers.add(record)
                if isinstance(executor, BatchExecutor) and self._reader_task(executor) and output.answer is not None:
                    executor.note_batched(key)  # the reader's answer came from a batch
        return record.output

    def _reader_task(self, executor: Executor) -> bool:
        """Whether the system's answers are its reader's task, sent by `executor` (the baseline's are)."""
        system = self.system
        return isinstance(system, ReaderSystem) and executor.clients.get(system.task.role) is system.reader

    async def _ask_system(self, item: EvalItem, executor: Executor, slots: asyncio.Semaphore | None) -> RagOutput:
        system = self.system
        if self._reader_task(executor):
            assert isinstance(system, ReaderSystem)
            # The reader's call goes through the executor (into a batch round in batch mode); never
            # inside `slots`: a call waiting for its round must not keep other questions from theirs.
            return await executor.ask(system.task, await self._retrieve(system, item, executor))
        # A system that can tell two questions of the same text apart (an answers file, by id) is given the item.
        answer_item = getattr(system, "answer_item", None)
        async with slots if slots is not None else contextlib.nullcontext():
            return await (answer_item(item) if answer_item is not None else system.answer(item.question))

    async def _retrieve(self, system: ReaderSystem, item: EvalItem, executor: Executor) -> Any:
        """What the reader answers `item` from; a reranker's task goes through `executor` into `reranks.jsonl`."""
        reranks = self._reranks
        if reranks is None or not isinstance(system, RerankingSystem):
            return await system.retrieve_for(item.question)

        async def run(task: Task[RerankItem, RerankRecord], candidates: RerankItem) -> RerankRecord:
            return await executor.run(task, candidates, reranks)

        return await system.retrieve_for(item.question, run=run)

    def write_results(self, **about: Any) -> EvalSummary:
        """Rewrite `results.jsonl` in test-set order (unless `run` wrote it so, every row final) and
        write `summary.json`; return the summary, as `EvalSummary.model_validate` reads it from there.

        `about` (the models, the settings, notes) goes into the summary as it is.
        """
        answers, judgements = self._records or (self.answers_log.load(), self.judgements_log.load())
        made, self._records, self._made = self._made, None, {}
        # Whether `run` wrote results.jsonl as it is to be: every row final, in test-set order.
        written_as_final, self._written_in_order = self._written_in_order, False
        missing = RagOutput(answer=None, error="not_answered_yet")
        outputs = [
            record.output if (record := answers.get(self._answer_key(item))) else missing for item in self.testset.items
        ]
        run = reported(outputs)
        rows: list[ResultRow] = []
        settled, settles = True, partial(question_settled, k=self.k, run=run, answers_reread=self._always_ask)
        system_usage = judge_usage = Usage()
        batched, in_batches = Journal(self.out).batched, {"system": BatchTally(), "judge": BatchTally()}
        for item, output in zip(self.testset.items, outputs, strict=True):
            before = made.get(item.id)
            if before is not None and before.output is output:
                keys = before.judge_keys
            else:
                keys = self._judge_keys(item, output)
            verdicts = self._verdicts(keys, judgements)
            if settled and (output is missing or not settles(output, verdicts)):
                settled = False
            if before is not None and before.still_valid(output, verdicts, run):
                rows.append(before.row)
            else:
                rows.append(self._row(item, output, verdicts, run))
                written_as_final = False
            system_usage = add_usage(system_usage, output.usage)
            if self._answer_key(item) in batched:
                in_batches["system"].add(1, output.usage)
            for metric, key in keys.items():
                verdict = verdicts[metric]
                if verdict is not None:
                    judge_usage = add_usage(judge_usage, verdict.usage)
                    if key is not None and key in batched:
                        in_batches["judge"].add(len(verdict.raw), verdict.usage)
        del answers, judgements, made, outputs
        self.settled = settled
        if not written_as_final:
            temporary = self.out / ".results.jsonl.tmp"
            with temporary.open("w", encoding="utf-8") as handle:
                for row in rows:
                    handle.write(_jsonl(row))
            temporary.replace(self.out / "results.jsonl")
        scores = summarise(rows, k=self.k, llm_metrics=self.llm_metrics, groups=self.groups)
        summary = EvalSummary(
            **dict(scores),
            system=self.system.name,
            judge_model=self.judge_model,
            testset=self.testset.origin,
            about=about,
            skipped_rows=self.testset.skipped,
            usage=EvalUsage(system=system_usage, judge=judge_usage),
            batch={
                role: tally.spend(model)
                for role, tally in in_batches.items()
                if tally.calls and (model := self._model_of(role)) is not None
            },
        ).model_dump(mode="json")
        write_json_atomic(self.out / "summary.json", summary)
        # Read back from its JSON form, so a re-run that returns the stored summary returns an equal one.
        return EvalSummary.model_validate(summary)

    def _model_of(self, role: str) -> str | None:
        """The model spec of the system's reader (the baseline's) or of the judges."""
        if role == "judge":
            return self.judge_model
        return self.system.reader.settings.spec if isinstance(self.system, ReaderSystem) else None


def _jsonl(row: ResultRow) -> str:
    # Python mode, then `json.dumps`, as the rows were always written: JSON mode would turn a NaN
    # in a judge's free-form detail into null.
    return json.dumps(row.model_dump(), ensure_ascii=False) + "\n"
