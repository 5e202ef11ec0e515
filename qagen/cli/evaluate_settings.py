"""`qagen evaluate`'s options as `EvalConfig`, the settings the Python call takes: the command reads
one model, whatever gave each value (a flag, `--set`, the `--config` file, a variable, the default).

The options that choose the system under test and the grid (`--answers`, `--baseline`, `--corpus`,
`--chunk-size`, a list of `--k` or `--embeddings`, `--rerank`) are no setting of one evaluation: the
command makes a system for each point of the grid, and the point's `k` is its own.
"""

from __future__ import annotations

from typing import Any

from qagen.call_policy import CallPolicy
from qagen.cli.evaluate_grid import split_list
from qagen.evaluate.config import EvalConfig
from qagen.llm.backends import ModelSettings


def eval_config_from_options(options: dict[str, Any], *, k: int) -> EvalConfig:
    """The settings of one evaluation that `options` (the command's, resolved) ask for, at `k`.

    The judges' server, key and output cap are the reader's unless given their own; the answer-relevancy
    embeddings are the first of an `--embeddings` list.
    """
    connection = {
        "timeout": options["timeout"],
        "max_retries": options["max_retries"],
        "max_output_tokens": options["max_output_tokens"],
    }
    reader_endpoint = {"base_url": options["base_url"], "api_key_env": options["api_key_env"]}
    judge_endpoint = {
        "base_url": options["judge_base_url"] or options["base_url"],
        "api_key_env": options["judge_api_key_env"] or options["api_key_env"],
    }
    judge_cap = {"max_output_tokens": options["judge_max_output_tokens"] or options["max_output_tokens"]}
    judge = ModelSettings(
        spec=options["judge_model"] or options["reader_model"], **judge_endpoint, **{**connection, **judge_cap}
    )
    # Only the bundled baseline answers with the reader model; a system of your own brings its own.
    reader = (
        ModelSettings(spec=options["reader_model"], **reader_endpoint, **connection) if options["baseline"] else None
    )
    embeddings = split_list(options["embeddings"])[0] if options["embeddings"] else None
    return EvalConfig(
        testset=options["dataset"],
        split=options["split"],
        question_column=options["question_column"],
        answer_column=options["answer_column"],
        metrics=options["metrics"],
        judge=judge,
        reader=reader,
        k=k,
        embeddings=embeddings,
        concurrency=options["concurrency"],
        rpm=options["rpm"],
        max_failure_rate=options["max_failure_rate"],
        interrupt_grace=options["interrupt_grace"],
        # --timeout and --max-retries reach the system under test as they reach the models.
        system_calls=CallPolicy(timeout=options["timeout"], max_retries=options["max_retries"]),
    )
