"""The abstention judge with a real model (SmolLM2-135M behind llama-cpp-python's server) on the real
refusals and real invented answers of `tests/evaluate/judges/test_abstention.py`.

A 135M model is no reliable judge: what must hold whatever it writes is that every verdict is a
value (1.0 declines, 0.0 commits) or a typed failure that keeps the reply. How often it agrees with
the rows' reading is measured and written to the terminal summary, not asserted: the lead measures
the judge with a real judge-sized model.
"""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import pytest

from qagen.evaluate.judges.abstention import judge_abstention
from qagen.evaluate.records import JudgeVerdict
from qagen.llm.client import LLMClient, ModelSettings
from qagen.runs.executor import drive_steps
from realserver.llama import MODEL_ALIAS, RealServer

pytestmark = [pytest.mark.real_llm, pytest.mark.slow]

REFUSALS = (17, 69, 111, 119, 126, 133)
INVENTED = (31, 114, 115, 131, 136)


def _rows(reference_data: Path, wanted: tuple[int, ...]) -> list[dict[str, Any]]:
    lines = (reference_data / "judged_rag_answers.jsonl").read_text(encoding="utf-8").splitlines()
    rows = {row["sample_idx"]: row for row in map(json.loads, lines)}
    return [rows[index] for index in wanted]


def _judge(server: RealServer, rows: list[dict[str, Any]]) -> list[JudgeVerdict]:
    settings = ModelSettings(spec=f"openai:{MODEL_ALIAS}", base_url=server.base_url, max_output_tokens=128)

    async def main() -> list[JudgeVerdict]:
        client = LLMClient.connect(settings, concurrency=1)
        try:
            return [
                await drive_steps(judge_abstention(row["question"], row["rag_answer"], settings.spec), client.complete)
                for row in rows
            ]
        finally:
            await client.aclose()

    return asyncio.run(main())


def test_a_real_model_grades_real_refusals_and_invented_answers_or_says_why_not(
    real_server: RealServer, reference_data: Path, real_llm_notes: list[str]
) -> None:
    refusals, invented = _rows(reference_data, REFUSALS), _rows(reference_data, INVENTED)
    verdicts = _judge(real_server, [*refusals, *invented])
    for verdict in verdicts:
        assert (verdict.value in (0.0, 1.0)) != (verdict.failure is not None), verdict
        assert len(verdict.raw) == 1  # the reply is kept, read or not
    expected = [1.0] * len(refusals) + [0.0] * len(invented)
    pairs = zip(verdicts, expected, strict=True)
    read = [(verdict.value, want) for verdict, want in pairs if verdict.value is not None]
    agree = sum(value == want for value, want in read)
    real_llm_notes.append(
        f"abstention judge ({MODEL_ALIAS}): {len(read)}/{len(verdicts)} verdicts read, {agree}/{len(read)} agree with "
        f"the reading of {len(refusals)} real refusals and {len(invented)} real invented answers"
    )
