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

ROOT = Path(__file__).resolve().parents[2]

# Starts both stand-ins, asks the LLM stand-in to rate a question with qagen's own groundedness
# prompt, then lists the top-level modules loaded from outside the standard library.
_SCRIPT = """
import json, sys, urllib.request
from pathlib import Path
from standins.hub.server import StandInHub
from standins.llm.server import StandInLLM

prompt = Path("prompts/critique_groundedness.txt").read_text(encoding="utf-8").format(
    question="Which chunk size is the default?", context="The default chunk size is 2,000 characters.")
body = {"model": "stand-in", "messages": [{"role": "user", "content": prompt}]}
with StandInLLM() as llm, StandInHub() as hub:
    request = urllib.request.Request(llm.base_url + "/chat/completions", data=json.dumps(body).encode(),
                                     headers={"Content-Type": "application/json"})
    with urllib.request.urlopen(request, timeout=10) as response:
        reply = json.load(response)["choices"][0]["message"]["content"]
    kinds = [entry["kind"] for entry in llm.log]
outside = sorted({name.split(".")[0] for name in sys.modules} - set(sys.stdlib_module_names) - {"__main__"})
print(json.dumps({"reply": reply, "kinds": kinds, "outside": outside}))
"""


def _bare_environment() -> dict[str, str]:
    return {name: value for name, value in os.environ.items() if name not in {"PYTHONPATH", "PYTHONHOME"}}


def test_the_stand_ins_import_only_the_standard_library_and_themselves() -> None:
    result = subprocess.run(
        [sys.executable, "-S", "-c", _SCRIPT],
        cwd=ROOT,
        env=_bare_environment(),
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert result.returncode == 0, result.stderr
    seen = json.loads(result.stdout)
    assert seen["outside"] == ["standins"]
    assert seen["kinds"] == ["critique"]  # recognised as qagen's critic prompt
    assert "Total rating:" in seen["reply"]


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
