"""A build command's options as `BuildConfig`: on a new run, and on a run that a stage command resumes.

Which value an option takes on a stage command (see `qagen.cli.options`):

- `PER_INVOCATION` options take the value `--help` shows (the default unless given) on every
  invocation: an earlier `qagen stage filter --min-score 3` does not make 3 the next command's threshold.
  Those a command does not take are the library's defaults (a cap given to `generate` does not
  limit a later `critique`).
- Every other option is a setting of the run: the run's unless given. The options of a role no
  stage has called yet (`ROLE_OPTIONS`; after `qagen stage chunk`, or `generate` for the critics) count
  in full, defaults included, as for a new run: that stage fixes them.
"""

from __future__ import annotations

from collections.abc import Collection
from pathlib import Path
from typing import Any

import click
from click.core import ParameterSource

from qagen.cli.options import THRESHOLD_OPTIONS
from qagen.config import BUILD_ROLES, BuildConfig, BuildRole
from qagen.llm.backends import DEFAULT_MODEL, ModelSettings

PER_INVOCATION = frozenset(
    {
        *THRESHOLD_OPTIONS, "precision", "confidence", "certify_on", "max_answer_chars", "max_question_chars",
        "all_critics", "dedup_threshold",
        "concurrency", "rpm", "max_retries", "timeout", "max_failure_rate", "max_tokens", "max_cost",
        "free_checks", "check_evidence", "max_copied_share", "dedup_embeddings", "semantic_dedup_threshold",
    }
)  # fmt: skip
# The `BuildConfig` fields of the per-invocation options, and of each model's.
_PER_INVOCATION_FIELDS = (
    "min_score", "min_scores", "cuts", "precision", "confidence", "certify_on", "score_cut",
    "max_answer_chars", "max_question_chars", "all_critics", "dedup_threshold",
    "concurrency", "max_failure_rate", "max_tokens", "max_cost", "free_checks", "check_evidence", "max_copied_share",
    "dedup_embeddings", "semantic_dedup_threshold",
)  # fmt: skip
_PER_INVOCATION_MODEL_FIELDS = ("rpm", "max_retries", "timeout")

# A model setting's option for the generator and for the critics; unset, the critics' is the generator's.
_MODEL_FIELDS = {
    "spec": ("generator_model", "critic_model"),
    "base_url": ("base_url", "critic_base_url"),
    "api_key_env": ("api_key_env", "critic_api_key_env"),
    "temperature": ("temperature", "critic_temperature"),
    "max_output_tokens": ("max_output_tokens", "critic_max_output_tokens"),
}
ROLE_OPTIONS: dict[BuildRole, frozenset[str]] = {
    "generator": frozenset(generator for generator, _ in _MODEL_FIELDS.values()),
    "critic": frozenset({*(critic for _, critic in _MODEL_FIELDS.values()), "audience"}),
}
_CORPUS_KEYS = {
    "corpus": "path",
    "hf_dataset": "hf_dataset",
    "split": "split",
    "text_column": "text_column",
    "source_column": "source_column",
}
_CHUNK_KEYS = {"chunk_size", "chunk_overlap", "length_unit", "encoding"}
_TOP_KEYS = {
    "n_generations", "seed", "audience", "min_score", "all_critics", "dedup_threshold", "max_answer_chars",
    "max_question_chars", "concurrency", "max_failure_rate", "max_tokens", "max_cost", "price_input",
    "price_output", "price_cached_input", "free_checks", "check_evidence", "max_copied_share", "dedup_embeddings",
    "semantic_dedup_threshold", "pair_embeddings", "target", "max_drafts", "shared_prefix", "precision", "confidence",
    "certify_on",
}  # fmt: skip


def config_from_options(
    ctx: click.Context,
    options: dict[str, Any],
    *,
    stored: BuildConfig | None,
    fixed: Collection[BuildRole] = BUILD_ROLES,
) -> BuildConfig:
    """A build's settings: every option for a new run (`stored` None); on a stored run, see the module.

    `fixed` are the roles an LLM stage has already called on the stored run (`RunDir.fixed_roles`).
    """
    if stored is None:
        chosen = dict(options)
        base: dict[str, Any] = {}
        undecided: set[BuildRole] = set(BUILD_ROLES)
    else:
        undecided = set(BUILD_ROLES) - set(fixed)
        counted = PER_INVOCATION.union(*(ROLE_OPTIONS[role] for role in undecided))
        chosen = {key: value for key, value in options.items() if key in counted or _given(ctx, key)}
        base = _with_default_invocation(stored.model_dump(mode="json"))
    fields = _merge(base, _config_fields(chosen))
    _critic_inherits(fields, chosen, stored, critic_undecided="critic" in undecided)
    return BuildConfig.model_validate(fields)


