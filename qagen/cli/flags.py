"""Library settings as the CLI names them: `concurrency` is `--concurrency` to whoever typed it.

Library messages name a setting as a Python user knows it, in backticks, and list it in
`QagenError.settings` (see `qagen.errors`). A CLI user set it with a flag, so the CLI shows the flag.
The flags of the settings a config key sets come from the options the keys are declared with
(`qagen.cli.config_keys`), so a new or renamed key needs no entry here; the few settings of no key
(an action, a secret, a command's own switch) and those whose library name differs from the option's
parameter are listed by hand (a test checks that each is a flag of some command).
"""

from __future__ import annotations

import functools
import re
from collections.abc import Iterable

import click

from qagen.cli.config_file import config_origins
from qagen.cli.config_keys import config_keys

# Library settings set by a click parameter of another name.
_RENAMED: dict[str, str] = {
    "k": "--k",  # the click parameter is `k_values`: the CLI takes a list (a grid) of k
    "retriever": "--baseline",  # `rag_baseline(retriever=...)`: the CLI names the baseline by its retriever
    "license": "--license",  # `license_id`, so as not to shadow the built-in
    "judge": "--judge-model",  # `evaluate(judge=ModelSettings(...))`
    "reader": "--reader-model",  # `EvalConfig.reader`: the model that answers for the baseline
    "generator": "--generator-model",  # `BuildConfig.generator`
    "model": "--generator-model",  # a model the server does not know: in `qagen evaluate`, `--reader-model`
    "critic": "--critic-model",  # `BuildConfig.critic`
    "min_scores": "--min-critic",  # `BuildConfig.min_scores`: any critic's threshold, as NAME=SCORE
    "cuts": "--cut",  # `BuildConfig.cuts`: a yes/no or reader check's cut, as NAME=VALUE
}
# Settings of no config key: what to do this once, a secret, a command's own choice.
NOT_KEY_FLAGS: dict[str, str] = {
    "token": "--token",  # a secret: HF_TOKEN or the flag, never a file
    "update_corpus": "--update-corpus",
    "update_corpus=True": "--update-corpus",
    "force": "--force",
    "force=True": "--force",
    "chart": "--chart",
    "metric": "--metric",
    "size": "--size",
}
# A setting given one value that a flag stands for as a whole (a flag that turns a setting off).
_VALUED: dict[str, str] = {
    "private=False": "--public",
    "allow_calls=False": "--no-calls",  # qagen review: the critics the early stop skipped are not asked
}


@functools.cache
def setting_flags() -> dict[str, str]:
    """Every setting with a flag, as setting name -> flag, e.g. {"base_url": "--base-url", ...}.

    Raises AssertionError when two keys of one parameter have different flags: a setting would then
    be shown as the wrong one of them (a bug in the CLI, never the user's input).
    """
    flags: dict[str, str] = {}
    for key in config_keys():
        option = key.option()
        if option.name is None or not key.spec.flag.startswith("--"):
            continue  # an argument (CORPUS, DATASET): a setting named by its place, not a flag
        flag = key.spec.flag
        if flags.setdefault(option.name, flag) != flag:
            raise AssertionError(f"option {option.name!r} is both {flags[option.name]} and {flag}")
        if getattr(option, "is_bool_flag", False) and not getattr(option, "secondary_opts", ()):
            flags[f"{option.name}=True"] = flag  # "`batch=True`" is "--batch"
    return {**flags, **NOT_KEY_FLAGS, **_RENAMED, **_VALUED}


def in_cli_terms(message: str, settings: Iterable[str]) -> str:
    """`message` with each backticked setting of `settings` shown as the user gave it.

    "`concurrency`" becomes "--concurrency", "`max_tokens=8,000`" "--max-tokens 8,000", and
    "`force=True`" "--force". A setting the running command took from `--config` or `--set` is named
    by its key and where it was: "`chunking.chunk_overlap` in qagen.toml", "`budget.max_tokens = 8,000`
    (--set)". A setting with no flag keeps its name, backticks included.
    """
    context = click.get_current_context(silent=True)
    flags = setting_flags()
    if context is not None and context.command.name == "evaluate":
        flags = {**flags, "model": "--reader-model"}  # the model an evaluation's options name is the reader's
    origins = config_origins(context)

    def replace(match: re.Match[str]) -> str:
        setting, value = match.group(1), match.group(2)
        if value is not None and f"{setting}={value}" in flags:
            return flags[f"{setting}={value}"]
        if setting not in flags:
            return match.group(0)
        flag = flags[setting]
        if flag in origins:
            key, where = origins[flag]
            named = f"`{key}`" if value is None else f"`{key} = {value}`"
            return f"{named} ({where})" if where == "--set" else f"{named} in {where}"
        return flag if value is None else f"{flag} {value}"

    for setting in settings:
        message = re.sub(rf"`({re.escape(setting)})(?:=([^`]*))?`", replace, message)
    return message
