"""The keys of a `qagen.toml` config file, one entry per key: the library setting it sets and the
option that carries it on each command that reads it.

A key is named as the library names its setting (`chunking.chunk_size` is `ChunkSettings.chunk_size`),
and its type and description are read from that pydantic field where there is one (`BuildConfig`,
`EvalConfig` and the settings they hold); the keys of `qagen evaluate` that choose its system under test
and its grid, no setting of one evaluation, take the option's help. Each option is declared once
(`qagen.cli.options`, `qagen.cli.evaluate_options`): the commands are decorated with it, and a key
reads its flag, default, type and checks from it. Loading a file or a `--set` (`qagen.cli.config_file`)
turns each key into the value of its option, so a key and its flag are one setting: the same checks,
the same defaults, the same place in the run's recorded settings.
"""

from __future__ import annotations

import dataclasses
import functools
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Literal

import click
from pydantic import BaseModel

from qagen.cli.option_spec import OptionGroup, OptionSpec, option_group
from qagen.cli.options import (
    BUILD_OPTIONS,
    CHUNK_OPTIONS,
    CRITIQUE_OPTIONS,
    EXPORT_OPTIONS,
    FILTER_OPTIONS,
    GENERATE_OPTIONS,
    batch_options,
    corpus_argument,
    run_out_option,
)
from qagen.config import BuildConfig
from qagen.corpus.settings import ChunkSettings, CorpusSettings
from qagen.critics import BUNDLED_OPT_IN, CRITICS
from qagen.generation.vetting import READER_AGREEMENT
from qagen.llm.backends import ModelSettings

if TYPE_CHECKING:
    pass

Command = Literal[
    "build", "evaluate", "stage chunk", "stage generate", "stage critique", "stage filter", "batch export"
]
"""A command that reads config keys, as typed after `qagen`."""
ANY_NAME = "*"
"""The name of a key that stands for any name in its table, such as a critic's in `filter.min_scores`:
its option takes each as `NAME=VALUE`."""
BUILD: tuple[Command, ...] = ("build",)
EVALUATE: tuple[Command, ...] = ("evaluate",)
BOTH: tuple[Command, ...] = ("build", "evaluate")


def _evaluate_options() -> OptionGroup:
    from qagen.cli.evaluate_options import EVALUATE_OPTIONS

    return EVALUATE_OPTIONS


class _Options(Mapping["Command", OptionGroup]):
    """Each command's options, the evaluation's read only when asked for: `qagen.cli.evaluate_options`
    imports the evaluation's code, which a build does not run (tests/cli/test_lazy_imports.py)."""

    def __init__(self, options: dict[Command, OptionGroup | Callable[[], OptionGroup]]) -> None:
        self._options = options

    def __getitem__(self, command: Command) -> OptionGroup:
        options = self._options[command]
        if not isinstance(options, OptionGroup):
            options = self._options[command] = options()
        return options

    def __iter__(self) -> Iterator[Command]:
        return iter(self._options)

    def __len__(self) -> int:
        return len(self._options)


COMMAND_OPTIONS: Mapping[Command, OptionGroup] = _Options(
    {
        "build": option_group(corpus_argument, run_out_option, BUILD_OPTIONS, batch_options),
        "evaluate": _evaluate_options,
        "stage chunk": option_group(corpus_argument, CHUNK_OPTIONS),
        "stage generate": GENERATE_OPTIONS,
        "stage critique": CRITIQUE_OPTIONS,
        "stage filter": FILTER_OPTIONS,
        "batch export": EXPORT_OPTIONS,
    }
)
"""The options of each command that read config keys (its others are no setting: `NOT_KEYS`, or a
stage command's run directory). A stage command reads the build's keys of the options it takes."""
STAGE_COMMANDS: tuple[Command, ...] = (
    "stage chunk",
    "stage generate",
    "stage critique",
    "stage filter",
    "batch export",
)


@functools.cache
def command_specs(command: Command) -> dict[str, OptionSpec]:
    """The options `command` takes, by parameter name."""
    return COMMAND_OPTIONS[command].by_param()


