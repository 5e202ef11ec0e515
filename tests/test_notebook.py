"""The example notebook: committed without outputs, and it runs top to bottom against the stand-ins.

The notebook is executed unchanged, in a kernel of its own (nbclient), pointed at the stand-in LLM
and the session's stand-in Hub by environment variables only, exactly the way a user points it at
OpenAI or a local server; see `standins.notebook_env`.
"""

from __future__ import annotations

import base64
import json
import os
import re
import shutil
import uuid
from pathlib import Path
from typing import Any

import pytest
from conftest import SUMMARY_LINES

from standins.hub.server import StandInHub
from standins.llm.server import StandInLLM

REPO_ROOT = Path(__file__).resolve().parent.parent
NOTEBOOK = REPO_ROOT / "notebooks" / "rag_evaluation.ipynb"
CORPUS = REPO_ROOT / "examples" / "corpus"
TOKEN = "hf_test_token"  # alice on the session `hub`
PNG_MAGIC = b"\x89PNG\r\n\x1a\n"


def committed() -> dict[str, Any]:
    data: dict[str, Any] = json.loads(NOTEBOOK.read_text(encoding="utf-8"))
    return data


def code_sources(notebook: dict[str, Any]) -> list[str]:
    return ["".join(cell["source"]) for cell in notebook["cells"] if cell["cell_type"] == "code"]


def test_the_notebook_text_names_metrics_an_evaluation_makes() -> None:
    """Every metric its text names in backticks with a cutoff (`hit@3`) or as a family (`evidence_*`)
    is one an evaluation writes to its summary."""
    from qagen.evaluate.judges.registry import LLM_METRICS
    from qagen.evaluate.metric_columns import summary_name
    from qagen.evaluate.metrics.scoring import SCORES

    text = "".join("".join(cell["source"]) for cell in committed()["cells"] if cell["cell_type"] == "markdown")
    named = re.findall(r"`([a-z_]+@\d+|[a-z_]+\*)`", text)
    assert named
    for name in named:
        if name.endswith("*"):
            family = [spec.column for spec in SCORES if spec.column.startswith(name[:-1])]
            assert family or any(metric.startswith(name[:-1]) for metric in LLM_METRICS), f"no metric is `{name}`"
            continue
        k = int(name.rsplit("@", 1)[1])
        assert name in {summary_name(spec.column, k) for spec in SCORES}, f"no metric is `{name}`"


def test_committed_notebook_has_no_outputs() -> None:
    # Outputs would put a run's data (and its local addresses) into git, and churn every diff.
    notebook = committed()
    code_cells = [cell for cell in notebook["cells"] if cell["cell_type"] == "code"]
    assert code_cells
    for number, cell in enumerate(code_cells, start=1):
        assert cell.get("outputs") == [], f"code cell {number} has outputs; clear them before committing"
        assert cell.get("execution_count") is None, f"code cell {number} has an execution count"
    assert notebook["metadata"]["kernelspec"]["name"] == "python3"
    assert "widgets" not in notebook["metadata"]


def test_notebook_takes_its_settings_from_the_environment() -> None:
    # It must run unchanged for users: no address of a test server and no test model written in.
    code = "\n".join(code_sources(committed()))
    for planted in ("127.0.0.1", "localhost", "stand-in", "hf_test_token", "USE_PARQUET_EXPORT"):
        assert planted not in code
    assert 'os.environ.get("QAGEN_MODEL", "openai:gpt-4o-mini")' in code
    markdown = "\n".join("".join(cell["source"]) for cell in committed()["cells"] if cell["cell_type"] == "markdown")
    for mentioned in ("OPENAI_API_KEY", "OPENAI_BASE_URL", "HF_TOKEN", "huggingface.co/learn/cookbook/rag_evaluation"):
        assert mentioned in markdown


def code_notebook(sources: list[str]) -> dict[str, Any]:
    """A minimal nbformat 4.5 notebook of code cells."""
    empty: dict[str, Any] = {"metadata": {}, "outputs": [], "execution_count": None}
    cells = [{"cell_type": "code", "id": f"cell-{i}", "source": source, **empty} for i, source in enumerate(sources)]
    metadata = {"kernelspec": {"name": "python3", "display_name": "Python 3", "language": "python"}}
    return {"cells": cells, "metadata": metadata, "nbformat": 4, "nbformat_minor": 5}


def outputs_of(notebook: Any) -> list[Any]:
    return [output for cell in notebook.cells if cell.cell_type == "code" for output in cell.outputs]


def stdout_of(notebook: Any) -> str:
    return "".join(o.text for o in outputs_of(notebook) if o.output_type == "stream" and o.name == "stdout")


