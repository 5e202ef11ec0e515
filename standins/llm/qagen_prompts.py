"""qagen's prompts as the stand-in LLM knows them, without ever importing qagen.

The stand-ins run on the standard library alone (CI starts this server before anything is installed,
and a user may start it with any Python). So qagen's registries are read only when qagen has loaded
them in this very process (the tests that run the stand-in in-process, where a critic or grader
registered while it runs must be recognised); otherwise the prompts are the repository's bundled
prompt files, named by the rules their registries follow:

- a critic's prompt is ``critique_<critic>.txt``; a question type's own variant of a critic's prompt
  is ``critique_<critic>_<variant>.txt`` (``critique_groundedness_multi_hop.txt`` is the groundedness
  critic's, as `qagen.question_types` asks it);
- a grader or judge of two prompts is ``grader_<name>_system.txt`` / ``judge_<name>_system.txt`` (its
  instructions) beside ``grader_<name>.txt`` / ``judge_<name>.txt`` (its data sections).

`tests/standins/test_standalone.py` checks that both ways name the same prompts alike.
"""

from __future__ import annotations

import sys
from pathlib import Path

__all__ = ["BUNDLED_PROMPTS", "bundled_critic_prompts", "bundled_two_prompt_judges", "critic_prompts", "judge_prompts"]

BUNDLED_PROMPTS = Path(__file__).resolve().parents[2] / "prompts"
"""qagen's prompt files in the repository."""

_JUDGE_PREFIXES = ("grader_", "judge_")


def critic_prompts() -> list[tuple[str, str]]:
    """Each critic prompt's text with its critic's name: from qagen's registries when this process
    has loaded them, else from the bundled files (`bundled_critic_prompts`)."""
    critics, types = sys.modules.get("qagen.critics"), sys.modules.get("qagen.question_types")
    prompts = sys.modules.get("qagen.llm.prompts")
    if critics is None or types is None or prompts is None:
        return bundled_critic_prompts()
    specs = (*critics.CRITICS, *critics.BUNDLED_OPT_IN)
    texts = {(spec.name, spec.prompt): critics.default_prompt(spec).text for spec in specs}
    for question_type in types.QUESTION_TYPES:
        for own in question_type.own_critics:
            texts[own.name, own.prompt] = critics.default_prompt(own).text
        for critic in question_type.critics:
            if critic.prompt is not None:
                texts[critic.name, critic.prompt] = prompts.load_prompt(critic.prompt).text
    return [(name, text) for (name, _), text in texts.items()]


def bundled_critic_prompts() -> list[tuple[str, str]]:
    """The bundled critic prompt files, each with its critic's name (see the module)."""
    files = sorted(BUNDLED_PROMPTS.glob("critique_*.txt"))
    names = {path.stem.removeprefix("critique_") for path in files}
    found: list[tuple[str, str]] = []
    for path in files:
        stem = path.stem.removeprefix("critique_")
        # The longest other critic's name this one extends with a variant (`groundedness_multi_hop`).
        base = max((name for name in names if stem.startswith(f"{name}_")), key=len, default=stem)
        found.append((base, path.read_text(encoding="utf-8")))
    return found


def judge_prompts() -> list[tuple[str, str]]:
    """The user prompt of every LLM metric of two prompts (instructions, then data), with the metric's
    name: from qagen's registry when this process has loaded it, else the bundled files."""
    registry = sys.modules.get("qagen.evaluate.judges.registry")
    if registry is None:
        return bundled_two_prompt_judges()
    return [
        (name, spec.load_prompts()[-1].text) for name, spec in registry.LLM_METRICS.items() if len(spec.prompts) == 2
    ]


def bundled_two_prompt_judges() -> list[tuple[str, str]]:
    """The bundled graders' and judges' user prompts (see the module), each with its metric's name."""
    found: list[tuple[str, str]] = []
    for system in sorted(BUNDLED_PROMPTS.glob("*_system.txt")):
        stem = system.stem.removesuffix("_system")
        prefix = next((prefix for prefix in _JUDGE_PREFIXES if stem.startswith(prefix)), None)
        user = system.with_name(f"{stem}.txt")
        if prefix is not None and user.is_file():
            found.append((stem.removeprefix(prefix), user.read_text(encoding="utf-8")))
    return found