@dataclass(frozen=True)
class ConfigKey:
    """One key of the config file."""

    section: str
    """The TOML table it sits in, dotted when nested (`filter.min_scores`)."""
    name: str
    """Its name in the table: the library setting's name."""
    param: str
    """The click parameter of each command in `commands` that carries it."""
    commands: tuple[Command, ...]
    """The commands that read it, `build` or `evaluate` first; the others ignore it, so one file serves all."""
    setting: tuple[type[BaseModel], str] | None = None
    """The pydantic field it sets: its type checks the value and its description documents the key."""
    value_type: Any = None
    """The type of a key with no pydantic field (or of a field stored differently, such as a dict entry)."""
    help: str = ""
    """Its help, instead of the pydantic field's description (or the option's help, for a key with neither)."""
    comma_list: bool = False
    """The option takes a comma-separated list (a grid); the key takes a TOML list, or one value."""
    inherits: str | None = None
    """Where the value comes from when the key is absent, when that is another setting, not a default."""
    example: Any = None
    """A value to show, commented out, in the starter file, for a key with no default."""
    required: str | None = None
    """The command needs it, here or on the command line: what else may stand for it (the starter file says so)."""
    must_exist: bool = False
    """A path that must name something that exists (checked when the file is read, naming the key)."""
    falls_back_to: str | None = None
    """Another key of the same file whose value this key takes when the file leaves it out, so one file
    serves a build and the evaluation of what it built (`evaluate.dataset` takes `build.out`)."""

    @property
    def any_name(self) -> bool:
        return self.name == ANY_NAME

    @property
    def dotted(self) -> str:
        return f"{self.section}.{self.name}"

    @property
    def type(self) -> Any:
        if self.value_type is not None:
            return self.value_type
        assert self.setting is not None, f"{self.dotted} has neither a pydantic field nor a type"
        model, name = self.setting
        return model.model_fields[name].annotation

    @property
    def spec(self) -> OptionSpec:
        """The option that carries the key: the one of the first command that reads it (a stage command's
        differs only in its help and in leaving a run's setting unset)."""
        return command_specs(self.commands[0])[self.param]

    def option(self) -> click.Parameter:
        return self.spec.make()

    def describe(self) -> str:
        """One paragraph of help: the pydantic field's description, else `help`, else the option's help."""
        text = self.help
        if not text and self.setting is not None:
            model, name = self.setting
            text = model.model_fields[name].description or ""
        if not text:
            text = getattr(self.option(), "help", None) or ""
        return " ".join(text.split())

    def default(self) -> Any:
        """The value the command uses when the key is absent (None: not set), as the key would hold it."""
        value = self.option().default
        if callable(value):
            value = value()
        if not isinstance(value, str | int | float | bool):
            return None  # click's marker of an option with no default, or a repeatable option's ()
        if self.comma_list and isinstance(value, str):
            kind = int if "int" in str(self.type) else str
            return [kind(part) for part in value.split(",") if part.strip()]
        return value


_MODEL_EXAMPLES: dict[str, Any] = {
    "spec": "openai:gpt-4o-mini",
    "base_url": "http://localhost:8000/v1",
    "api_key_env": "OPENAI_API_KEY",
    "temperature": 0.0,
    "max_output_tokens": 2048,
}


def _model(
    section: str, params: dict[str, str], commands: tuple[Command, ...], *, inherits: str | None
) -> list[ConfigKey]:
    """A role's model: `params` maps each of its `ModelSettings` fields that has an option to that option."""
    return [
        ConfigKey(
            section,
            name,
            param,
            commands,
            setting=(ModelSettings, name),
            inherits=inherits and f"{inherits}.{name}",
            example=_MODEL_EXAMPLES[name],
        )
        for name, param in params.items()
    ]


# The options of each role's model. The evaluator's models have no temperature option: a verdict
# stored under one temperature would be reused under another (its resume key leaves it out).
_GENERATOR = {"spec": "generator_model", "base_url": "base_url", "api_key_env": "api_key_env"}
_GENERATOR |= {"temperature": "temperature", "max_output_tokens": "max_output_tokens"}
_CRITIC = {field: f"critic_{param}" for field, param in _GENERATOR.items()}
_CRITIC["spec"] = "critic_model"
_READER = {field: param for field, param in _GENERATOR.items() if field != "temperature"}
_READER["spec"] = "reader_model"
_JUDGE = {field: f"judge_{param}" for field, param in _READER.items()}
_JUDGE["spec"] = "judge_model"


