"""The stand-ins run on the standard library alone, from the repository's root.

CI starts the LLM stand-in before anything is installed (`python -m standins.llm.server` in a bare
virtual environment), and the stand-ins are not in the wheel, so they may import nothing but the
standard library and each other. Both checks run Python with `-S` (no site-packages at all).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parents[2]

# Starts both stand-ins, asks the LLM stand-in to rate a question with qagen's own groundedness
# prompt and to grade an answer with its `correct` grader's, then lists the top-level modules loaded
# from outside the standard library.
_SCRIPT = """
import json, sys, urllib.request
from pathlib import Path
from standins.hub.server import StandInHub
from standins.llm.server import StandInLLM

critique = Path("prompts/critique_groundedness.txt").read_text(encoding="utf-8").format(
    question="Which chunk size is the default?", context="The default chunk size is 2,000 characters.")
grade = Path("prompts/grader_correct.txt").read_text(encoding="utf-8").format(
    question="Which chunk size is the default?", reference_answer="2,000 characters", answer="2,000 characters.")
replies = []
with StandInLLM() as llm, StandInHub() as hub:
    for prompt in (critique, grade):
        body = {"model": "stand-in", "messages": [{"role": "user", "content": prompt}]}
        request = urllib.request.Request(llm.base_url + "/chat/completions", data=json.dumps(body).encode(),
                                         headers={"Content-Type": "application/json"})
        with urllib.request.urlopen(request, timeout=10) as response:
            replies.append(json.load(response)["choices"][0]["message"]["content"])
    kinds = [(entry["kind"], entry.get("criterion")) for entry in llm.log]
outside = sorted({name.split(".")[0] for name in sys.modules} - set(sys.stdlib_module_names) - {"__main__"})
print(json.dumps({"replies": replies, "kinds": kinds, "outside": outside}))
"""


def _bare_environment() -> dict[str, str]:
    return {name: value for name, value in os.environ.items() if name not in {"PYTHONPATH", "PYTHONHOME"}}


def _run_script(*flags: str, env: dict[str, str]) -> dict[str, Any]:
    result = subprocess.run(
        [sys.executable, *flags, "-c", _SCRIPT], cwd=ROOT, env=env, capture_output=True, text=True, timeout=60
    )
    assert result.returncode == 0, result.stderr
    seen: dict[str, Any] = json.loads(result.stdout)
    return seen


def test_the_stand_ins_import_only_the_standard_library_and_themselves() -> None:
    seen = _run_script("-S", env=_bare_environment())
    assert seen["outside"] == ["standins"]
    # Recognised as qagen's critic prompt and as its `correct` grader's, from the prompt files.
    assert [kind for kind, _ in seen["kinds"]] == ["critique", "grader"]
    assert "Total rating:" in seen["replies"][0]
    assert "Grade:" in seen["replies"][1]


def test_the_stand_ins_never_import_qagen_even_where_it_is_installed() -> None:
    """A Python with qagen's dependencies only in part (pydantic but no tqdm) must not matter either:
    the stand-in reads qagen's prompt files, not its modules."""
    seen = _run_script(env={**_bare_environment(), "PYTHONPATH": str(ROOT)})
    assert "qagen" not in seen["outside"] and "pydantic" not in seen["outside"]
    assert [kind for kind, _ in seen["kinds"]] == ["critique", "grader"]


class _Filled(dict[str, str]):
    """A prompt's placeholders filled with sample text, whatever they are."""

    def __missing__(self, key: str) -> str:
        return f"Sample {key} text."


def _criteria(prompts: list[tuple[str, str]]) -> list[tuple[str, str | None]]:
    """Each critic prompt's critic, and the criterion the stand-in reads from it filled in."""
    from standins.llm.prompt_recognition import classify_prompt

    return sorted((name, classify_prompt(text.format_map(_Filled())).criterion) for name, text in prompts)