@pytest.mark.slow
def test_notebook_runs_against_the_stand_ins(hub: StandInHub, llm: StandInLLM, tmp_path: Path) -> None:
    pytest.importorskip("nbclient", reason="the notebook test needs nbclient, nbformat and ipykernel (dev extra)")
    pytest.importorskip("ipykernel", reason="the notebook test needs nbclient, nbformat and ipykernel (dev extra)")
    from standins.notebook_env import execute_notebook, kernel_environment

    work = tmp_path / "work"
    work.mkdir()
    copy = work / NOTEBOOK.name  # executed from a copy: the committed file is never touched
    shutil.copyfile(NOTEBOOK, copy)
    repo = f"nb-{uuid.uuid4().hex[:12]}"  # unique: both Hub libraries cache what they have seen
    env = kernel_environment(
        llm_base_url=llm.base_url,
        hub_url=hub.url,
        hf_token=TOKEN,
        state_dir=tmp_path / "state",
        extra={"QAGEN_CORPUS": str(CORPUS), "QAGEN_HF_REPO": repo},
    )

    executed = execute_notebook(copy, env=env, cwd=work)

    code_cells = [cell for cell in executed.cells if cell.cell_type == "code"]
    assert all(cell.execution_count is not None for cell in code_cells)
    assert not [o for o in outputs_of(executed) if o.output_type == "error"]
    printed = stdout_of(executed)
    # The funnel, the push and the comparison table were printed.
    for line in ("sampled chunks", "rejected by critics", "kept", "critique calls"):
        assert line in printed
    assert f"Published alice/{repo} (private)" in printed
    assert "bm25-chunk200" in printed and "bm25-chunk800" in printed and "paired on shared questions" in printed
    # The bar chart reached the notebook as a PNG.
    images = [o.data["image/png"] for o in outputs_of(executed) if "image/png" in o.get("data", {})]
    assert len(images) == 1 and base64.b64decode(images[0]).startswith(PNG_MAGIC)
    # The candidates were shown with the critics' rationales.
    tables = "".join(o.data.get("text/html", "") for o in outputs_of(executed) if "data" in o)
    assert "groundedness_eval" in tables and "reason" in tables

    # Everything the notebook made stayed in its working directory, and went where it was pointed.
    summary = json.loads((work / "qagen-run" / "summary.json").read_text(encoding="utf-8"))
    kept = summary["funnel"]["kept"]
    assert kept > 0
    assert (work / "qagen-evals" / "correctness.png").read_bytes().startswith(PNG_MAGIC)
    for settings in ("bm25-chunk200", "bm25-chunk800"):
        eval_summary = json.loads((work / "qagen-evals" / settings / "summary.json").read_text(encoding="utf-8"))
        assert eval_summary["questions"] == kept
        assert eval_summary["metrics"]["correctness"]["n"] == kept
    files = hub.repo_files(f"alice/{repo}")
    assert "README.md" in files and any(path.startswith("data/") for path in files)
    assert any(path.startswith("candidates/") for path in files)
    assert hub.is_private(f"alice/{repo}")
    kinds = {entry["kind"] for entry in llm.log}
    assert {"generation", "critique", "answer", "judge"} <= kinds
    assert all(entry["model"] == "stand-in" for entry in llm.log if entry["kind"] != "models")
    assert copy.read_bytes() == NOTEBOOK.read_bytes()  # executing only read the notebook
    SUMMARY_LINES.append(
        f"notebook executed: {NOTEBOOK.relative_to(NOTEBOOK.parents[1])}: {len(code_cells)} code cells ran"
    )


@pytest.mark.slow
def test_the_notebook_kernel_may_only_connect_to_loopback(tmp_path: Path) -> None:
    # The kernel runs outside the test process and its socket guard, so it gets one of its own.
    pytest.importorskip("nbformat", reason="the notebook test needs nbformat (dev extra)")
    pytest.importorskip("nbclient", reason="the notebook test needs nbclient (dev extra)")
    pytest.importorskip("ipykernel", reason="the notebook test needs ipykernel (dev extra)")
    from standins.notebook_env import execute_notebook, kernel_environment

    cells = [
        # Checked first: without the guard the next cell would really send a packet.
        "import socket\nassert socket.socket.connect._qagen_loopback_only",
        "try:\n"
        "    socket.create_connection(('192.0.2.1', 80), timeout=1)\n"  # TEST-NET-1: never routed
        "except OSError as exc:\n"
        "    print('refused:', exc)\n",
        "import os\nprint(os.environ['OPENAI_API_KEY'], os.environ.get('HF_HUB_OFFLINE'))",
    ]
    path = tmp_path / "probe.ipynb"
    path.write_text(json.dumps(code_notebook(cells)), encoding="utf-8")
    env = kernel_environment(
        llm_base_url="http://127.0.0.1:9/v1",
        hub_url="http://127.0.0.1:9",
        hf_token=TOKEN,
        state_dir=tmp_path / "state",
        base={**os.environ, "OPENAI_API_KEY": "sk-real-key", "HF_HUB_OFFLINE": "1"},
    )
    executed = execute_notebook(path, env=env, cwd=tmp_path)

    printed = stdout_of(executed)
    assert "refused: this kernel may not leave the machine" in printed
    # The caller's own key and Hub settings never reach the kernel.
    assert "stand-in-key None" in printed
