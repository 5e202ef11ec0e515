"""The options of the `qagen` build commands, each command taking only the ones that apply to it.

`build` and `chunk` start a run: their options show the defaults a new run gets. The stage
commands (`generate`, `critique`, `filter`) work on a run, and their options are of two kinds
(`qagen.cli.build_settings` applies them):

- settings of the run (the models, their servers, the prompts, the sample size, the audience):
  the run's unless given, and `--help` says "[default: the run's]";
- settings of this invocation (thresholds, length limits, spending caps, call pacing): the value
  `--help` shows, default included, on every invocation, whatever an earlier command used.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import click

from qagen.cli.installed_help import ListsInstalled, installed
from qagen.cli.option_spec import OptionGroup, OptionSpec, argument, option, option_group
from qagen.cli.paths import UserPath
from qagen.config import DEFAULT_AUDIENCE
from qagen.corpus.settings import MIN_CHUNK_SIZE
from qagen.critics import BUNDLED_OPT_IN, CRITICS, CriticSpec, check_name
from qagen.errors import QagenError
from qagen.generation.checks.rules import FREE_CHECK_NAMES, FREE_CHECKS
from qagen.llm.backends import DEFAULT_MODEL, is_variable_name
from qagen.question_types import QUESTION_TYPES, check_shares, parse_shares

FROM_THE_RUN = "[default: the run's]"


def _default(stage: bool, new_run: str) -> str:
    """The end of a run setting's help: its default on a new run, or the run's on a stage command."""
    return FROM_THE_RUN if stage else new_run


def variable_name(ctx: click.Context, param: click.Parameter, value: str | None) -> str | None:
    """Check an `--...-api-key-env` value: the name of a variable, never a key (it is saved with the run)."""
    if value is not None and not is_variable_name(value):
        # The value is not repeated: it may be the key itself.
        raise click.BadParameter(
            "give the name of the environment variable that holds the key (such as OPENAI_API_KEY), not the key."
        )
    return value


# --- a new run: where it goes, the corpus and its chunks (build, chunk) ----------------------------
corpus_argument = argument("corpus", required=False, type=UserPath(path_type=Path))
run_out_option = option(
    "--out",
    "-o",
    "out",
    type=UserPath(path_type=Path),
    help="Run directory: records, dataset/, candidates/, summary.json. Re-run the same command to resume. [required]",
)
corpus_options = option_group(
    option("--hf-dataset", metavar="NAME_OR_PATH", help="Use a Hugging Face dataset instead of CORPUS: a directory saved with save_to_disk, or a Hub id."),
    option("--split", default="train", show_default=True, help="Split of --hf-dataset to use."),
    option("--text-column", default="text", show_default=True, help="Column holding the text, for tables (.jsonl/.csv/.parquet) and datasets."),
    option("--source-column", default=None, help="Column naming each row's source document (default: file name and row number)."),
)  # fmt: skip
_SMALLEST = " or ".join(f"{size} {unit}" for unit, size in MIN_CHUNK_SIZE.items())
chunk_options = option_group(
    # No click range: the smallest size depends on --length-unit, which the chunk settings check (one bound, one message).
    option("--chunk-size", type=int, default=2000, show_default=True, help=f"Maximum chunk length, in --length-unit (at least {_SMALLEST})."),
    option("--chunk-overlap", type=click.IntRange(min=0), default=200, show_default=True, help="Overlap between consecutive chunks, in --length-unit."),
    option("--length-unit", type=click.Choice(["characters", "tokens"]), default="characters", show_default=True, help="Measure chunk length in characters or in tiktoken tokens."),
    option("--encoding", default="cl100k_base", show_default=True, help="tiktoken encoding for --length-unit tokens."),
    option("--seed", type=int, default=42, show_default=True, help="Seed of the chunk sampling; the same seed picks the same chunks."),
)  # fmt: skip


# --- the sample and the models (run settings) -------------------------------------------------------
def sample_options(*, stage: bool) -> OptionGroup:
    types = "; ".join(f"{spec.name}: {spec.help}" for spec in QUESTION_TYPES.own())
    return option_group(
        option("--n-generations", "-n", type=click.IntRange(min=1), default=None, help=f"Draft this many questions (from this many chunks, spread across documents, for factoids); asking for more later extends the same sample {_default(stage, '[default: one per chunk]')}."),
        option("--per-chunk", "per_chunk", type=click.IntRange(min=1), default=None if stage else 1, show_default=not stage, help="Question/answer pairs each drafting call asks of its chunk, each pair a draft of its own (factoid and reworded drafts; the other types draft one a call); -n still counts drafts" + (f" {FROM_THE_RUN}." if stage else ".")),
        option("--question-types", "question_types", metavar="TYPE=PERCENT,...", default=None, callback=_question_shares, cls=ListsInstalled, installed=lambda: installed(QUESTION_TYPES), help=f"The question types to draft and their shares of the drafts in percent, adding up to 100, e.g. factoid=60,multi_hop=20,unanswerable=10,reworded=10; a bare name is the whole mix (multi_hop: multi_hop=100); each type once. The types: {types} {_default(stage, '[default: factoid=100]')}."),
        option("--pair-embeddings", metavar="SPEC", default=None, callback=_none_if_off, help=f"Embeddings model that pairs the passages of multi-hop questions by meaning: local (the dense extra's bundled all-MiniLM-L6-v2, offline), a model folder, or provider:model. Rare shared terms find the candidates (a shared name, option or command); the embeddings choose among them the one closest in meaning, skipping near-duplicates. It changes the sample, so a run keeps the pairing it drafted with {_default(stage, '[default: none, rare terms alone]')}."),
    )  # fmt: skip


# A build to a target size (`BuildConfig.target`): `build` alone drafts in rounds.
target_options = option_group(
    option("--target", type=click.IntRange(min=1), default=None, help="Keep this many questions, split among the question types by their shares: draft in rounds, each sized by the share of drafts that passed so far, until every type has its share, --max-drafts drafts are made or --max-cost is spent; a shortfall is said in one sentence (exit 0). Not with --n-generations [default: none, keep what passes of --n-generations drafts]."),
    option("--max-drafts", type=click.IntRange(min=1), default=None, help="With --target: make at most this many drafts, all question types together [default: 4 x --target]."),
)  # fmt: skip


def _question_shares(ctx: click.Context, param: click.Parameter, value: str | None) -> dict[str, int] | None:
    if value is None:
        return None
    try:
        shares = parse_shares(value)
        check_shares(shares)
    except QagenError as exc:
        raise click.BadParameter(str(exc)) from None
    return shares


def generator_options(*, stage: bool) -> OptionGroup:
    """The generator's model and server (a stage command on a run made by `qagen stage chunk` fixes them)."""
    model = (
        f"[default: the run's; {DEFAULT_MODEL} on a run made by `qagen stage chunk`]"
        if stage
        else f"[default: {DEFAULT_MODEL}]"
    )
    base_url = f" {FROM_THE_RUN}" if stage else ""
    key = _default(stage, "[default: OPENAI_API_KEY for openai:* models]")
    temperature = _default(stage, "[default: the model's own]")
    cap = _default(stage, "[default: 2048, room for a reasoning model's thinking]")
    return option_group(
        option("--generator-model", old_flag="--model", default=DEFAULT_MODEL, help=f"Generator model as LangChain's provider:model, e.g. openai:gpt-4o-mini {model}."),
        option("--base-url", envvar="OPENAI_BASE_URL", default=None, help=f"URL of an OpenAI-compatible server (vLLM, Ollama, llama.cpp, TGI) for --generator-model, and the critics unless --critic-base-url, e.g. http://localhost:8000/v1{base_url} [env: OPENAI_BASE_URL]"),
        option("--api-key-env", metavar="VAR", default=None, callback=variable_name, help=f"Name of the environment variable holding the key for --generator-model (and the critics unless --critic-api-key-env), not the key {key}."),
        option("--temperature", type=float, default=None, help=f"Sampling temperature, for generator and critics {temperature}."),
        option("--max-output-tokens", type=click.IntRange(min=1), default=None, help=f"Cap on tokens per reply, for generator and critics; a reply cut at the cap is recorded as truncated {cap}."),
    )  # fmt: skip