def test_the_prompt_files_name_the_critics_and_graders_as_qagen_does(monkeypatch: pytest.MonkeyPatch) -> None:
    """The files' naming rules (`standins.llm.qagen_prompts`) tell every bundled critic (the question
    types' own among them: needs_both, first_alone, second_alone, and the prompts types ask qagen's
    critics with) and every grader apart exactly as qagen's registries do, when this process has loaded
    them; and the stand-in names each critic prompt's critic either way."""
    import qagen.evaluate.judges.registry  # noqa: F401  (loaded: the stand-in reads its graders)
    from qagen.critics import BUNDLED_OPT_IN, CRITICS
    from qagen.question_types import QUESTION_TYPES
    from standins.llm.eval_replies import grader_layouts
    from standins.llm.prompt_recognition import critic_phrases
    from standins.llm.qagen_prompts import critic_prompts

    critics = {spec.name for spec in (*CRITICS, *BUNDLED_OPT_IN)}
    for question_type in QUESTION_TYPES:
        critics |= {own.name for own in question_type.own_critics} | {critic.name for critic in question_type.critics}
    assert {"needs_both", "first_alone", "second_alone", "reader", "supported"} <= critics
    by_registry = (sorted(critic_phrases()), grader_layouts(), _criteria(critic_prompts()))
    for module in ("qagen.critics", "qagen.question_types", "qagen.evaluate.judges.registry"):
        monkeypatch.delitem(sys.modules, module)
    by_files = (sorted(critic_phrases()), grader_layouts(), _criteria(critic_prompts()))
    assert by_files == by_registry
    assert {name for name, _ in by_files[0]} == critics  # each critic has a phrase that names it
    assert all(name == criterion for name, criterion in by_files[2]), by_files[2]
    assert {"correct", "relevant", "grounded", "retrieval_relevant", "abstention"} <= set(by_files[1].values())


# An installed package of qagen extensions, as pip lays it out: its module (which must not be imported:
# it would import qagen), its prompt folder, and its .dist-info naming its entry points.
_PACKAGE_FILES = {
    "qagen_precise/__init__.py": "raise ImportError('the stand-in must not import an extension package')\n",
    "qagen_precise/prompts/critique_precise.txt": (
        "You will be given a question.\nYour task is to rate whether the question asks for one precise fact.\n"
        "Answer:::\nEvaluation: (your rationale)\nTotal rating: (a number between 1 and 5)\n\n"
        "Question: {question}\nAnswer::: \n"
    ),
    "qagen_precise/prompts/grader_brief_system.txt": "Grade whether the answer is brief.\n",
    "qagen_precise/prompts/grader_brief.txt": "ANSWER TO MEASURE:\n<answer>\n{answer}\n</answer>\n",
    "qagen_precise-0.1.dist-info/METADATA": "Metadata-Version: 2.1\nName: qagen-precise\nVersion: 0.1\n",
    "qagen_precise-0.1.dist-info/entry_points.txt": (
        "[qagen.critics]\nprecise = qagen_precise:PRECISE\n\n[qagen.llm_metrics]\nbrief = qagen_precise:BRIEF\n"
    ),
}

_INSTALLED_SCRIPT = """
import json, sys
from standins.llm.prompt_recognition import classify_prompt
from standins.llm.qagen_prompts import installed_prompt_folders
prompt = (installed_prompt_folders()[0] / "critique_precise.txt").read_text(encoding="utf-8")
critique = classify_prompt(prompt.format(question="Which port does the server use?"))
grade = classify_prompt("ANSWER TO MEASURE:\\n<answer>\\nPort 8080.\\n</answer>")
print(json.dumps({"critique": [critique.kind, critique.criterion], "grade": [grade.kind, grade.criterion],
                  "imported": sorted(name for name in sys.modules if name.startswith("qagen"))}))
"""


def test_the_stand_in_knows_an_installed_package_s_prompt_files_without_importing_it(tmp_path: Path) -> None:
    """Started on its own, the stand-in finds the prompt files of a package that brings qagen entry
    points, and names its critic and grader by the files' names, as qagen's registries name them."""
    for path, text in _PACKAGE_FILES.items():
        (tmp_path / path).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / path).write_text(text, encoding="utf-8")
    env = {**_bare_environment(), "PYTHONPATH": os.pathsep.join([str(tmp_path), str(ROOT)])}
    result = subprocess.run(
        [sys.executable, "-S", "-c", _INSTALLED_SCRIPT], cwd=ROOT, env=env, capture_output=True, text=True, timeout=60
    )
    assert result.returncode == 0, result.stderr
    seen = json.loads(result.stdout)
    assert seen == {"critique": ["critique", "precise"], "grade": ["grader", "brief"], "imported": []}


def test_the_llm_stand_in_starts_as_ci_starts_it() -> None:
    result = subprocess.run(
        [sys.executable, "-S", "-m", "standins.llm.server", "--help"],
        cwd=ROOT,
        env=_bare_environment(),
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout.startswith("usage: python -m standins.llm.server")
