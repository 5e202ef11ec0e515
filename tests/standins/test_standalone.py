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


def test_the_prompt_files_name_the_critics_and_graders_as_qagen_does(monkeypatch: pytest.MonkeyPatch) -> None:
    """The files' naming rules (`standins.llm.qagen_prompts`) tell the bundled critics and graders
    apart exactly as qagen's registries do, when this process has loaded them."""
    import qagen.critics
    import qagen.evaluate.judges.registry
    import qagen.question_types  # noqa: F401  (loaded: the stand-in reads the registries)
    from standins.llm.eval_replies import grader_layouts
    from standins.llm.prompt_recognition import critic_phrases

    by_registry = (sorted(critic_phrases()), grader_layouts())
    for module in ("qagen.critics", "qagen.question_types", "qagen.evaluate.judges.registry"):
        monkeypatch.delitem(sys.modules, module)
    by_files = (sorted(critic_phrases()), grader_layouts())
    assert by_files == by_registry
    assert {"correct", "relevant", "grounded", "retrieval_relevant", "abstention"} <= set(by_files[1].values())


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
