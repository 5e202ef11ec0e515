"""API keys and Hub tokens never reach logs, run directories, datasets, evaluation outputs or errors.

Recognisable secrets are planted where users keep them (OPENAI_API_KEY, HF_TOKEN, variables named
by `--api-key-env` and its critic and judge siblings, a `--base-url` or `--critic-base-url` with
`user:key@`), including ones that look like no known key, so only real filtering catches them.
The stand-in server's `echo_key` quotes the key it received in its error bodies, as providers do.
"""

from __future__ import annotations

import base64
import json
import os
import subprocess
import sys
import uuid
from pathlib import Path
from urllib.parse import parse_qs

import pytest
from click.testing import CliRunner

from qagen.cli.app import main
from qagen.errors import ConfigError
from qagen.evaluate.systems.endpoint import EndpointSystem
from qagen.llm.server_url import ServerURL, split_server_url
from qagen.publish.push import push_run
from qagen.redaction import redact, redact_url
from standins.hub.server import StandInHub
from standins.llm.log import LogEntry
from standins.llm.server import StandInLLM

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
        "build", str(corpus), "--out", str(out), "--generator-model", "openai:stand-in", "--base-url",
        url or llm.base_url,
        "-n", "20", "--chunk-size", "400", "--chunk-overlap", "40", "-q", *extra, key=key,
    )  # fmt: skip