def _given(ctx: click.Context, key: str) -> bool:
    """Set for this command: on the command line, in its environment variable, or by `--config`/`--set`."""
    given = {ParameterSource.COMMANDLINE, ParameterSource.ENVIRONMENT, ParameterSource.DEFAULT_MAP}
    return ctx.get_parameter_source(key) in given


def _with_default_invocation(stored: dict[str, Any]) -> dict[str, Any]:
    """A stored run's settings with the per-invocation ones back at the library's defaults."""
    fields = BuildConfig.model_fields
    reset = dict(stored)
    for name in _PER_INVOCATION_FIELDS:
        reset[name] = fields[name].get_default(call_default_factory=True)
    for role in BUILD_ROLES:
        model = dict(reset[role])
        for name in _PER_INVOCATION_MODEL_FIELDS:
            model[name] = ModelSettings.model_fields[name].get_default()
        reset[role] = model
    return reset


def _config_fields(options: dict[str, Any]) -> dict[str, Any]:
    """Map flat CLI options onto the nested `BuildConfig` fields (only the options present).

    The model options go to their own role; the critics' inheritance is `_critic_inherits`.
    """
    nested: dict[str, Any] = {}
    role_of = {
        option: (role, field)
        for field, pair in _MODEL_FIELDS.items()
        for role, option in zip(BUILD_ROLES, pair, strict=True)
    }
    for key, value in options.items():
        if key in _CORPUS_KEYS:
            nested.setdefault("corpus", {})[_CORPUS_KEYS[key]] = (
                str(value) if key == "corpus" and value is not None else value
            )
        elif key in _CHUNK_KEYS:
            nested.setdefault("chunking", {})[key] = value
        elif key in role_of:
            role, field = role_of[key]
            if role == "generator" or value is not None:
                nested.setdefault(role, {})[field] = value
        elif key in _PER_INVOCATION_MODEL_FIELDS:
            for role in BUILD_ROLES:  # how fast calls go is one setting for both models
                nested.setdefault(role, {})[key] = value
        elif key == "prompts_dir":
            # Absolute, so a stage command run from another folder finds the same files.
            nested[key] = str(Path(value).resolve()) if value is not None else None
        elif key in _TOP_KEYS:
            nested[key] = value
        elif key == "critics":
            nested[key] = list(value)
        elif key in ("question_types", "vetting", "per_chunk"):  # a run's setting: left as it is when not given
            if value is not None:
                nested[key] = value
        elif key == "min_critic":  # `--min-critic NAME=SCORE`, parsed by its option
            nested.setdefault("min_scores", {}).update(value or {})
        elif key == "cut":  # `--cut NAME=VALUE`, parsed by its option
            nested.setdefault("cuts", {}).update(value or {})
        elif key in THRESHOLD_OPTIONS:  # a critic's own: `min_<critic>`
            if value is not None:
                nested.setdefault("min_scores", {})[key[4:]] = value
        else:
            # An option with no place in the settings would be silently ignored: a bug, not input.
            raise AssertionError(f"option {key!r} is not mapped onto BuildConfig")
    return nested


def _critic_inherits(
    fields: dict[str, Any], chosen: dict[str, Any], stored: BuildConfig | None, *, critic_undecided: bool
) -> None:
    """Each model setting of the critics not given their own is the generator's.

    On a run whose critics are fixed, a critic setting equal to the generator's follows the
    generator's when that is given again; one of its own (a server, a key) stays: the critics'
    calls must not move elsewhere because, say, OPENAI_BASE_URL is set for the generator.
    """
    generator = fields.setdefault("generator", {})
    generator.setdefault("spec", DEFAULT_MODEL)
    critic = fields.setdefault("critic", {})
    for field, (generator_option, critic_option) in _MODEL_FIELDS.items():
        if chosen.get(critic_option) is not None:
            continue  # the critics' own, set by `_config_fields`
        if (
            critic_undecided
            or stored is None
            or (generator_option in chosen and getattr(stored.critic, field) == getattr(stored.generator, field))
        ):
            critic[field] = generator.get(field)


# The settings made of settings: an option given sets one of their fields, the others stay. Every
# other setting is one value, replaced whole when given: `--question-types multi_hop=100` is the mix,
# not a change to one share of the stored mix.
_NESTED = frozenset({"corpus", "chunking", *BUILD_ROLES})


def _merge(base: dict[str, Any], update: dict[str, Any]) -> dict[str, Any]:
    merged = dict(base)
    for key, value in update.items():
        nested = key in _NESTED and isinstance(merged.get(key), dict)
        merged[key] = {**merged[key], **value} if nested else value
    return merged
