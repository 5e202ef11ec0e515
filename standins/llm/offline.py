"""The offline runner: answers a Batch API requests file into an output file, as
`python -m vllm.entrypoints.openai.run_batch -i requests.jsonl -o results.jsonl` does with a real
model, with the stand-in's replies (the same function as its online endpoint and batches).

    python -m standins.llm.offline -i requests.jsonl -o results.jsonl
"""

from __future__ import annotations

import argparse
import json
from collections.abc import Sequence
from pathlib import Path

from standins.llm.batches import answer_line
from standins.llm.faults import AttemptCounter
from standins.llm.knobs import Knobs
from standins.llm.log import RequestLog
from standins.llm.prefix_cache import PrefixCache


def answer_requests(requests: Path, results: Path, knobs: Knobs | None = None, log: RequestLog | None = None) -> int:
    """Answer every line of `requests` into `results` (one output line each); return the count."""
    knobs = knobs or Knobs()
    attempts, cache = AttemptCounter(), PrefixCache()
    log = log or RequestLog()
    count = 0
    with requests.open(encoding="utf-8") as source, results.open("w", encoding="utf-8") as sink:
        for text in source:
            if not text.strip():
                continue
            answered = answer_line(json.loads(text), knobs, attempts, log, cache, fail=False)
            sink.write(json.dumps(answered, ensure_ascii=False) + "\n")
            count += 1
    return count


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m standins.llm.offline", description=__doc__.split("\n\n")[0])
    parser.add_argument("-i", "--input", type=Path, required=True, help="Requests JSONL (Batch API input format).")
    parser.add_argument(
        "-o", "--output", type=Path, required=True, help="Results JSONL to write (Batch API output format)."
    )
    args = parser.parse_args(argv)
    print(f"answered {answer_requests(args.input, args.output)} requests -> {args.output}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