def evaluate(
    llm: StandInLLM, run: Path, corpus: Path, out: Path, *extra: str, key: str
) -> subprocess.CompletedProcess[str]:
    return qagen(
        "evaluate", str(run), "--baseline", "bm25", "--corpus", str(corpus), "--reader-model", "openai:stand-in",
        "--base-url", llm.base_url, "--out", str(out), "--chunk-size", "400", "--k", "3", "-q", *extra, key=key,
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


def built_here(llm: StandInLLM, corpus: Path, out: Path, *, key: str) -> Path:
    """A finished run made in this process (a test whose subject is the evaluation after it: a second
    `qagen` process would only cost its start-up)."""
    args = ["build", str(corpus), "--out", str(out), "--generator-model", "openai:stand-in"]
    args += ["--base-url", llm.base_url, "-n", "20", "--chunk-size", "400", "--chunk-overlap", "40", "-q"]
    assert CliRunner().invoke(main, args, env={"OPENAI_API_KEY": key}, catch_exceptions=False).exit_code == 0
    return out


def test_no_secret_in_the_outputs_of_a_build(llm: StandInLLM, corpus: Path, tmp_path: Path) -> None:
    llm.configure(api_key=OPENAI_KEY)
    built = build(llm, corpus, tmp_path / "run", key=OPENAI_KEY)
    assert built.returncode == 0, built.stderr
    assert leaks(tmp_path / "run", built.stdout, built.stderr) == []


def test_no_secret_in_the_outputs_of_an_evaluation(llm: StandInLLM, corpus: Path, tmp_path: Path) -> None:
    llm.configure(api_key=OPENAI_KEY)
    run = built_here(llm, corpus, tmp_path / "run", key=OPENAI_KEY)
    evaluated = evaluate(llm, run, corpus, tmp_path / "eval", key=OPENAI_KEY)
    assert evaluated.returncode == 0, evaluated.stderr
    assert leaks(tmp_path / "eval", evaluated.stdout, evaluated.stderr) == []


@pytest.mark.slow
def test_a_rejected_key_quoted_back_by_the_server_is_not_shown(llm: StandInLLM, corpus: Path, tmp_path: Path) -> None:
    llm.configure(api_key="the-right-key", echo_key=True)
    built = build(llm, corpus, tmp_path / "run", key=LOCAL_KEY)
    assert built.returncode == 1 and "401" in built.stderr, built.stderr
    assert [line for line in built.stderr.splitlines() if line.strip()] == [built.stderr.strip()]
    # A finished run to evaluate (made in this process: only its evaluation is under test here).
    args = ["build", str(corpus), "--out", str(tmp_path / "good"), "--generator-model", "openai:stand-in"]
    args += ["--base-url", llm.base_url, "-n", "10", "--chunk-size", "400", "--chunk-overlap", "40", "-q"]
    env = {"OPENAI_API_KEY": "the-right-key"}
    assert CliRunner().invoke(main, args, env=env, catch_exceptions=False).exit_code == 0
    evaluated = evaluate(llm, tmp_path / "good", corpus, tmp_path / "eval", key=LOCAL_KEY)
    assert evaluated.returncode == 1 and "401" in evaluated.stderr, evaluated.stderr
    assert "Traceback" not in built.stderr + evaluated.stderr
    outputs = [built.stdout, built.stderr, evaluated.stdout, evaluated.stderr]
    assert leaks(tmp_path / "run", tmp_path / "eval", *outputs) == []


# A fifth of the calls fail for good with a 500 or 429 whose message quotes the key: their failed
# records keep the error detail, which must be scrubbed. No retries: a 429 the stand-in repeats would
# only be waited out (its backoff), not scrubbed.
QUOTING_FAULTS = {"echo_key": True, "fault_rate": 0.2, "fault_kinds": ["500", "429"], "fault_attempts": 99}


def test_keys_quoted_in_error_bodies_stay_out_of_a_builds_failed_rows(
    llm: StandInLLM, corpus: Path, tmp_path: Path
) -> None:
    llm.configure(api_key=LOCAL_KEY, **QUOTING_FAULTS)
    built = build(llm, corpus, tmp_path / "run", "--max-retries", "0", key=LOCAL_KEY)
    assert built.returncode == 0, built.stderr
    assert "api_error" in built.stdout  # the failures are really there, with their details
    assert leaks(tmp_path / "run", built.stdout, built.stderr) == []


def test_keys_quoted_in_error_bodies_stay_out_of_an_evaluations_failed_rows(
    llm: StandInLLM, corpus: Path, tmp_path: Path
) -> None:
    llm.configure(api_key=LOCAL_KEY)
    run = built_here(llm, corpus, tmp_path / "run", key=LOCAL_KEY)
    llm.configure(api_key=LOCAL_KEY, **QUOTING_FAULTS)
    evaluated = evaluate(llm, run, corpus, tmp_path / "eval", "--set", "calls.max_retries=0", key=LOCAL_KEY)
    assert evaluated.returncode == 0, evaluated.stderr
    assert "api_error" in evaluated.stdout  # the failures are really there, with their details
    assert leaks(tmp_path / "eval", evaluated.stdout, evaluated.stderr) == []


# Per-role servers: the critics' and the judges' keys in variables of the user's choosing, which
# the redaction knows only because the key was read from them (`api_key_env`).
CRITIC_KEY = "PLANTEDcriticKey5511qq"
JUDGE_KEY = "PLANTEDjudgeKey7733ww"


def qagen_with(*args: str, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    full = {**os.environ, "HF_TOKEN": HF_TOKEN, **env}
    return subprocess.run([sys.executable, "-m", "qagen", *args], env=full, capture_output=True, text=True, timeout=180)


@pytest.mark.slow
def test_keys_in_other_variables_stay_out_of_every_output(llm: StandInLLM, corpus: Path, tmp_path: Path) -> None:
    # Each server quotes the key it was sent in the errors of a fifth of its calls, kept in failed rows.
    faults = {"echo_key": True, "fault_rate": 0.2, "fault_kinds": ["500", "429"], "fault_attempts": 99}
    llm.configure(api_key=LOCAL_KEY, **faults)
    with StandInLLM(api_key=CRITIC_KEY, **faults) as other:
        env = {"OPENAI_API_KEY": LOCAL_KEY, "CRITIC_KEY": CRITIC_KEY, "JUDGE_KEY": JUDGE_KEY}
        built = qagen_with(
            "build", str(corpus), "--out", str(tmp_path / "run"), "--generator-model", "openai:stand-in",
            "--base-url", llm.base_url, "--critic-base-url", other.base_url, "--critic-api-key-env", "CRITIC_KEY",
            "-n", "20", "--chunk-size", "400", "--chunk-overlap", "40", "--max-retries", "0", "-q", env=env,
        )  # fmt: skip
        assert built.returncode == 0, built.stderr
        assert "api_error" in built.stdout  # failures quoting the keys are really there
        other.configure(api_key=JUDGE_KEY)
        evaluated = qagen_with(
            "evaluate", str(tmp_path / "run"), "--baseline", "bm25", "--corpus", str(corpus),
            "--reader-model", "openai:stand-in", "--base-url", llm.base_url, "--judge-base-url", other.base_url,
            "--judge-api-key-env", "JUDGE_KEY", "--out", str(tmp_path / "eval"), "--chunk-size", "400", "--k", "3",
            "--max-retries", "0", "-q", env=env,
        )  # fmt: skip
        assert evaluated.returncode == 0, evaluated.stderr
        kinds = {entry["kind"] for entry in other.log} - {"fault"}
        assert {"check", "judge_answer_correct"} <= kinds <= {"check", "judge", "judge_answer_correct"}  # the defaults
    outputs = [built.stdout, built.stderr, evaluated.stdout, evaluated.stderr]
    assert leaks(tmp_path / "run", tmp_path / "eval", *outputs) == []


def test_a_rejected_key_from_another_variable_quoted_back_is_not_shown(
    llm: StandInLLM, corpus: Path, tmp_path: Path
) -> None:
    llm.configure(api_key="the-right-key", echo_key=True)
    built = qagen_with(
        "build", str(corpus), "--out", str(tmp_path / "run"), "--generator-model", "openai:stand-in",
        "--base-url", llm.base_url,
        "--api-key-env", "MY_KEY", "-n", "10", "--chunk-size", "400", "--chunk-overlap", "40", "-q",
        env={"MY_KEY": CRITIC_KEY},
    )  # fmt: skip
    assert built.returncode == 1 and "401" in built.stderr and "Traceback" not in built.stderr, built.stderr
    assert leaks(tmp_path / "run", built.stdout, built.stderr) == []


# --- Credentials in server URLs: sent to the server, never written --------------------------------
QUERY_KEY = "PLANTEDquerykey8080xy"


def chat_requests(llm: StandInLLM) -> list[LogEntry]:
    return [entry for entry in llm.log if entry["path"].endswith("/chat/completions")]


@pytest.mark.slow
def test_a_key_in_the_query_string_is_sent_and_never_written(
    llm: StandInLLM, hub: StandInHub, corpus: Path, tmp_path: Path
) -> None:
    llm.configure(record_credentials=True)
    url = f"{llm.base_url}?api-key={QUERY_KEY}&api-version=2024-06-01"
    built = build(llm, corpus, tmp_path / "run", key=OPENAI_KEY, url=url)
    assert built.returncode == 0, built.stderr
    # Every call of both models carried the key (and the other parameter) to the server.
    sent = [parse_qs(entry["query"] or "") for entry in chat_requests(llm)]
    assert len(sent) >= 20 and all(query == {"api-key": [QUERY_KEY], "api-version": ["2024-06-01"]} for query in sent)
    saved = json.loads((tmp_path / "run" / "run.json").read_text())["config"]
    for role in ("generator", "critic"):
        assert saved[role]["base_url"] == f"{llm.base_url}?api-key=REDACTED&api-version=2024-06-01"
    llm.reset()
    evaluated = qagen_with(
        "evaluate", str(tmp_path / "run"), "--baseline", "bm25", "--corpus", str(corpus), "--reader-model",
        "openai:stand-in",
        "--base-url", url, "--out", str(tmp_path / "eval"), "--chunk-size", "400", "--k", "3", "-q",
        env={"OPENAI_API_KEY": OPENAI_KEY},
    )  # fmt: skip
    assert evaluated.returncode == 0, evaluated.stderr
    judged = [entry for entry in chat_requests(llm) if entry["kind"].startswith("judge")]
    assert judged and all(parse_qs(entry["query"] or "")["api-key"] == [QUERY_KEY] for entry in judged)
    repo = f"alice/qa-{uuid.uuid4().hex[:12]}"
    push_run(tmp_path / "run", repo, token="hf_test_token")
    pushed = hub.repo_files(repo)
    assert "summary.json" in pushed
    pushed_leaks = [
        f"{path}: {secret}" for path, data in pushed.items() for secret in SECRETS if secret.encode() in data
    ]
    outputs = [built.stdout, built.stderr, evaluated.stdout, evaluated.stderr]
    assert leaks(tmp_path / "run", tmp_path / "eval", *outputs) == [] and pushed_leaks == []


def test_a_user_and_password_in_the_url_are_sent_as_basic_authentication(
    llm: StandInLLM, corpus: Path, tmp_path: Path
) -> None:
    # A reverse proxy with basic authentication in front of a local server: what curl would send.
    llm.configure(record_credentials=True)
    url = llm.base_url.replace("http://", f"http://deploy:{URL_SECRET}@")
    built = build(llm, corpus, tmp_path / "run", key=OPENAI_KEY, url=url)
    assert built.returncode == 0, built.stderr
    basic = "Basic " + base64.b64encode(f"deploy:{URL_SECRET}".encode()).decode()
    assert {entry["authorization"] for entry in chat_requests(llm)} == {basic}  # and not OPENAI_API_KEY beside it
    saved = json.loads((tmp_path / "run" / "run.json").read_text())["config"]["generator"]["base_url"]
    assert saved == llm.base_url.replace("http://", "http://REDACTED@")
    assert leaks(tmp_path / "run", built.stdout, built.stderr) == []


@pytest.mark.slow
def test_a_key_alone_in_the_critics_and_judges_urls_is_sent_as_their_bearer_key(
    llm: StandInLLM, corpus: Path, tmp_path: Path
) -> None:
    llm.configure(api_key=OPENAI_KEY, echo_key=True)
    assert build(llm, corpus, tmp_path / "good", key=OPENAI_KEY).returncode == 0
    # The other server takes only its own key, which only the URL carries: `KEY@host`, `:KEY@host`.
    with StandInLLM(api_key=CRITIC_KEY, echo_key=True) as other:
        critic_url = other.base_url.replace("//", f"//{CRITIC_KEY}@")
        judge_env = {
            "OPENAI_API_KEY": OPENAI_KEY,
            "QAGEN_JUDGE_BASE_URL": other.base_url.replace("//", f"//:{CRITIC_KEY}@"),
        }
        built = build(llm, corpus, tmp_path / "run", "--critic-base-url", critic_url, key=OPENAI_KEY)
        assert built.returncode == 0, built.stderr
        evaluated = qagen_with(
            "evaluate", str(tmp_path / "good"), "--baseline", "bm25", "--corpus", str(corpus),
            "--reader-model", "openai:stand-in", "--base-url", llm.base_url, "--out", str(tmp_path / "eval"),
            "--chunk-size", "400", "--k", "3", "-q", env=judge_env,
        )  # fmt: skip
        assert evaluated.returncode == 0, evaluated.stderr
        kinds = {entry["kind"] for entry in other.log}
        assert {"check", "judge_answer_correct"} <= kinds <= {"check", "judge", "judge_answer_correct"}  # no 401
        written = other.base_url.replace("http://", "http://REDACTED@")
    assert json.loads((tmp_path / "run" / "run.json").read_text())["config"]["critic"]["base_url"] == written
    outputs = [built.stdout, built.stderr, evaluated.stdout, evaluated.stderr]
    assert leaks(tmp_path / "run", tmp_path / "eval", *outputs) == []


def test_a_stage_resumed_without_the_url_asks_for_it_again(llm: StandInLLM, corpus: Path, tmp_path: Path) -> None:
    llm.configure(api_key=CRITIC_KEY)
    url = llm.base_url.replace("http://", f"http://{CRITIC_KEY}@")
    run = str(tmp_path / "run")
    # Chunked and drafted in this process (what is under test is the resumed stage, in a process of its own).
    chunked = ["stage", "chunk", str(corpus), "--out", run, "--chunk-size", "400", "--chunk-overlap", "40"]
    assert CliRunner().invoke(main, chunked, env={"OPENAI_API_KEY": OPENAI_KEY}).exit_code == 0
    model = ("--generator-model", "openai:stand-in", "--base-url", url)
    generated = CliRunner().invoke(
        main, ["stage", "generate", run, *model, "-n", "10", "-q"], env={"OPENAI_API_KEY": OPENAI_KEY}
    )
    assert generated.exit_code == 0, generated.output
    # The saved URL has no key: sending it would only earn a 401, so the command asks for the URL.
    resumed = qagen("stage", "critique", run, "-q", key=OPENAI_KEY)
    asked = "give it again with its key (--base-url; the critics' own: --critic-base-url)"
    assert resumed.returncode == 1 and asked in resumed.stderr, resumed.stderr
    assert len(resumed.stderr.strip().splitlines()) == 1
    again = qagen("stage", "critique", run, "--critic-base-url", url, "-q", key=OPENAI_KEY)
    assert again.returncode == 0, again.stderr
    assert leaks(tmp_path / "run", resumed.stderr, again.stdout, again.stderr) == []


def test_credentials_in_the_url_and_a_key_variable_are_refused_together(
    llm: StandInLLM, corpus: Path, tmp_path: Path
) -> None:
    url = llm.base_url.replace("http://", f"http://{URL_SECRET}@")
    built = build(llm, corpus, tmp_path / "run", "--api-key-env", "MY_KEY", key=OPENAI_KEY, url=url)
    assert built.returncode == 1 and "keep one of them" in built.stderr, built.stderr
    assert "--base-url" in built.stderr and "--api-key-env" in built.stderr
    assert llm.log == [] and leaks(tmp_path, built.stdout, built.stderr) == []


@pytest.mark.parametrize(
    ("url", "written"),
    [
        ("http://h/v1?api-key=K1&api-version=2024", "http://h/v1?api-key=REDACTED&api-version=2024"),
        ("http://h/v1?api_key=K1&apiKey=K2&key=K3", "http://h/v1?api_key=REDACTED&apiKey=REDACTED&key=REDACTED"),
        ("http://h/v1?access_token=K1&model=m&sig=K2", "http://h/v1?access_token=REDACTED&model=m&sig=REDACTED"),
        ("https://h/f?code=K1&X-Amz-Signature=K2&password=K3", "https://h/f?code=REDACTED&X-Amz-Signature=REDACTED&password=REDACTED"),
        ("http://u:K1@h:8/v1", "http://REDACTED@h:8/v1"),
        ("http://K1@[::1]:8/v1?token=K2;K3#secret=K4", "http://REDACTED@[::1]:8/v1?token=REDACTED#secret=REDACTED"),
        ("http://h/v1?token=&q=1", "http://h/v1?token=&q=1"),
        ("http://localhost:8000/v1", "http://localhost:8000/v1"),
    ],
)  # fmt: skip
def test_the_written_form_of_a_url(url: str, written: str) -> None:
    assert redact_url(url) == written
    assert redact(f"POST {url} failed: 500") == f"POST {written} failed: 500"


def test_the_url_sent_keeps_every_credential() -> None:
    server = split_server_url("http://u%40x:p%3Aw@h:8/v1?api-key=K1&api-version=2024#frag")
    basic = "Basic " + base64.b64encode(b"u@x:p:w").decode()
    assert server == ServerURL(
        address="http://h:8/v1", query={"api-key": "K1", "api-version": "2024"}, authorization=basic
    )
    assert split_server_url("http://:K2@h/v1").authorization == "Bearer K2"
    with pytest.raises(ConfigError, match="give it again with its key"):
        split_server_url(redact_url("http://h/v1?key=K1"))


def test_a_rag_endpoint_is_named_by_its_written_url() -> None:
    # The name goes into every evaluation row and summary; the URL used keeps the credentials.
    system = EndpointSystem(f"http://rag:{URL_SECRET}@127.0.0.1:9/ask?token={QUERY_KEY}&top_k=3")
    assert system.name == "http://REDACTED@127.0.0.1:9/ask?token=REDACTED&top_k=3"
    assert URL_SECRET in system.url and QUERY_KEY in system.url