def _build_keys() -> list[ConfigKey]:
    corpus = [
        ConfigKey(
            "corpus",
            "path",
            "corpus",
            BUILD,
            setting=(CorpusSettings, "path"),
            example="docs",
            required="or `hf_dataset`, or CORPUS on the command line",
            must_exist=True,
        ),
        ConfigKey(
            "corpus", "hf_dataset", "hf_dataset", BUILD, setting=(CorpusSettings, "hf_dataset"), example="org/name"
        ),
        *(
            ConfigKey("corpus", name, name, BUILD, setting=(CorpusSettings, name), example="source")
            for name in ("split", "text_column", "source_column")
        ),
    ]
    chunking = [
        ConfigKey("chunking", name, name, BUILD, setting=(ChunkSettings, name)) for name in ChunkSettings.model_fields
    ]
    run = [
        ConfigKey("build", "out", "out", BUILD, value_type=str, example="run", required="or --out on the command line"),
        ConfigKey(
            "build", "n_generations", "n_generations", BUILD, setting=(BuildConfig, "n_generations"), example=200
        ),
        ConfigKey("build", "target", "target", BUILD, setting=(BuildConfig, "target"), example=200),
        ConfigKey("build", "max_drafts", "max_drafts", BUILD, setting=(BuildConfig, "max_drafts"), example=800),
        ConfigKey(
            "build",
            "question_types",
            "question_types",
            BUILD,
            value_type=str | dict[str, int],
            help="The question types to draft and their shares of the drafts in percent, adding up to 100, as "
            "`TYPE=PERCENT,...` or a table (`{factoid = 60, multi_hop = 40}`) (factoid, multi_hop, unanswerable, "
            "reworded: `qagen.question_types`), each type once; a bare name is the whole mix (`multi_hop`: "
            "multi_hop=100); default factoid=100.",
            example="factoid=60,multi_hop=20,unanswerable=10,reworded=10",
        ),
        ConfigKey(
            "build",
            "pair_embeddings",
            "pair_embeddings",
            BUILD,
            setting=(BuildConfig, "pair_embeddings"),
            example="local",
        ),
        ConfigKey("build", "seed", "seed", BUILD, setting=(BuildConfig, "seed")),
        ConfigKey("build", "audience", "audience", BUILD, setting=(BuildConfig, "audience")),
        ConfigKey("build", "all_critics", "all_critics", BUILD, setting=(BuildConfig, "all_critics")),
        ConfigKey(
            "build", "prompts_dir", "prompts_dir", BUILD, setting=(BuildConfig, "prompts_dir"), example="my-prompts"
        ),
        ConfigKey("build", "vetting", "vetting", BUILD, setting=(BuildConfig, "vetting"), example="checks"),
        ConfigKey("build", "shared_prefix", "shared_prefix", BUILD, setting=(BuildConfig, "shared_prefix")),
        ConfigKey(
            "build",
            "critics",
            "critics",
            BUILD,
            setting=(BuildConfig, "critics"),
            value_type=list[str],
            example=["specificity"],
        ),
    ]
    generation = [ConfigKey("generation", "per_chunk", "per_chunk", BUILD, setting=(BuildConfig, "per_chunk"))]
    filtering = [
        ConfigKey("filter", name, name, BUILD, setting=(BuildConfig, name))
        for name in ("min_score", "max_answer_chars", "max_question_chars", "dedup_threshold")
    ]
    # Certified acceptance (`qagen.review.certify`): a share of good kept questions, from labels.
    filtering += [
        ConfigKey("filter", "precision", "precision", BUILD, setting=(BuildConfig, "precision"), example=0.9),
        ConfigKey("filter", "confidence", "confidence", BUILD, setting=(BuildConfig, "confidence")),
        ConfigKey("filter", "certify_on", "certify_on", BUILD, setting=(BuildConfig, "certify_on")),
    ]
    # What is checked before any critic (`qagen.generation.checks`), and duplicates by meaning.
    filtering += [
        ConfigKey(
            "filter",
            "free_checks",
            "free_checks",
            BUILD,
            setting=(BuildConfig, "free_checks"),
            value_type=list[str],
            comma_list=True,
            example=["source_pointing", "answer_in_question", "ungrounded_answer"],
        ),
        ConfigKey("filter", "check_evidence", "check_evidence", BUILD, setting=(BuildConfig, "check_evidence")),
        ConfigKey(
            "filter",
            "max_copied_share",
            "max_copied_share",
            BUILD,
            setting=(BuildConfig, "max_copied_share"),
            example=0.9,
        ),
        ConfigKey("filter", "dedup_embeddings", "dedup_embeddings", BUILD, setting=(BuildConfig, "dedup_embeddings")),
        ConfigKey(
            "filter",
            "semantic_dedup_threshold",
            "semantic_dedup_threshold",
            BUILD,
            setting=(BuildConfig, "semantic_dedup_threshold"),
        ),
    ]
    thresholds = [
        ConfigKey(
            "filter.min_scores",
            spec.name,
            f"min_{spec.name}",
            BUILD,
            value_type=int,
            help=f"Keep a draft when the {spec.name} critic ({spec.help}) scores it at least this (1-5)"
            + ("." if spec.threshold is None else f"; its default: {spec.threshold}."),
            inherits="filter.min_score" if spec.threshold is None else None,
            example=spec.threshold or 4,
        )
        for spec in CRITICS
    ]
    # A critic of the run's own has no option of its own: its threshold is one `--min-critic NAME=SCORE`.
    thresholds.append(
        ConfigKey(
            "filter.min_scores",
            ANY_NAME,
            "min_critic",
            BUILD,
            value_type=int,
            help="A critic of your own (`build.critics`), by its name: keep a draft when it scores at least this "
            "(1-5).",
            inherits="filter.min_score",
            example=4,
        )
    )
    # The yes/no and reader checks are held to cuts, one `--cut NAME=VALUE` each.
    defaults = ", ".join(
        f"{spec.name} {spec.yes_at if spec.scale == 'yes_no' else READER_AGREEMENT:g}"
        for spec in BUNDLED_OPT_IN
        if spec.scale != "rating"
    )
    thresholds.append(
        ConfigKey(
            "filter.cuts",
            ANY_NAME,
            "cut",
            BUILD,
            value_type=float,
            help="A yes/no check, by its name: keep a draft when its P(yes), read from the token probabilities, is "
            "at least this (0-1); a reader check: when its answer agrees with the drafted one at least this much. "
            f"Defaults: {defaults}.",
            example=0.8,
        )
    )
    budget = [
        ConfigKey("budget", name, name, BUILD, setting=(BuildConfig, name), example=example)
        for name, example in (
            ("max_tokens", 1_000_000),
            ("max_cost", 5.0),
            ("price_input", 0.15),
            ("price_output", 0.6),
            ("price_cached_input", 0.075),
        )
    ]
    return [
        *corpus,
        *chunking,
        *run,
        *generation,
        *_model("generator", _GENERATOR, BUILD, inherits=None),
        *_model("critic", _CRITIC, BUILD, inherits="generator"),
        *filtering,
        *thresholds,
        *budget,
    ]


