"""A build without a key for OpenAI says so before it reads the corpus, not after chunking all of it."""

from __future__ import annotations

from pathlib import Path

from click.testing import CliRunner

from qagen.cli.app import main


def test_a_missing_key_is_said_before_any_chunking(corpus: Path, tmp_path: Path) -> None:
    out = tmp_path / "run"
    result = CliRunner().invoke(main, ["build", str(corpus), "--out", str(out), "-q"])
    assert result.exit_code != 0
    assert "No API key for 'openai:gpt-4o-mini': set OPENAI_API_KEY" in result.output
    assert "Traceback" not in result.output
    assert not (out / "chunks.jsonl").exists()  # the corpus was never chunked


def test_a_named_key_variable_that_is_not_set_is_said_before_any_chunking(corpus: Path, tmp_path: Path) -> None:
    out = tmp_path / "run"
    args = [
        "build",
        str(corpus),
        "--out",
        str(out),
        "--base-url",
        "http://127.0.0.1:9/v1",
        "--api-key-env",
        "NO_SUCH_KEY",
    ]
    result = CliRunner().invoke(main, [*args, "-q"])
    assert result.exit_code != 0
    assert "the environment variable NO_SUCH_KEY is not set" in result.output
    assert not (out / "chunks.jsonl").exists()