def critic_model_options(*, stage: bool) -> OptionGroup:
    """The critics' model and server; each falls back to the generator's when not given."""
    inherit = "[default: the run's; on a run not critiqued yet, the generator's]" if stage else ""
    return option_group(
        option("--critic-model", default=None, help=f"Model of the critics {inherit or '[default: --generator-model]'}."),
        option("--critic-base-url", envvar="QAGEN_CRITIC_BASE_URL", default=None, help=f"URL of the critics' server {inherit or '[default: --base-url]'} [env: QAGEN_CRITIC_BASE_URL]."),
        option("--critic-api-key-env", metavar="VAR", default=None, callback=variable_name, help=f"Name of the environment variable holding the critics' key {inherit or '[default: --api-key-env]'}."),
        option("--critic-temperature", type=float, default=None, help=f"The critics' own sampling temperature {inherit or '[default: --temperature]'}."),
        option("--critic-max-output-tokens", type=click.IntRange(min=1), default=None, help=f"The critics' own cap on tokens per reply {inherit or '[default: --max-output-tokens]'}."),
    )  # fmt: skip


def audience_option(*, stage: bool) -> OptionGroup:
    new_run = f"[default: {DEFAULT_AUDIENCE}]"
    default = f"[default: the run's; on a run not critiqued yet: {DEFAULT_AUDIENCE}]" if stage else new_run
    return option_group(
        option("--audience", default=DEFAULT_AUDIENCE, help=f"Who the questions should be useful to; the relevance critic rates usefulness to them {default}."),
    )  # fmt: skip


