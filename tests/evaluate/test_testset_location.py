"""Where a test set is read from: a local path typo is said as such before the Hub is asked; a Hub
dataset that cannot be seen without a token is said to need one (the stand-in Hub holds it private)."""

from __future__ import annotations

import json
import uuid
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from qagen.cli.app import main
from qagen.errors import ConfigError
from qagen.evaluate import hub_testset
from qagen.evaluate.testset import load_testset
from qagen.evaluate.testset_paths import looks_local


@pytest.fixture()
def here(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A working directory holding `run/dataset` and `set.jsonl`; the Hub must not be asked."""
    (tmp_path / "run" / "dataset").mkdir(parents=True)
    (tmp_path / "set.jsonl").write_text(json.dumps({"question": "Q?", "answer": "A."}) + "\n")
    monkeypatch.chdir(tmp_path)

    def no_hub(*args: object) -> None:
        raise AssertionError(f"the Hub was asked for {args}")

    monkeypatch.setattr(hub_testset, "hub_rows", no_hub)
    return tmp_path


@pytest.mark.parametrize(
    ("spec", "local"),
    [
        ("./runn/dataset", True),
        ("../elsewhere", True),
        ("/abs/path", True),
        ("~/runs/x", True),
        (".", True),
        ("a/b/c", True),  # more than owner/name
        ("runs\\x", True),
        ("results.jsonl", True),  # a data file's suffix
        ("my data", True),  # no Hub id has a space
        ("C:/data", True),  # nor a colon
        ("run/datset", True),  # `run/` is a folder here
        ("runn", True),  # a bare name close to `run/` here: a typo, not a Hub id
        ("alice/qa-set", False),
        ("alice/qa.v2", False),
        ("squad", False),
    ],
)
def test_looks_local(here: Path, spec: str, local: bool) -> None:
    assert looks_local(spec) is local


@pytest.mark.parametrize(
    ("spec", "message"),
    [
        ("./runn/dataset", "no such file or folder: ./runn/dataset (did you mean ./run/dataset?)."),
        ("run/datset", "no such file or folder: run/datset (did you mean run/dataset?)."),
        ("./set.jsnol", "no such file or folder: ./set.jsnol (did you mean ./set.jsonl?)."),
        ("runn", "no such file or folder: runn (did you mean run?)."),
        ("/nowhere/at/all", "no such file or folder: /nowhere/at/all."),
    ],
)
def test_a_local_typo_is_no_such_file_and_never_reaches_the_hub(here: Path, spec: str, message: str) -> None:
    with pytest.raises(ConfigError) as error:
        load_testset(spec)
    assert str(error.value) == message


def test_cli_typo(here: Path) -> None:
    (here / "a.jsonl").write_text(json.dumps({"question": "Q?", "answer": "A."}) + "\n")
    result = CliRunner().invoke(main, ["evaluate", "./runn/dataset", "--answers", "a.jsonl", "--out", "e", "-q"])
    assert result.exit_code == 1
    assert result.stderr == "error: no such file or folder: ./runn/dataset (did you mean ./run/dataset?).\n"
    assert not (here / "e").exists()


def test_a_home_path_is_expanded(here: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HOME", str(here))
    assert [item.question for item in load_testset("~/set.jsonl").items] == ["Q?"]


# --------------------------------------------------------------------------- the Hub


@pytest.fixture()
def private_repo(hub: Any, monkeypatch: pytest.MonkeyPatch) -> str:
    """A private dataset of alice's on the stand-in Hub (a fresh name: the Hub libraries cache by name)."""
    import datasets

    monkeypatch.setattr(datasets.config, "USE_PARQUET_EXPORT", False)
    repo = f"alice/private-set-{uuid.uuid4().hex[:12]}"
    rows = [{"question": "What is private?", "answer": "This set."}]
    datasets.Dataset.from_list(rows).push_to_hub(repo, token="hf_test_token", private=True)
    assert hub.is_private(repo)
    return repo


def test_a_private_dataset_without_a_token_says_to_set_one(private_repo: str) -> None:
    with pytest.raises(ConfigError) as error:
        load_testset(private_repo)
    assert str(error.value) == (
        f"'{private_repo}' is not a public dataset on the Hub; if it is a private dataset: set HF_TOKEN "
        "(or run `hf auth login`, or pass `token`)."
    )
    # With the owner's token it loads; afterwards, without one, it is still refused rather than read
    # from the cache the first load left behind.
    assert [item.question for item in load_testset(private_repo, token="hf_test_token").items] == ["What is private?"]
    with pytest.raises(ConfigError, match="private dataset: set HF_TOKEN"):
        load_testset(private_repo)


def test_a_private_dataset_with_other_tokens(private_repo: str) -> None:
    with pytest.raises(ConfigError, match="rejected the token \\(401 Unauthorized\\)"):
        load_testset(private_repo, token="hf_not_a_token")
    with pytest.raises(ConfigError, match="was not found on the Hub, or this token may not read it"):
        load_testset(private_repo, token="hf_bob_token")


def test_cli_private_dataset_names_the_token_flag(private_repo: str, tmp_path: Path) -> None:
    (tmp_path / "a.jsonl").write_text(json.dumps({"question": "What is private?", "answer": "This set."}) + "\n")
    args = ["evaluate", private_repo, "--answers", str(tmp_path / "a.jsonl"), "--out", str(tmp_path / "e"), "-q"]
    result = CliRunner().invoke(main, args)
    assert result.exit_code == 1
    assert result.stderr == (
        f"error: '{private_repo}' is not a public dataset on the Hub; if it is a private dataset: set HF_TOKEN "
        "(or run `hf auth login`, or pass --token).\n"
    )
    with_token = CliRunner().invoke(main, [*args, "--token", "hf_test_token", "--metrics", "text"])
    assert with_token.exit_code == 0, with_token.output
