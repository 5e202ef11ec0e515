"""The options shared by `qagen` commands, and how they map onto `BuildConfig`."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, TypeVar

import click
from click.core import ParameterSource

from qagen.config import DEFAULT_AUDIENCE, DEFAULT_MODEL, BuildConfig
from qagen.llm.backends import is_variable_name

F = TypeVar("F", bound=Callable[..., Any])


def option_group(*decorators: Callable[[F], F]) -> Callable[[F], F]:
    def apply(function: F) -> F:
        for decorator in reversed(decorators):
            function = decorator(function)
        return function

    return apply


corpus_options = option_group(
    click.option("--hf-dataset", metavar="NAME_OR_PATH", help="Use a Hugging Face dataset instead of CORPUS: a directory saved with save_to_disk, or a Hub id."),
    click.option("--split", default="train", show_default=True, help="Split of --hf-dataset to use."),
    click.option("--text-column", default="text", show_default=True, help="Column holding the text, for tables (.jsonl/.csv/.parquet) and datasets."),
    click.option("--source-column", default=None, help="Column naming each row's source document (default: file name and row number)."),
)  # fmt: skip
chunk_options = option_group(
    click.option("--chunk-size", type=click.IntRange(min=1), default=2000, show_default=True, help="Maximum chunk length, in --length-unit."),
    click.option("--chunk-overlap", type=click.IntRange(min=0), default=200, show_default=True, help="Overlap between consecutive chunks, in --length-unit."),
    click.option("--length-unit", type=click.Choice(["characters", "tokens"]), default="characters", show_default=True, help="Measure chunk length in characters or in tiktoken tokens."),
    click.option("--encoding", default="cl100k_base", show_default=True, help="tiktoken encoding for --length-unit tokens."),
    click.option("--seed", type=int, default=42, show_default=True, help="Seed of the chunk sampling; the same seed picks the same chunks."),
)  # fmt: skip
_CALL_OPTIONS = (
    click.option("--concurrency", type=click.IntRange(min=1), default=16, show_default=True, help="LLM calls in flight at once, all models together."),
    click.option("--rpm", type=click.FloatRange(min=0, min_open=True), default=None, help="Requests-per-minute limit, all models together (default: none)."),
    click.option("--max-retries", type=click.IntRange(min=0), default=6, show_default=True, help="Retries per call on 429, 5xx, timeouts and dropped connections, with backoff honouring Retry-After."),
    click.option("--timeout", type=click.FloatRange(min=0, min_open=True), default=120.0, show_default=True, help="Seconds to wait for one reply."),
    click.option("--max-failure-rate", type=click.FloatRange(0, 1), default=0.5, show_default=True, help="Stop when more than this share of calls fails even after retries (checked after 20 calls)."),
)  # fmt: skip


def variable_name(ctx: click.Context, param: click.Parameter, value: str | None) -> str | None:
    """Check an `--...-api-key-env` value: the name of a variable, never a key (it is saved with the run)."""
    if value is not None and not is_variable_name(value):
        # The value is not repeated: it may be the key itself.
        raise click.BadParameter(
            "give the name of the environment variable that holds the key (such as OPENAI_API_KEY), not the key."
        )
    return value


model_options = option_group(
    click.option("--model", default=DEFAULT_MODEL, show_default=True, help="Generator model as LangChain's provider:model, e.g. openai:gpt-4o-mini."),
    click.option("--critic-model", default=None, help="Model of the three critics (default: --model)."),
    click.option("--base-url", envvar="OPENAI_BASE_URL", default=None, help="URL of an OpenAI-compatible server (vLLM, Ollama, llama.cpp, TGI) for --model, and the critics unless --critic-base-url, e.g. http://localhost:8000/v1. [env: OPENAI_BASE_URL]"),
    click.option("--api-key-env", metavar="VAR", default=None, callback=variable_name, help="Name of the environment variable holding the key for --model (default: OPENAI_API_KEY for openai:* models). The name, not the key."),
    click.option("--critic-base-url", envvar="QAGEN_CRITIC_BASE_URL", default=None, help="URL of the critics' server (default: --base-url). [env: QAGEN_CRITIC_BASE_URL]"),
    click.option("--critic-api-key-env", metavar="VAR", default=None, callback=variable_name, help="Name of the environment variable holding the critics' key (default: --api-key-env)."),
    click.option("--temperature", type=float, default=None, help="Sampling temperature (default: the model's own)."),
    click.option("--max-output-tokens", type=click.IntRange(min=1), default=None, help="Cap on tokens per reply, for generator and critic (default: 2048, room for a reasoning model's thinking; a reply cut at the cap is recorded as truncated)."),
    click.option("--critic-max-output-tokens", type=click.IntRange(min=1), default=None, help="The critics' own cap on tokens per reply (default: --max-output-tokens)."),
    *_CALL_OPTIONS,
)  # fmt: skip
# How fast a command may call its models: the same for every command and shared by all its models.
call_options = option_group(*_CALL_OPTIONS)
sample_options = option_group(
    click.option("--n-generations", "-n", type=click.IntRange(min=1), default=None, help="Draft from this many chunks, spread across documents [default: every chunk]."),
)  # fmt: skip
critic_options = option_group(
    click.option("--audience", default=DEFAULT_AUDIENCE, show_default=True, help="Who the questions should be useful to; the relevance critic rates usefulness to them."),
    click.option("--all-critics", is_flag=True, default=False, help="Ask all three critics even after one has rejected a draft (full rationales, more calls)."),
)  # fmt: skip
filter_options = option_group(
    click.option("--min-score", type=click.IntRange(1, 5), default=4, show_default=True, help="Keep a draft when every critic's score is at least this."),
    click.option("--min-groundedness", type=click.IntRange(1, 5), default=None, help="Override --min-score for groundedness."),
    click.option("--min-relevance", type=click.IntRange(1, 5), default=None, help="Override --min-score for relevance."),
    click.option("--min-standalone", type=click.IntRange(1, 5), default=None, help="Override --min-score for standalone."),
    click.option("--dedup-threshold", type=click.FloatRange(0, 1, min_open=True), default=0.9, show_default=True, help="Questions whose word sets overlap this much (Jaccard) are near-duplicates; the first in sampling order is kept."),
    click.option("--max-answer-chars", type=click.IntRange(min=1), default=300, show_default=True, help="A draft with a longer answer is no factoid: rejected as answer_too_long, not critiqued (the notebook's limit)."),
    click.option("--max-question-chars", type=click.IntRange(min=1), default=500, show_default=True, help="A draft with a longer question is rejected as question_too_long, not critiqued."),
)  # fmt: skip
budget_options = option_group(
    click.option("--dry-run", is_flag=True, default=False, help="Chunk and sample, then print the expected calls, tokens and cost; make no LLM call."),
    click.option("--max-tokens", type=click.IntRange(min=1), default=None, help="Stop cleanly once the run directory has spent this many tokens (re-run with a higher cap to continue)."),
    click.option("--max-cost", type=click.FloatRange(min=0, min_open=True), default=None, help="Stop cleanly once the run has spent this many dollars (needs a known price or --price-input/--price-output)."),
    click.option("--price-input", type=click.FloatRange(min=0), default=None, help="Dollars per million input tokens, for cost reports and --max-cost (default: known OpenAI prices)."),
    click.option("--price-output", type=click.FloatRange(min=0), default=None, help="Dollars per million output tokens."),
)  # fmt: skip
batch_options = option_group(
    click.option("--batch", is_flag=True, default=False, help="Send the LLM calls in rounds through the OpenAI Batch API: half the price, results within 24 hours instead of minutes. Re-running the same command polls the same batches."),
    click.option("--no-wait", "no_wait", is_flag=True, default=False, help="With --batch: submit the next round (or check the running one) and exit at once with code 4; run the same command again later to go on."),
    click.option("--batch-poll", "batch_poll", type=click.FloatRange(min=0), default=10.0, show_default=True, help="With --batch: seconds before the second poll of a batch; the wait doubles after each poll, up to 5 minutes."),
)  # fmt: skip
output_options = option_group(
    click.option("--quiet", "-q", is_flag=True, default=False, help="No progress bars."),
)


# The critic's own server and key: unset, the critic's are the generator's (`--base-url`, `--api-key-env`).
_CRITIC_OWN = {
    "critic_base_url": "base_url",
    "critic_api_key_env": "api_key_env",
    "critic_max_output_tokens": "max_output_tokens",
}


def _config_fields(options: dict[str, Any]) -> dict[str, Any]:
    """Map flat CLI options onto the nested `BuildConfig` fields (only the options present)."""
    nested: dict[str, Any] = {}
    corpus_keys = {
        "corpus": "path",
        "hf_dataset": "hf_dataset",
        "split": "split",
        "text_column": "text_column",
        "source_column": "source_column",
    }
    chunk_keys = {"chunk_size", "chunk_overlap", "length_unit", "encoding"}
    model_keys = {
        "base_url": "base_url",
        "api_key_env": "api_key_env",
        "temperature": "temperature",
        "max_output_tokens": "max_output_tokens",
        "rpm": "rpm",
        "max_retries": "max_retries",
        "timeout": "timeout",
    }
    top_keys = {
        "n_generations",
        "seed",
        "audience",
        "min_score",
        "all_critics",
        "dedup_threshold",
        "max_answer_chars",
        "max_question_chars",
        "concurrency",
        "max_failure_rate",
        "max_tokens",
        "max_cost",
        "price_input",
        "price_output",
    }
    for key, value in options.items():
        if key in corpus_keys:
            nested.setdefault("corpus", {})[corpus_keys[key]] = (
                str(value) if key == "corpus" and value is not None else value
            )
        elif key in chunk_keys:
            nested.setdefault("chunking", {})[key] = value
        elif key in model_keys:
            nested.setdefault("generator", {})[model_keys[key]] = value
            nested.setdefault("critic", {})[model_keys[key]] = value
        elif key == "model":
            nested.setdefault("generator", {})["spec"] = value
        elif key == "critic_model":
            nested.setdefault("critic", {})["spec"] = value
        elif key in _CRITIC_OWN:
            pass  # below: they override what the generator's options set for the critic
        elif key in top_keys:
            nested[key] = value
        elif key[4:] in {"groundedness", "relevance", "standalone"}:
            if value is not None:
                nested.setdefault("min_scores", {})[key[4:]] = value
        else:
            # An option with no place in the settings would be silently ignored: a bug, not input.
            raise AssertionError(f"option {key!r} is not mapped onto BuildConfig")
    for key, field in _CRITIC_OWN.items():
        if options.get(key) is not None:
            nested.setdefault("critic", {})[field] = options[key]
    return nested


def _merge(base: dict[str, Any], update: dict[str, Any]) -> dict[str, Any]:
    merged = dict(base)
    for key, value in update.items():
        merged[key] = (
            _merge(merged[key], value) if isinstance(value, dict) and isinstance(merged.get(key), dict) else value
        )
    return merged


_MODEL_OPTIONS = {
    "model",
    "critic_model",
    "base_url",
    "api_key_env",
    *_CRITIC_OWN,
    "temperature",
    "max_output_tokens",
    "rpm",
    "max_retries",
    "timeout",
}


def config_from_options(
    ctx: click.Context, options: dict[str, Any], *, stored: BuildConfig | None, llm_fixed: bool = True
) -> BuildConfig:
    """A build's settings: every option for a new run; on a stored run, only the options given.

    On a run made by `qagen chunk` (no LLM stage yet), the model options count in full, defaults
    included, as they would for a new build.
    """
    if stored is None:
        fields = _config_fields(options)
        critic = fields.setdefault("critic", {})
        critic.setdefault("spec", fields.get("generator", {}).get("spec", DEFAULT_MODEL))
        if critic["spec"] is None:
            critic["spec"] = fields["generator"]["spec"]
        return BuildConfig.model_validate(fields)
    given = {
        key: value
        for key, value in options.items()
        if ctx.get_parameter_source(key) in {ParameterSource.COMMANDLINE, ParameterSource.ENVIRONMENT}
    }
    if not llm_fixed:
        for key in _MODEL_OPTIONS & options.keys():
            given.setdefault(key, options[key])
        if given.get("critic_model") is None and "model" in given:
            given["critic_model"] = given["model"]
    fields = _config_fields(given)
    for key, field in _CRITIC_OWN.items():
        # A critic that has a server or key of its own keeps it when only the generator's is given
        # again (e.g. by OPENAI_BASE_URL in the environment): its calls must not move elsewhere.
        if key not in given and getattr(stored.critic, field) != getattr(stored.generator, field):
            fields.get("critic", {}).pop(field, None)
    return BuildConfig.model_validate(_merge(stored.model_dump(mode="json"), fields))


def batch_from_options(options: dict[str, Any]) -> Any:
    """The `BatchOptions` the batch flags ask for (None: online), taking those flags out of `options`."""
    batch, no_wait, poll = options.pop("batch"), options.pop("no_wait"), options.pop("batch_poll")
    if not batch:
        if no_wait:
            raise click.UsageError("--no-wait goes with --batch.")
        return None
    from qagen.runs.batch.rounds import BatchOptions

    return BatchOptions(wait=not no_wait, poll_seconds=poll, max_poll_seconds=max(poll, 300.0))