def _critic_names(ctx: click.Context, param: click.Parameter, value: tuple[str, ...]) -> tuple[str, ...]:
    try:
        return tuple(check_name(name) for name in value)
    except QagenError as exc:
        raise click.BadParameter(str(exc)) from None


def prompts_option(*, stage: bool) -> OptionGroup:
    bundled = ", ".join(
        [
            *(f"{spec.draft_prompt}.txt" for spec in QUESTION_TYPES.own() if spec.prompt_folder is None),
            *(f"{spec.prompt}.txt" for spec in CRITICS.own() if spec.prompt_folder is None),
        ]
    )
    return option_group(
        option("--prompts", "prompts_dir", metavar="DIR", type=UserPath(file_okay=False), default=None, help=f"Folder of your own prompt files, named as the bundled ones ({bundled}), with the same placeholders; each file found replaces the bundled prompt, the others stay {_default(stage, '[default: the bundled prompts]')}."),
    )  # fmt: skip


def vetting_option(*, stage: bool) -> OptionGroup:
    """Which critics vet the drafts (`BuildConfig.vetting`)."""
    return option_group(
        option("--vetting", type=click.Choice(["checks", "cookbook"]), default=None if stage else "checks", help=f"Which critics vet the drafts: checks, two yes/no checks read as probabilities (clear: the question says what it is about; supported: the answer is right and in the passage) and a reader for multi-hop and unanswerable drafts, which agree with a reviewer far better when the critic is a small local model; cookbook, the notebook's three 1-5 critics (groundedness, relevance, standalone) {_default(stage, '[default: checks]')}."),
    )  # fmt: skip


def own_critics_option(*, stage: bool) -> OptionGroup:
    """Critics of the run's own, each a prompt file in --prompts (`BuildConfig.critics`)."""
    return option_group(
        option("--critic", "critics", metavar="NAME", multiple=True, callback=_critic_names, cls=ListsInstalled, installed=lambda: installed(BUNDLED_OPT_IN), help=f"Another critic, repeatable: a bundled one (clear, supported, reader) or one of your own, the prompt file critique_NAME.txt in --prompts, in the critics' protocol (Evaluation: ... Total rating: N), reading {{question}} and any of {{context}}, {{audience}}; asked after the others, kept at --min-score {_default(stage, '[default: none]')}."),
    )  # fmt: skip


# --- settings of each invocation: the default shown applies every time ------------------------------
_CALL_OPTIONS = (
    option("--concurrency", type=click.IntRange(min=1), default=16, show_default=True, help="LLM calls in flight at once, all models together."),
    option("--rpm", type=click.FloatRange(min=0, min_open=True), default=None, help="Requests-per-minute limit, all models together (default: none)."),
    option("--max-retries", type=click.IntRange(min=0), default=6, show_default=True, help="Retries per call on 429, 5xx, timeouts and dropped connections, with backoff honouring Retry-After."),
    option("--timeout", type=click.FloatRange(min=0, min_open=True), default=120.0, show_default=True, help="Seconds to wait for one reply."),
    option("--max-failure-rate", type=click.FloatRange(0, 1), default=0.5, show_default=True, help="Stop when more than this share of calls fails even after retries (checked after 20 calls)."),
)  # fmt: skip
# How fast a command may call its models: the same for every command and shared by all its models.
call_options = option_group(*_CALL_OPTIONS)
all_critics_option = option_group(
    option("--all-critics", is_flag=True, default=False, help="Ask every critic even after one has rejected a draft (full rationales, more calls)."),
)  # fmt: skip


