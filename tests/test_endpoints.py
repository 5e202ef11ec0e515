"""Each role on its own server with its own key: generate locally and critique elsewhere, answer
with one model and judge with another.

Two stand-in servers, each accepting only its own key; the key of each lives in a variable of its
own. Each server's request log shows which calls reached it.
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Iterator
from pathlib import Path

import pytest
from click.testing import CliRunner, Result

from qagen.cli.app import main
from qagen.cli.build_settings import config_from_options
from qagen.config import BuildConfig
from qagen.corpus.settings import CorpusSettings
from qagen.errors import ConfigError, LLMUnavailableError
from qagen.evaluate.api import evaluate, rag_baseline
from qagen.evaluate.config import EvalConfig
from qagen.llm.backends import LangChainBackend, ModelSettings, build_backend
from qagen.redaction import redact
from standins.llm.server import StandInLLM

KEY_A = "key-of-server-A-PLANTED-a1"
KEY_B = "key-of-server-B-PLANTED-b2"
MODEL = "openai:stand-in"
SMALL = ["--chunk-size", "400", "--chunk-overlap", "40", "-q"]


@pytest.fixture()
def servers(monkeypatch: pytest.MonkeyPatch) -> Iterator[tuple[StandInLLM, StandInLLM]]:
    """Server A takes only KEY_A (held by A_KEY), server B only KEY_B (held by B_KEY)."""
    monkeypatch.setenv("A_KEY", KEY_A)
    monkeypatch.setenv("B_KEY", KEY_B)
    with StandInLLM(api_key=KEY_A) as a, StandInLLM(api_key=KEY_B) as b:
        yield a, b


def invoke(*args: object, env: dict[str, str] | None = None) -> Result:
    return CliRunner().invoke(main, [str(arg) for arg in args], env=env, catch_exceptions=False)


def kinds(server: StandInLLM, since: int = 0) -> Counter[str]:
    """The chat requests a server answered, by kind; every one of them answered 200."""
    chats = [entry for entry in server.log[since:] if entry["method"] == "POST"]
    assert {entry["status_code"] for entry in chats} <= {200}, [e for e in chats if e["status_code"] != 200]
    return Counter(entry["kind"] for entry in chats)


def no_key_in(folder: Path) -> None:
    for path in folder.rglob("*"):
        if path.is_file():
            data = path.read_bytes()
            assert KEY_A.encode() not in data and KEY_B.encode() not in data, path


def test_build_generates_on_one_server_and_critiques_on_another(
    servers: tuple[StandInLLM, StandInLLM], corpus: Path, tmp_path: Path
) -> None:
    a, b = servers
    result = invoke(
        "build", corpus, "--out", tmp_path / "run", "--generator-model", MODEL, "-n", "12", *SMALL,
        "--base-url", a.base_url, "--api-key-env", "A_KEY",
        "--critic-base-url", b.base_url, "--critic-api-key-env", "B_KEY",
    )  # fmt: skip
    assert result.exit_code == 0, result.output
    assert kinds(a) == {"generation": 12}
    assert set(kinds(b)) <= {"critique", "check", "reader"} and kinds(b).total() >= 12
    summary = json.loads((tmp_path / "run" / "summary.json").read_text())
    assert summary["funnel"]["kept"] > 0
    settings = summary["settings"]
    assert (settings["generator"]["base_url"], settings["generator"]["api_key_env"]) == (a.base_url, "A_KEY")
    assert (settings["critic"]["base_url"], settings["critic"]["api_key_env"]) == (b.base_url, "B_KEY")
    no_key_in(tmp_path / "run")


def test_stage_commands_keep_the_critics_own_server(
    servers: tuple[StandInLLM, StandInLLM], corpus: Path, tmp_path: Path
) -> None:
    a, b = servers
    run = tmp_path / "run"
    assert invoke("stage", "chunk", corpus, "--out", run, *SMALL).exit_code == 0
    generated = invoke(
        "stage", "generate", run, "--generator-model", MODEL, "--base-url", a.base_url, "--api-key-env",
        "A_KEY", "-n", "8", "-q",
        env={"QAGEN_CRITIC_BASE_URL": b.base_url},
    )  # fmt: skip
    assert generated.exit_code == 0, generated.output
    # `generate` takes no critic option (the critics' server in its environment is not read); the
    # critics' server comes from the environment of `critique`, their key variable is given now. The
    # generator's server in OPENAI_BASE_URL does not move the critics to it: `critique` has no
    # generator option.
    critiqued = invoke(
        "stage", "critique", run, "--critic-api-key-env", "B_KEY", "-q",
        env={"OPENAI_BASE_URL": a.base_url, "QAGEN_CRITIC_BASE_URL": b.base_url},
    )  # fmt: skip
    assert critiqued.exit_code == 0, critiqued.output
    # A later `critique` finds the critics' server and key in the run.
    assert invoke("stage", "critique", run, "-q", env={"OPENAI_BASE_URL": a.base_url}).exit_code == 0
    assert invoke("stage", "filter", run).exit_code == 0
    assert kinds(a) == {"generation": 8}
    assert set(kinds(b)) <= {"critique", "check", "reader"} and kinds(b).total() >= 8
    config = json.loads((run / "run.json").read_text())["config"]
    assert config["critic"]["base_url"] == b.base_url and config["critic"]["api_key_env"] == "B_KEY"
    assert config["generator"]["api_key_env"] == "A_KEY"


def _built(server: StandInLLM, corpus: Path, out: Path) -> None:
    result = invoke(
        "build", corpus, "--out", out, "--generator-model", MODEL, "--base-url", server.base_url,
        "--api-key-env", "A_KEY",
        "-n", "10", *SMALL,
    )  # fmt: skip
    assert result.exit_code == 0, result.output


def test_evaluate_reads_on_one_server_and_judges_on_another(
    servers: tuple[StandInLLM, StandInLLM], corpus: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    a, b = servers
    _built(a, corpus, tmp_path / "run")
    since = len(a.log)
    monkeypatch.setenv("OPENAI_API_KEY", KEY_A)  # the reader's key, where it is by default
    result = invoke(
        "evaluate", tmp_path / "run", "--baseline", "bm25", "--corpus", corpus, "--reader-model", MODEL,
        "--base-url", a.base_url, "--judge-api-key-env", "B_KEY", "--out", tmp_path / "eval",
        "--chunk-size", "400", "--k", "3", "-q", env={"QAGEN_JUDGE_BASE_URL": b.base_url},
    )  # fmt: skip
    assert result.exit_code == 0, result.output
    answered = json.loads((tmp_path / "eval" / "summary.json").read_text())["answered"]
    assert answered > 0
    assert kinds(a, since) == {"answer": answered}
    assert kinds(b) == {"judge_answer_correct": answered}  # the default judge
    no_key_in(tmp_path / "eval")


def test_evaluate_from_python_with_a_reader_and_a_judge_on_different_servers(
    servers: tuple[StandInLLM, StandInLLM], corpus: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    a, b = servers
    _built(a, corpus, tmp_path / "run")
    since = len(a.log)
    monkeypatch.setenv("OPENAI_API_KEY", KEY_A)
    summary = evaluate(
        EvalConfig(
            testset=tmp_path / "run",
            reader=ModelSettings(spec=MODEL, base_url=a.base_url),
            judge=ModelSettings(spec=MODEL, base_url=b.base_url, api_key_env="B_KEY"),
        ),
        rag_baseline(corpus, chunk_size=400, k=3, progress=False),
        tmp_path / "eval",
        progress=False,
    )
    assert summary.answered > 0 and summary.judges["answer_correct"].judged == summary.answered
    assert kinds(a, since) == {"answer": summary.answered}
    assert kinds(b) == {"judge_answer_correct": summary.answered}
    no_key_in(tmp_path / "eval")


# --------------------------------------------------------------------------- settings


def test_a_missing_key_variable_is_named(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("MY_JUDGE_KEY", raising=False)
    settings = ModelSettings(spec=MODEL, base_url="http://127.0.0.1:9/v1", api_key_env="MY_JUDGE_KEY")
    with pytest.raises(LLMUnavailableError, match="MY_JUDGE_KEY is not set"):
        build_backend(settings)


def test_any_langchain_model_takes_its_key_from_the_variable_named(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("B_KEY", KEY_B)
    settings = ModelSettings(spec=MODEL, base_url="http://127.0.0.1:9/v1", api_key_env="B_KEY")
    backend = LangChainBackend.from_settings(settings)
    assert backend.model.openai_api_key.get_secret_value() == KEY_B
    assert redact(f"the server said: {KEY_B}") == "the server said: ***"  # known to redaction once read


@pytest.mark.parametrize("value", [KEY_A, "sk-proj-abcdef123456", "hf_abcdef123456", "two words"])
def test_a_key_given_as_the_variable_name_is_refused_and_not_repeated(value: str, tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="not the key") as caught:
        ModelSettings(spec=MODEL, api_key_env=value)
    assert value not in str(caught.value)
    for flag in ("--api-key-env", "--critic-api-key-env"):
        result = CliRunner().invoke(main, ["build", str(tmp_path), "--out", str(tmp_path / "run"), flag, value])
        assert result.exit_code == 2 and flag in result.output and "not the key" in result.output
        assert value not in result.output
    result = CliRunner().invoke(main, ["evaluate", "x", "--out", str(tmp_path / "e"), "--judge-api-key-env", value])
    assert result.exit_code == 2 and value not in result.output
    assert not (tmp_path / "run").exists() and not (tmp_path / "e").exists()


def _config(*args: str) -> BuildConfig:
    """The settings `qagen build docs --out run ARGS` would build with (no command run)."""
    context = main.commands["build"].make_context("build", ["docs", "--out", "run", *args])
    not_settings = {"out", "quiet", "push_repo", "public", "dry_run", "update_corpus", "batch", "no_wait", "batch_poll"}
    options = {key: value for key, value in context.params.items() if key not in not_settings}
    return config_from_options(context, options, stored=None)


def test_the_critic_inherits_the_generators_server_and_key_unless_given_its_own() -> None:
    inherited = _config("--base-url", "http://127.0.0.1:1/v1", "--api-key-env", "A_KEY")
    assert inherited.critic.base_url == inherited.generator.base_url == "http://127.0.0.1:1/v1"
    assert inherited.critic.api_key_env == inherited.generator.api_key_env == "A_KEY"
    own = _config(
        "--base-url", "http://127.0.0.1:1/v1", "--critic-base-url", "http://127.0.0.1:2/v1",
        "--critic-api-key-env", "B_KEY",
    )  # fmt: skip
    assert (own.generator.base_url, own.generator.api_key_env) == ("http://127.0.0.1:1/v1", None)
    assert (own.critic.base_url, own.critic.api_key_env) == ("http://127.0.0.1:2/v1", "B_KEY")
    # Where the calls go and which variable holds the key do not change what a run produces.
    prompts = {"p": "h"}
    assert own.fingerprint(prompts) == BuildConfig(corpus=CorpusSettings(path="docs")).fingerprint(prompts)


def test_model_settings_hold_the_variable_name_never_the_key(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("B_KEY", KEY_B)
    settings = ModelSettings(spec=MODEL, base_url="http://user:Pw7qZx3@127.0.0.1:1/v1", api_key_env="B_KEY")
    dumped = settings.model_dump_json()
    assert "B_KEY" in dumped and KEY_B not in dumped and "Pw7qZx3" not in dumped
