"""API keys and Hub tokens never reach logs, run directories, datasets, evaluation outputs or errors.

Recognisable secrets are planted where users keep them (OPENAI_API_KEY, HF_TOKEN, variables named
by `--api-key-env` and its critic and judge siblings, a `--base-url` or `--critic-base-url` with
`user:key@`), including ones that look like no known key, so only real filtering catches them.
The stand-in server's `echo_key` quotes the key it received in its error bodies, as providers do.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from click.testing import CliRunner

from qagen.cli.app import main
from qagen.testing.llm.server import StandInLLM

OPENAI_KEY = "sk-test-PLANTED-0penai5ecret77aa"
LOCAL_KEY = "PLANTEDlocaltoken4411zz"  # the shape of no known key: a vLLM or LiteLLM token
HF_TOKEN = "hf_PLANTEDhubtoken0123456789abcd"
URL_SECRET = "PLANTEDurlpass31337"
SECRETS = (OPENAI_KEY, LOCAL_KEY, HF_TOKEN, URL_SECRET, "PLANTED")


def qagen(*args: str, key: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "OPENAI_API_KEY": key, "HF_TOKEN": HF_TOKEN}
    return subprocess.run([sys.executable, "-m", "qagen", *args], env=env, capture_output=True, text=True, timeout=180)


def build(
    llm: StandInLLM, corpus: Path, out: Path, *extra: str, key: str, url: str | None = None
) -> subprocess.CompletedProcess[str]:
    return qagen(
        "build", str(corpus), "--out", str(out), "--model", "openai:stand-in", "--base-url", url or llm.base_url,
        "-n", "20", "--chunk-size", "400", "--chunk-overlap", "40", "-q", *extra, key=key,
    )  # fmt: skip


def evaluate(llm: StandInLLM, run: Path, corpus: Path, out: Path, *, key: str) -> subprocess.CompletedProcess[str]:
    return qagen(
        "evaluate", str(run), "--baseline", "bm25", "--corpus", str(corpus), "--model", "openai:stand-in",
        "--base-url", llm.base_url, "--out", str(out), "--chunk-size", "400", "--k", "3", "-q", key=key,
    )  # fmt: skip


def leaks(*places: Path | str) -> list[str]:
    """Where a planted secret occurs: files (every byte of every file below a folder) or texts."""
    found = []
    for place in places:
        if isinstance(place, str):
            found += [f"output: {secret}" for secret in SECRETS if secret in place]
            continue
        files = [place] if place.is_file() else [p for p in place.rglob("*") if p.is_file()]
        for file in files:
            data = file.read_bytes()
            found += [f"{file}: {secret}" for secret in SECRETS if secret.encode() in data]
    return found


def test_no_secret_in_the_outputs_of_a_build_and_an_evaluation(llm: StandInLLM, corpus: Path, tmp_path: Path) -> None:
    llm.configure(api_key=OPENAI_KEY)
    built = build(llm, corpus, tmp_path / "run", key=OPENAI_KEY)
    assert built.returncode == 0, built.stderr
    evaluated = evaluate(llm, tmp_path / "run", corpus, tmp_path / "eval", key=OPENAI_KEY)
    assert evaluated.returncode == 0, evaluated.stderr
    outputs = [built.stdout, built.stderr, evaluated.stdout, evaluated.stderr]
    assert leaks(tmp_path / "run", tmp_path / "eval", *outputs) == []


def test_a_rejected_key_quoted_back_by_the_server_is_not_shown(llm: StandInLLM, corpus: Path, tmp_path: Path) -> None:
    llm.configure(api_key="the-right-key", echo_key=True)
    built = build(llm, corpus, tmp_path / "run", key=LOCAL_KEY)
    assert built.returncode == 1 and "401" in built.stderr, built.stderr
    assert [line for line in built.stderr.splitlines() if line.strip()] == [built.stderr.strip()]
    # A finished run to evaluate (made in this process: only its evaluation is under test here).
    args = ["build", str(corpus), "--out", str(tmp_path / "good"), "--model", "openai:stand-in"]
    args += ["--base-url", llm.base_url, "-n", "10", "--chunk-size", "400", "--chunk-overlap", "40", "-q"]
    env = {"OPENAI_API_KEY": "the-right-key"}
    assert CliRunner().invoke(main, args, env=env, catch_exceptions=False).exit_code == 0
    evaluated = evaluate(llm, tmp_path / "good", corpus, tmp_path / "eval", key=LOCAL_KEY)
    assert evaluated.returncode == 1 and "401" in evaluated.stderr, evaluated.stderr
    assert "Traceback" not in built.stderr + evaluated.stderr
    outputs = [built.stdout, built.stderr, evaluated.stdout, evaluated.stderr]
    assert leaks(tmp_path / "run", tmp_path / "eval", *outputs) == []


def test_keys_quoted_in_error_bodies_stay_out_of_failed_rows(llm: StandInLLM, corpus: Path, tmp_path: Path) -> None:
    # A fifth of the calls fail for good with a 500 or 429 whose message quotes the key: their
    # failed records keep the error detail, which must be scrubbed.
    llm.configure(api_key=LOCAL_KEY, echo_key=True, fault_rate=0.2, fault_kinds=["500", "429"], fault_attempts=99)
    built = build(llm, corpus, tmp_path / "run", "--max-retries", "0", key=LOCAL_KEY)
    assert built.returncode == 0, built.stderr
    assert "api_error" in built.stdout  # the failures are really there, with their details
    evaluated = evaluate(llm, tmp_path / "run", corpus, tmp_path / "eval", key=LOCAL_KEY)
    assert evaluated.returncode == 0, evaluated.stderr
    outputs = [built.stdout, built.stderr, evaluated.stdout, evaluated.stderr]
    assert leaks(tmp_path / "run", tmp_path / "eval", *outputs) == []


def _with_credentials(url: str) -> str:
    return url.replace("http://", f"http://user:{URL_SECRET}@")


def test_a_key_in_the_base_url_is_never_printed(llm: StandInLLM, corpus: Path, tmp_path: Path) -> None:
    url = _with_credentials(llm.base_url)
    built = build(llm, corpus, tmp_path / "run", key=OPENAI_KEY, url=url)
    # The HTTP client refuses credentials in the URL beside the key: one sentence, and no secret.
    assert built.returncode == 1 and "Traceback" not in built.stderr, built.stderr
    lines = [line for line in built.stderr.splitlines() if line.strip()]
    assert len(lines) == 1 and "--base-url" in lines[0], built.stderr
    assert leaks(built.stdout, built.stderr) == []


def test_a_key_in_the_base_url_stays_out_of_the_run_directory(llm: StandInLLM, corpus: Path, tmp_path: Path) -> None:
    build(llm, corpus, tmp_path / "run", key=OPENAI_KEY, url=_with_credentials(llm.base_url))
    assert (tmp_path / "run" / "run.json").exists()
    assert leaks(tmp_path / "run") == []


# Per-role servers: the critics' and the judges' keys in variables of the user's choosing, which
# the redaction knows only because the key was read from them (`api_key_env`).
CRITIC_KEY = "PLANTEDcriticKey5511qq"
JUDGE_KEY = "PLANTEDjudgeKey7733ww"


def qagen_with(*args: str, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    full = {**os.environ, "HF_TOKEN": HF_TOKEN, **env}
    return subprocess.run([sys.executable, "-m", "qagen", *args], env=full, capture_output=True, text=True, timeout=180)


def test_keys_in_other_variables_stay_out_of_every_output(llm: StandInLLM, corpus: Path, tmp_path: Path) -> None:
    # Each server quotes the key it was sent in the errors of a fifth of its calls, kept in failed rows.
    faults = {"echo_key": True, "fault_rate": 0.2, "fault_kinds": ["500", "429"], "fault_attempts": 99}
    llm.configure(api_key=LOCAL_KEY, **faults)
    with StandInLLM(api_key=CRITIC_KEY, **faults) as other:
        env = {"OPENAI_API_KEY": LOCAL_KEY, "CRITIC_KEY": CRITIC_KEY, "JUDGE_KEY": JUDGE_KEY}
        built = qagen_with(
            "build", str(corpus), "--out", str(tmp_path / "run"), "--model", "openai:stand-in",
            "--base-url", llm.base_url, "--critic-base-url", other.base_url, "--critic-api-key-env", "CRITIC_KEY",
            "-n", "20", "--chunk-size", "400", "--chunk-overlap", "40", "--max-retries", "0", "-q", env=env,
        )  # fmt: skip
        assert built.returncode == 0, built.stderr
        assert "api_error" in built.stdout  # failures quoting the keys are really there
        other.configure(api_key=JUDGE_KEY)
        evaluated = qagen_with(
            "evaluate", str(tmp_path / "run"), "--baseline", "bm25", "--corpus", str(corpus),
            "--model", "openai:stand-in", "--base-url", llm.base_url, "--judge-base-url", other.base_url,
            "--judge-api-key-env", "JUDGE_KEY", "--out", str(tmp_path / "eval"), "--chunk-size", "400", "--k", "3",
            "--max-retries", "0", "-q", env=env,
        )  # fmt: skip
        assert evaluated.returncode == 0, evaluated.stderr
        assert {entry["kind"] for entry in other.log} - {"fault"} == {"critique", "judge"}
    outputs = [built.stdout, built.stderr, evaluated.stdout, evaluated.stderr]
    assert leaks(tmp_path / "run", tmp_path / "eval", *outputs) == []


def test_a_rejected_key_from_another_variable_quoted_back_is_not_shown(
    llm: StandInLLM, corpus: Path, tmp_path: Path
) -> None:
    llm.configure(api_key="the-right-key", echo_key=True)
    built = qagen_with(
        "build", str(corpus), "--out", str(tmp_path / "run"), "--model", "openai:stand-in", "--base-url", llm.base_url,
        "--api-key-env", "MY_KEY", "-n", "10", "--chunk-size", "400", "--chunk-overlap", "40", "-q",
        env={"MY_KEY": CRITIC_KEY},
    )  # fmt: skip
    assert built.returncode == 1 and "401" in built.stderr and "Traceback" not in built.stderr, built.stderr
    assert leaks(tmp_path / "run", built.stdout, built.stderr) == []


def test_credentials_in_the_critics_and_judges_urls_are_never_written(
    llm: StandInLLM, corpus: Path, tmp_path: Path
) -> None:
    llm.configure(api_key=OPENAI_KEY)
    assert build(llm, corpus, tmp_path / "good", key=OPENAI_KEY).returncode == 0
    with StandInLLM(api_key=OPENAI_KEY) as other:
        plain = other.base_url
        url = _with_credentials(plain)
        # The HTTP client refuses credentials in the URL beside the key: the critics' and judges' calls fail.
        built = build(llm, corpus, tmp_path / "run", "--critic-base-url", url, key=OPENAI_KEY)
        evaluated = qagen_with(
            "evaluate", str(tmp_path / "good"), "--baseline", "bm25", "--corpus", str(corpus),
            "--model", "openai:stand-in", "--base-url", llm.base_url, "--out", str(tmp_path / "eval"),
            "--chunk-size", "400", "--k", "3", "-q", env={"OPENAI_API_KEY": OPENAI_KEY, "QAGEN_JUDGE_BASE_URL": url},
        )  # fmt: skip
    for done in (built, evaluated):
        assert done.returncode == 1 and "Traceback" not in done.stderr, done.stderr
        assert len([line for line in done.stderr.splitlines() if line.strip()]) == 1, done.stderr
    assert json.loads((tmp_path / "run" / "run.json").read_text())["config"]["critic"]["base_url"] == plain
    outputs = [built.stdout, built.stderr, evaluated.stdout, evaluated.stderr]
    assert leaks(tmp_path / "run", tmp_path / "eval", *outputs) == []