def _threshold_option(spec: CriticSpec) -> OptionSpec:
    default = "--min-score" if spec.threshold is None else str(spec.threshold)
    return option(
        f"--min-{spec.name.replace('_', '-')}",
        f"min_{spec.name}",
        type=click.IntRange(1, 5),
        default=None,
        help=f"Keep a draft when the {spec.name} critic ({spec.help}) scores at least this [default: {default}].",
    )


def _critic_thresholds(ctx: click.Context, param: click.Parameter, value: tuple[str, ...]) -> dict[str, int] | None:
    """`--min-critic NAME=SCORE ...` as {NAME: SCORE} (None when not given)."""
    thresholds: dict[str, int] = {}
    for given in value:
        name, _, score = given.partition("=")
        if not score.strip().isdigit() or not 1 <= int(score) <= 5:
            raise click.BadParameter(f"{given!r}: write NAME=SCORE with a score 1-5, e.g. specificity=4.")
        try:
            thresholds[check_name(name.strip())] = int(score)
        except QagenError as exc:
            raise click.BadParameter(str(exc)) from None
    return thresholds or None


def _check_cuts(ctx: click.Context, param: click.Parameter, value: tuple[str, ...]) -> dict[str, float] | None:
    """`--cut NAME=VALUE ...` as {NAME: VALUE} (None when not given); the build's settings say which
    checks take a cut."""
    cuts: dict[str, float] = {}
    for given in value:
        name, _, cut = given.partition("=")
        try:
            number = float(cut)
        except ValueError:
            number = float("nan")
        if not 0 < number < 1:
            raise click.BadParameter(f"{given!r}: write NAME=VALUE with a value between 0 and 1, e.g. supported=0.8.")
        try:
            cuts[check_name(name.strip())] = number
        except QagenError as exc:
            raise click.BadParameter(str(exc)) from None
    return cuts or None


THRESHOLD_OPTIONS: tuple[str, ...] = ("min_score", *(f"min_{spec.name}" for spec in CRITICS), "min_critic", "cut")
"""The options that set what a check's measurement is held to: `--min-score`, one per registered 1-5
critic, `--min-critic NAME=SCORE` for any 1-5 critic (a run's own ones have no option of their own), and
`--cut NAME=VALUE` for a yes/no or reader check."""
# Which drafts are kept; in `critique` they also decide which critics are asked (a low score stops them).
threshold_options = option_group(
    option("--min-score", type=click.IntRange(1, 5), default=4, show_default=True, help="Keep a draft when every 1-5 critic's rating is at least this (`--vetting cookbook`; the yes/no checks have cuts: --cut)."),
    *(_threshold_option(spec) for spec in CRITICS),
    option("--min-critic", "min_critic", metavar="NAME=SCORE", multiple=True, callback=_critic_thresholds, help="Keep a draft when the critic NAME scores at least SCORE, for any critic, your own (--critic) included; repeatable."),
    option("--cut", "cut", metavar="NAME=VALUE", multiple=True, callback=_check_cuts, help="Keep a draft when the yes/no check NAME's P(yes), read from the token probabilities, is at least VALUE (a reader check: its answer's agreement with the draft's), e.g. supported=0.8 [defaults: supported 0.7, clear 0.6, reader 0.5]; repeatable."),
    option("--max-answer-chars", type=click.IntRange(min=1), default=300, show_default=True, help="A draft with a longer answer is no factoid: rejected as answer_too_long, not critiqued (the notebook's limit); a multi-hop answer, composed from a factoid's of each passage, may have this per passage."),
    option("--max-question-chars", type=click.IntRange(min=1), default=500, show_default=True, help="A draft with a longer question is rejected as question_too_long, not critiqued."),
)  # fmt: skip