def _call_keys() -> list[ConfigKey]:
    """How fast and how the calls go: one setting for every model of a command."""
    return [
        ConfigKey("calls", "concurrency", "concurrency", BOTH, setting=(BuildConfig, "concurrency")),
        ConfigKey("calls", "rpm", "rpm", BOTH, setting=(ModelSettings, "rpm"), example=60.0),
        ConfigKey("calls", "max_retries", "max_retries", BOTH, setting=(ModelSettings, "max_retries")),
        ConfigKey("calls", "timeout", "timeout", BOTH, setting=(ModelSettings, "timeout")),
        ConfigKey("calls", "max_failure_rate", "max_failure_rate", BOTH, setting=(BuildConfig, "max_failure_rate")),
        ConfigKey("calls", "batch", "batch", BOTH, value_type=bool),
        ConfigKey("calls", "batch_poll", "batch_poll", BOTH, value_type=float),
    ]


def _evaluate_keys() -> list[ConfigKey]:
    from qagen.cli.evaluate_options import metrics_option_help
    from qagen.evaluate.config import EvalConfig

    def key(name: str, value_type: Any, param: str | None = None, **extra: Any) -> ConfigKey:
        return ConfigKey("evaluate", name, param or name, EVALUATE, value_type=value_type, **extra)

    def setting(name: str, field: str | None = None, **extra: Any) -> ConfigKey:
        """A key that is one field of `EvalConfig` (named `field` there when that differs)."""
        return ConfigKey("evaluate", name, name, EVALUATE, setting=(EvalConfig, field or name), **extra)

    return [
        setting(
            "dataset",
            "testset",
            value_type=str,
            example="run",
            required="or DATASET on the command line; else the file's `build.out`",
            falls_back_to="build.out",
        ),
        key("out", str, example="eval", required="or --out on the command line"),
        key("answers", str, example="answers.jsonl"),
        key("rag", str, "rag_callable", example="my_rag:answer"),
        key("endpoint", str, example="http://localhost:8080/ask"),
        key("baseline", list[str] | str, comma_list=True, example=["bm25"]),
        key(
            "corpus",
            str,
            example="docs",
            falls_back_to="corpus.path",
            help="The documents the baseline searches (--corpus); when the file leaves it out, its `corpus.path`.",
        ),
        key("chunk_size", list[int] | int, comma_list=True),
        key("k", list[int] | int, "k_values", comma_list=True),
        key("rerank", list[str] | str, comma_list=True),
        key("rerank_top", int),
        key("rerank_url", str, example="http://127.0.0.1:8080", inherits="reader.base_url"),
        # The option's help lists every metric; the field's type is the key's.
        setting("metrics", value_type=list[str] | str, comma_list=True, help=metrics_option_help(installed=False)),
        key("embeddings", list[str] | str, comma_list=True, example=["local"]),
        setting("split"),
        setting("question_column"),
        setting("answer_column", value_type=str, example="answer"),
        setting("interrupt_grace"),
        key("cache_dir", str, example="~/.cache/qagen"),
        *_model("reader", _READER, EVALUATE, inherits=None),
        *_model("judge", _JUDGE, EVALUATE, inherits="reader"),
    ]


