"""`--prompts DIR` (`BuildConfig.prompts_dir`): your own prompt files, recorded by hash like the bundled ones."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Any

from click.testing import CliRunner, Result
from datasets import load_from_disk

from qagen.cli.app import main
from qagen.config import BuildConfig
from qagen.corpus.settings import CorpusSettings
from qagen.generation.tasks import BuildTasks
from qagen.llm.prompts import load_prompt
from qagen.publish.local_run import LocalRun
from qagen.records import Chunk, Passages

PILOTS = "Rate this for airline pilots.\n"


def _own_prompts(folder: Path) -> Path:
    """A folder replacing one prompt: the bundled standalone critic with a line of its own first."""
    folder.mkdir(exist_ok=True)
    (folder / "critique_standalone.txt").write_text(PILOTS + load_prompt("critique_standalone").text, encoding="utf-8")
    return folder


def _build(llm: Any, corpus: Path, out: Path, *extra: object) -> Result:
    args = ["build", corpus, "--out", out, "--generator-model", "openai:stand-in", "--base-url", llm.base_url]
    args += ["-n", "12"]
    # The cookbook's critics, whose prompts the tests replace.
    args += ["--chunk-size", "400", "--chunk-overlap", "40", "--seed", "7", "-q", "--vetting", "cookbook", *extra]
    return CliRunner().invoke(main, [str(arg) for arg in args])


def test_the_tasks_send_the_prompt_of_the_folder(tmp_path: Path) -> None:
    folder = _own_prompts(tmp_path / "prompts")
    cookbook = BuildConfig(corpus=CorpusSettings(path="x"), vetting="cookbook")
    tasks = BuildTasks.for_config(cookbook.model_copy(update={"prompts_dir": str(folder)}))
    bundled = BuildTasks.for_config(cookbook)
    text = "The harbour opens at nine."
    chunk = Passages.of(Chunk(id="c", source="s.txt", text=text, start_index=0, end_index=len(text)))
    assert tasks.types["factoid"].draft.request(chunk) == bundled.types["factoid"].draft.request(chunk)  # as bundled
    own = tasks.critic("standalone")
    assert own.prompt.text.startswith(PILOTS) and own.prompt.hash != bundled.critic("standalone").prompt.hash
    assert tasks.prompt_hashes()["critique_standalone"] == own.prompt.sha256


def test_a_build_with_its_own_prompt_records_its_hash_and_resumes_only_with_it(
    llm: Any, corpus: Path, tmp_path: Path
) -> None:
    folder = _own_prompts(tmp_path / "prompts")
    run = tmp_path / "run"
    result = _build(llm, corpus, run, "--prompts", folder)
    assert result.exit_code == 0, result.output
    own = hashlib.sha256((folder / "critique_standalone.txt").read_bytes()).hexdigest()
    fingerprint = json.loads((run / "run.json").read_text())["fingerprint"]
    assert fingerprint["prompts"]["critique_standalone"] == own
    assert fingerprint["prompts"]["qa_generation"] == load_prompt("qa_generation").sha256
    summary = json.loads((run / "summary.json").read_text())
    assert summary["prompts"]["critique_standalone"] == own[:12]
    assert summary["settings"]["prompts_dir"] == str(folder.resolve())
    rows = list(load_from_disk(str(run / "candidates")))
    assert {row["standalone_prompt_hash"] for row in rows} == {own[:12]}
    assert {row["qa_prompt_hash"] for row in rows} == {load_prompt("qa_generation").hash}

    # The stage commands take the prompts from the run, wherever they are run from.
    calls = len(llm.log)
    assert CliRunner().invoke(main, ["filter", str(run)]).exit_code == 0
    assert _build(llm, corpus, run, "--prompts", folder).exit_code == 0
    assert len(llm.log) == calls  # resumed: nothing asked again

    # A changed prompt is a different run, as for any prompt: refused, naming it.
    (folder / "critique_standalone.txt").write_text(PILOTS + "Total rating: {question}", encoding="utf-8")
    changed = _build(llm, corpus, run, "--prompts", folder)
    assert changed.exit_code == 1 and "prompts.critique_standalone" in changed.output
    # So is the same run without the folder (the bundled prompt is another prompt).
    assert _build(llm, corpus, run).exit_code == 1
    assert len(llm.log) == calls


def test_a_folder_with_a_stray_file_or_a_broken_prompt_is_refused_before_anything_is_written(
    llm: Any, corpus: Path, tmp_path: Path
) -> None:
    folder = _own_prompts(tmp_path / "prompts")
    (folder / "notes.md").write_text("my notes", encoding="utf-8")
    result = _build(llm, corpus, tmp_path / "run", "--prompts", folder)
    assert result.exit_code == 1
    assert result.stderr.startswith(f"error: --prompts {folder.resolve()} holds notes.md, which replace no prompt;")
    assert "can be replaced are critique_groundedness.txt, critique_relevance.txt" in result.stderr
    (folder / "notes.md").unlink()
    (folder / "qa_generation.txt").write_text("Write a factoid question.", encoding="utf-8")
    result = _build(llm, corpus, tmp_path / "run", "--prompts", folder)
    assert result.exit_code == 1 and "lacks {context}" in result.stderr
    assert not (tmp_path / "run").exists() and llm.log == []


def test_a_push_publishes_the_text_of_the_runs_own_prompt(tmp_path: Path) -> None:
    folder = _own_prompts(tmp_path / "prompts")
    text = (folder / "critique_standalone.txt").read_bytes()
    own, bundled = hashlib.sha256(text).hexdigest(), load_prompt("critique_relevance").sha256
    summary = {
        "prompts": {"critique_standalone": own[:12], "critique_relevance": bundled[:12]},
        "settings": {"prompts_dir": str(folder)},
    }
    run = LocalRun(summary, {"critique_standalone": own, "critique_relevance": bundled}, None, None)  # type: ignore[arg-type]
    prompts, files = run.prompt_files()
    assert files["prompts/critique_standalone.txt"] == text
    assert files["prompts/critique_relevance.txt"] == (load_prompt("critique_relevance").text.encode("utf-8"))
    assert all(prompt.path_in_repo is not None for prompt in prompts)