# Certified acceptance (`qagen.review.certify`): read when filtering, not when choosing which critics to ask.
certify_options = option_group(
    option("--precision", type=click.FloatRange(0, 1, min_open=True, max_open=True), default=None, help="Keep the drafts above the lowest score (--certify-on) at which the labels of the kept sample (qagen review RUN --sample kept) certify that at least this share of the kept questions are ones a reviewer keeps, with --confidence; no LLM call [default: no certification]."),
    option("--confidence", type=click.FloatRange(0, 1, min_open=True, max_open=True), default=0.9, show_default=True, help="The confidence of a certified --precision."),
    option("--certify-on", type=click.Choice(["auto", "supported", "predicted_keep"]), default="supported", show_default=True, help="The score a certified --precision thresholds: supported (the check's P(yes)), predicted_keep (the combined score of the checks and the no-call signals; its gain over supported is not established), or auto (the combined score when the candidates have it)."),
)  # fmt: skip


def _none_if_off(_ctx: click.Context, _param: click.Parameter, value: str | None) -> str | None:
    return None if value is None or value.strip().lower() in {"", "none", "off"} else value.strip()


def _check_names(_ctx: click.Context, _param: click.Parameter, value: str | None) -> tuple[str, ...] | None:
    if value is None:
        return None
    names = tuple(name.strip() for name in value.split(",") if name.strip())
    if names in {("none",), ("off",)}:
        return ()
    unknown = [name for name in names if name not in FREE_CHECK_NAMES]
    if unknown:
        raise click.BadParameter(f"unknown check {', '.join(unknown)}; choose from {', '.join(FREE_CHECK_NAMES)}.")
    return names


dedup_option = option_group(
    option("--dedup-threshold", type=click.FloatRange(0, 1, min_open=True), default=0.9, show_default=True, help="Questions whose word sets overlap this much (Jaccard) are near-duplicates; the first in sampling order is kept."),
    option("--dedup-embeddings", envvar="QAGEN_DEDUP_EMBEDDINGS", default="local", show_default=True, callback=_none_if_off, help="Embeddings model that finds questions asking the same thing in other words: local (the dense extra's bundled all-MiniLM-L6-v2, offline), a model folder, or provider:model; 'none' for the word-overlap rule only (also used when the dense extra is not installed) [env: QAGEN_DEDUP_EMBEDDINGS]."),
    option("--semantic-dedup-threshold", type=click.FloatRange(0, 1, min_open=True), default=0.8, show_default=True, help="Cosine similarity of two questions' embeddings from which they ask the same thing; the first in sampling order is kept."),
)  # fmt: skip
# The checks a draft passes before any critic is asked (`qagen.generation.checks`): no call, no cost.
check_options = option_group(
    option("--free-checks", default=None, callback=_check_names, help=f"The free checks that reject a draft before any critic, comma-separated, or 'none': {', '.join(FREE_CHECK_NAMES)} [default: {', '.join(c.name for c in FREE_CHECKS if c.default_on)}]."),
    option("--evidence-check/--no-evidence-check", "check_evidence", default=True, show_default=True, help="Reject a draft whose quoted evidence sentence (or, without one, whose answer) is not in its chunk, as evidence_not_found, before any critic."),
    option("--max-copied-share", type=click.FloatRange(0, 1, min_open=True), default=None, help="Reject a draft as too_close when more than this share of its question's content words are its chunk's [default: no bound]."),
)  # fmt: skip
cap_options = option_group(
    option("--max-tokens", type=click.IntRange(min=1), default=None, help="Stop cleanly once the run directory has spent this many tokens (re-run with a higher cap to continue)."),
    option("--max-cost", type=click.FloatRange(min=0, min_open=True), default=None, help="Stop cleanly once the run has spent this many dollars (needs a known price or --price-input/--price-output)."),
)  # fmt: skip


def price_options(*, stage: bool) -> OptionGroup:
    return option_group(
        option("--price-input", type=click.FloatRange(min=0), default=None, help=f"Dollars per million input tokens, for cost reports and --max-cost {_default(stage, '[default: known OpenAI prices]')}."),
        option("--price-output", type=click.FloatRange(min=0), default=None, help=f"Dollars per million output tokens {_default(stage, '[default: known OpenAI prices]')}."),
        option("--price-cached-input", type=click.FloatRange(min=0), default=None, help=f"Dollars per million cached input tokens, the part of a prompt the provider read from its prompt cache {_default(stage, '[default: the known cached price, else the input price]')}."),
    )  # fmt: skip