def _with_stage_commands(key: ConfigKey) -> ConfigKey:
    """A build key is read too by each stage command that takes its option."""
    if "build" not in key.commands:
        return key
    stages = tuple(command for command in STAGE_COMMANDS if key.param in command_specs(command))
    return dataclasses.replace(key, commands=(*key.commands, *stages))


@functools.cache
def _build_side_keys() -> tuple[ConfigKey, ...]:
    """The keys of the build's tables and of `[calls]`: what a build or a stage command reads."""
    return tuple(_with_stage_commands(key) for key in (*_build_keys(), *_call_keys()))


@functools.cache
def config_keys() -> tuple[ConfigKey, ...]:
    """Every key of the config file, in the order the starter file and the documentation show them.
    The evaluation's are made only here: their types and help are read from the evaluation's code,
    imported then (a build given a config file reads them all, to check each of its tables)."""
    return (*_build_side_keys(), *_evaluate_keys())


@functools.cache
def keys_for(command: Command) -> tuple[ConfigKey, ...]:
    """The keys `command` reads, in `config_keys`' order; a build's or a stage command's without
    making the evaluation's."""
    every = config_keys() if command == "evaluate" else _build_side_keys()
    return tuple(key for key in every if command in key.commands)


@functools.cache
def keys_by_name() -> dict[str, ConfigKey]:
    """Every key by its dotted name."""
    return {key.dotted: key for key in config_keys()}


SECTION_HELP: dict[str, str] = {
    "corpus": "The documents of `qagen build`: a `path`, or a Hugging Face dataset (`hf_dataset`).",
    "chunking": "How `qagen build` cuts the documents into chunks.",
    "build": "The rest of a build: where it goes, the sample, the audience, the prompts.",
    "generation": "How `qagen build` drafts: how many question/answer pairs one call asks of a chunk.",
    "generator": "The model that drafts a question and its answer from each sampled chunk.",
    "critic": "The model of the critics; each key not set is the generator's.",
    "filter": "Which rated drafts `qagen build` keeps.",
    "filter.min_scores": "A 1-5 critic's own minimum score, instead of `filter.min_score`.",
    "filter.cuts": "A yes/no or reader check's cut: what its P(yes) (or a reader's agreement) must reach.",
    "budget": "Spending caps of a build, and the prices they count with.",
    "calls": "How the LLM calls go, for every model of `qagen build` and `qagen evaluate` alike.",
    "evaluate": "`qagen evaluate`: the test set, the system under test, the baseline and the metrics.",
    "reader": "`qagen evaluate`: the model that answers for the bundled baseline.",
    "judge": "`qagen evaluate`: the model of the LLM judges; each key not set is the reader's.",
}

# Options that are no setting of a run, so no key: what to do this once, or where to show it.
NOT_KEYS: dict[str, str] = {
    "config": "names the file itself",
    "dry_run": "an action: estimate instead of running",
    "update_corpus": "an action: this once, accept a corpus that changed under the run",
    "push_repo": "an action: publish the finished run (see `qagen push`)",
    "public": "goes with the publishing action",
    "no_wait": "an action: submit the batches and exit at once, this time",
    "quiet": "how this invocation shows progress",
    "token": "a secret: give it in HF_TOKEN (or your Hub login), never in a file",
}
