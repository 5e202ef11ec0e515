"""The abstention judge with a real model, on real refusals and real invented answers.

    python benchmarks/bench_abstention.py --base-url http://127.0.0.1:8080/v1 --model openai:qwen

The answers are those of `tests/evaluate/judges/test_abstention.py` (chosen there by reading every
answer of `../shared/reference/data/judged_rag_answers.jsonl`): 20 answers of a real RAG system that
decline (their context does not hold the answer) and 9 that commit to an answer the real
Llama-3-70B judge scored wrong. The judge should grade the first `declines` (1.0) and the second
`commits` (0.0). Prints how many verdicts were read, the confusion table, and every disagreement.
One call per answer; about ten minutes with a 1.5B model on two cores.
"""

from __future__ import annotations

import argparse
import asyncio
import importlib.util
import json
import time
from pathlib import Path
from typing import Any

from qagen.evaluate.judges.abstention import judge_abstention
from qagen.evaluate.records import JudgeVerdict
from qagen.llm.client import LLMClient, ModelSettings
from qagen.runs.executor import drive_steps

REPOSITORY = Path(__file__).resolve().parents[1]
SELECTION = REPOSITORY / "tests" / "evaluate" / "judges" / "test_abstention.py"
REFERENCE = REPOSITORY.parent / "shared" / "reference" / "data" / "judged_rag_answers.jsonl"


def _selection() -> tuple[tuple[int, ...], tuple[int, ...]]:
    """The rows the tests chose as refusals and as invented answers (declared there, once)."""
    spec = importlib.util.spec_from_file_location("abstention_selection", SELECTION)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return tuple(module.REFUSALS), tuple(module.INVENTED)


def _judge(settings: ModelSettings, rows: list[dict[str, Any]]) -> list[JudgeVerdict]:
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


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--base-url", required=True, help="an OpenAI-compatible server on 127.0.0.1")
    parser.add_argument("--model", default="openai:qwen", help="the judge's spec as qagen names it (openai:ALIAS)")
    parser.add_argument("--reference", type=Path, default=REFERENCE, help="judged_rag_answers.jsonl")
    parser.add_argument("--timeout", type=float, default=600.0, help="seconds to wait for one reply")
    args = parser.parse_args()
    refusal_ids, invented_ids = _selection()
    rows = {row["sample_idx"]: row for row in map(json.loads, args.reference.read_text(encoding="utf-8").splitlines())}
    wanted = [(index, 1.0) for index in refusal_ids] + [(index, 0.0) for index in invented_ids]
    settings = ModelSettings(spec=args.model, base_url=args.base_url, timeout=args.timeout, max_output_tokens=256)
    started = time.perf_counter()
    verdicts = _judge(settings, [rows[index] for index, _ in wanted])
    seconds = time.perf_counter() - started
    table = {(want, got): 0 for want in (1.0, 0.0) for got in (1.0, 0.0, None)}
    for (_, want), verdict in zip(wanted, verdicts, strict=True):
        table[(want, verdict.value)] += 1
    read = sum(count for (_, got), count in table.items() if got is not None)
    agree = table[(1.0, 1.0)] + table[(0.0, 0.0)]
    print(f"Abstention judge {args.model}: {len(verdicts)} real answers, {seconds:.0f} s\n")
    print(f"  {'':<28} {'declines':>9} {'commits':>8} {'unread':>7}")
    for want, label in ((1.0, f"real refusals ({len(refusal_ids)})"), (0.0, f"real invented ({len(invented_ids)})")):
        print(f"  {label:<28} {table[(want, 1.0)]:>9} {table[(want, 0.0)]:>8} {table[(want, None)]:>7}")
    print(f"\n  verdicts read {read}/{len(verdicts)}; agree with the reading {agree}/{read}" if read else "")
    for (index, want), verdict in zip(wanted, verdicts, strict=True):
        if verdict.value != want:
            said = "unread" if verdict.value is None else ("declines" if verdict.value == 1.0 else "commits")
            reply = (verdict.raw[-1] if verdict.raw else "").replace("\n", " ")[:160]
            print(f"  row {index}: {'refusal' if want == 1.0 else 'invented'} graded {said}: {reply}")


if __name__ == "__main__":
    main()