# Left out of --help (a config key): how each draft's calls are laid out for a server's prefix cache.
shared_prefix_option = option_group(
    option("--shared-prefix/--no-shared-prefix", "shared_prefix", default=False, show_default=True, help="Open every call about a draft that reads its passages with them, and give a free call slot to the draft taken first, so a server's prefix cache reads each draft's passages once; off by default, as a small model drafted worse questions so."),
)  # fmt: skip
dry_run_option = option_group(
    option("--dry-run", is_flag=True, default=False, help="Chunk and sample, then print the expected calls, tokens and cost; make no LLM call."),
)  # fmt: skip
# Not a setting of the build: what to do, this once, about a corpus that changed under the run.
update_corpus_option = option(
    "--update-corpus",
    is_flag=True,
    default=False,
    help="When the corpus changed since --out was chunked (files edited, added or removed), chunk it "
    "again and draw a new sample instead of refusing; replies for chunks that did not change are "
    "reused, not paid again.",
)
batch_options = option_group(
    option("--batch", is_flag=True, default=False, help="Send the LLM calls in rounds through the OpenAI Batch API: half the price, results within 24 hours instead of minutes. Re-running the same command polls the same batches."),
    option("--no-wait", "no_wait", is_flag=True, default=False, help="With --batch: submit the next round (or check the running one) and exit at once with code 4; run the same command again later to go on."),
    option("--batch-poll", "batch_poll", type=click.FloatRange(min=0), default=10.0, show_default=True, help="With --batch: seconds before the second poll of a batch; the wait doubles after each poll, up to 5 minutes."),
)  # fmt: skip
output_options = option_group(
    option("--quiet", "-q", is_flag=True, default=False, help="No progress bars."),
)

# Every option of every build command, as each command takes them.
BUILD_OPTIONS = option_group(
    corpus_options, chunk_options, sample_options(stage=False), target_options, generator_options(stage=False),
    critic_model_options(stage=False), call_options, audience_option(stage=False), all_critics_option,
    threshold_options, certify_options, check_options, dedup_option, prompts_option(stage=False), vetting_option(stage=False),
    own_critics_option(stage=False), shared_prefix_option,
    cap_options, price_options(stage=False), dry_run_option,
)  # fmt: skip
CHUNK_OPTIONS = option_group(corpus_options, chunk_options)
GENERATE_OPTIONS = option_group(
    sample_options(stage=True), generator_options(stage=True), prompts_option(stage=True), call_options,
    cap_options, price_options(stage=True),
)  # fmt: skip
CRITIQUE_OPTIONS = option_group(
    critic_model_options(stage=True), audience_option(stage=True), prompts_option(stage=True),
    vetting_option(stage=True), own_critics_option(stage=True), call_options, all_critics_option, threshold_options, check_options, cap_options,
    price_options(stage=True),
)  # fmt: skip
FILTER_OPTIONS = option_group(threshold_options, certify_options, check_options, dedup_option)
EXPORT_OPTIONS = option_group(
    sample_options(stage=True), generator_options(stage=True), critic_model_options(stage=True),
    audience_option(stage=True), prompts_option(stage=True), all_critics_option, threshold_options,
)  # fmt: skip


def batch_from_options(options: dict[str, Any]) -> Any:
    """The `BatchOptions` the batch flags ask for (None: online), taking those flags out of `options`."""
    batch, no_wait, poll = options.pop("batch"), options.pop("no_wait"), options.pop("batch_poll")
    if not batch:
        if no_wait:
            raise click.UsageError("--no-wait goes with --batch.")
        return None
    from qagen.runs.batch.rounds import BatchOptions

    return BatchOptions(wait=not no_wait, poll_seconds=poll, max_poll_seconds=max(poll, 300.0))


def require_out_and_corpus(out: Path | None, options: dict[str, Any]) -> Path:
    """`out`, once it and a corpus, which `build` needs, are given; else a usage error naming their
    config-file keys too (a starter file from `qagen init` leaves both to be set)."""
    if out is None:
        raise click.UsageError(
            "Missing --out: give the run directory as --out DIR, or as `out` in the [build] table of the --config file."
        )
    if options.get("corpus") is None and options.get("hf_dataset") is None:
        raise click.UsageError(
            "Missing the corpus: give CORPUS (a file or folder) or --hf-dataset, or set `path` (or `hf_dataset`) in "
            "the [corpus] table of the --config file."
        )
    return out
