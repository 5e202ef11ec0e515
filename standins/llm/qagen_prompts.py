"""qagen's prompts as the stand-in LLM knows them, without ever importing qagen.

The stand-ins run on the standard library alone (CI starts this server before anything is installed,
and a user may start it with any Python). So qagen's registries are read only when qagen has loaded
them in this very process (the tests that run the stand-in in-process, where a critic or grader
registered while it runs must be recognised; the registries bring installed packages' extensions
too). Otherwise the prompts are prompt files, named by the rules the registries follow: qagen's
bundled files, and those of the installed packages that bring qagen extensions (entry points of a
group `qagen.<kind>`, as `qagen.registry` reads them), found without importing them:

- a critic's prompt is ``critique_<critic>.txt``; a question type's own variant of a critic's prompt
  is ``critique_<critic>_<variant>.txt`` (``critique_groundedness_multi_hop.txt`` is the groundedness
  critic's, as `qagen.question_types` asks it; ``critique_reader_corpus.txt`` the reader's);
- a grader or judge of two prompts is ``grader_<name>_system.txt`` / ``judge_<name>_system.txt`` (its
  instructions) beside ``grader_<name>.txt`` / ``judge_<name>.txt`` (its data sections).

`tests/standins/test_standalone.py` checks that both ways name every bundled critic and grader alike.
"""

from __future__ import annotations

import sys
from functools import cache
from importlib.metadata import distributions
from importlib.util import find_spec
from pathlib import Path

__all__ = [
    "BUNDLED_PROMPTS",
    "critic_prompts",
    "file_critic_prompts",
    "file_judge_prompts",
    "installed_prompt_folders",
    "judge_prompts",
    "prompt_folders",
]

BUNDLED_PROMPTS = Path(__file__).resolve().parents[2] / "prompts"
"""qagen's prompt files in the repository."""

ENTRY_POINT_GROUPS = "qagen."
"""The prefix of the entry-point groups an installed package brings qagen extensions by
(`qagen.registry.ENTRY_POINT_PREFIX`, not imported: the stand-in never imports qagen)."""

_CRITIC_PREFIX = "critique_"
_JUDGE_PREFIXES = ("grader_", "judge_")


def critic_prompts() -> list[tuple[str, str]]:
    """Each critic prompt's text with its critic's name: from qagen's registries when this process
    has loaded them, else from the prompt files (`file_critic_prompts`)."""
    critics, types = sys.modules.get("qagen.critics"), sys.modules.get("qagen.question_types")
    if critics is None or types is None:
        return file_critic_prompts()
    specs = (*critics.CRITICS, *critics.BUNDLED_OPT_IN)
    texts = {(spec.name, spec.prompt): critics.default_prompt(spec).text for spec in specs}
    for question_type in types.QUESTION_TYPES:
        for own in question_type.own_critics:
            texts[own.name, own.prompt] = critics.default_prompt(own).text
        for critic in question_type.critics:
            if critic.prompt is not None:
                texts[critic.name, critic.prompt] = question_type.load_prompt(critic.prompt).text
    return [(name, text) for (name, _), text in texts.items()]


def judge_prompts() -> list[tuple[str, str]]:
    """The user prompt of every LLM metric of two prompts (instructions, then data), with the metric's
    name: from qagen's registry when this process has loaded it, else the prompt files."""
    registry = sys.modules.get("qagen.evaluate.judges.registry")
    if registry is None:
        return file_judge_prompts()
    return [(spec.name, spec.load_prompts()[-1].text) for spec in registry.LLM_METRICS if len(spec.prompts) == 2]


def prompt_folders() -> tuple[Path, ...]:
    """The folders whose prompt files the stand-in reads: qagen's bundled prompts, then installed packages'."""
    return (BUNDLED_PROMPTS, *installed_prompt_folders())


@cache
def installed_prompt_folders() -> tuple[Path, ...]:
    """Every folder holding a critic's or grader's prompt file inside the top-level packages of the
    installed distributions that bring qagen extensions, found without importing them. Found once per
    process: a package installed while the stand-in runs is seen when it is started again."""
    folders: dict[Path, None] = {}
    for distribution in distributions():
        points = [point for point in distribution.entry_points if point.group.startswith(ENTRY_POINT_GROUPS)]
        for module in sorted({point.value.split(":")[0].split(".")[0].strip() for point in points}):
            spec = find_spec(module)  # a top-level name: located, not imported
            locations = spec.submodule_search_locations if spec is not None else None
            for location in locations or ():
                for path in sorted(Path(location).rglob("*.txt")):
                    folder = path.parent.resolve()
                    if path.name.startswith((_CRITIC_PREFIX, *_JUDGE_PREFIXES)) and folder != BUNDLED_PROMPTS:
                        folders.setdefault(folder)
    return tuple(folders)


def file_critic_prompts() -> list[tuple[str, str]]:
    """The critic prompt files of every folder of `prompt_folders`, each with its critic's name (see the
    module): a file that extends another critic's name with a variant is that critic's."""
    files = [path for folder in prompt_folders() for path in sorted(folder.glob(f"{_CRITIC_PREFIX}*.txt"))]
    names = {path.stem.removeprefix(_CRITIC_PREFIX) for path in files}
    found: list[tuple[str, str]] = []
    for path in files:
        stem = path.stem.removeprefix(_CRITIC_PREFIX)
        # The longest other critic's name this one extends with a variant (`groundedness_multi_hop`).
        base = max((name for name in names if stem.startswith(f"{name}_")), key=len, default=stem)
        found.append((base, path.read_text(encoding="utf-8")))
    return found


def file_judge_prompts() -> list[tuple[str, str]]:
    """The graders' and judges' user prompts of every folder of `prompt_folders` (see the module), each
    with its metric's name."""
    found: list[tuple[str, str]] = []
    for folder in prompt_folders():
        for system in sorted(folder.glob("*_system.txt")):
            stem = system.stem.removesuffix("_system")
            prefix = next((prefix for prefix in _JUDGE_PREFIXES if stem.startswith(prefix)), None)
            user = system.with_name(f"{stem}.txt")
            if prefix is not None and user.is_file():
                found.append((stem.removeprefix(prefix), user.read_text(encoding="utf-8")))
    return found
