"""`qagen push` / `push_run` against the stand-in Hub, through the real `datasets` and `huggingface_hub`."""

from __future__ import annotations

import hashlib
import io
import json
import os
import socket
import subprocess
import sys
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import datasets
import pyarrow.parquet as pq
import pytest
import yaml
from click.testing import CliRunner, Result

from qagen.cli.app import main
from qagen.cli.push import push
from qagen.llm.prompts import prompts_dir
from qagen.publish.push import push_run
from standins.corpus import write_corpus
from standins.hub.routes import HubApp
from standins.hub.server import StandInHub

TOKEN = "hf_test_token"  # alice on the session `hub`
BOB_TOKEN = "hf_bob_token"
REPO_ROOT = Path(__file__).resolve().parent.parent
OPENAI_KEY = "sk-test-PLANTED-7f3a9c2e41d8b6aa11"
HF_SHAPED = "hf_PLANTEDabcdefghijklmnopqrstuvwxyz0123"


@pytest.fixture(autouse=True)
def _no_dataset_viewer(monkeypatch: pytest.MonkeyPatch) -> None:
    # load_dataset would otherwise ask "datasets-server.<HF_ENDPOINT host>" for exported infos.
    monkeypatch.setattr(datasets.config, "USE_PARQUET_EXPORT", False)


@pytest.fixture(autouse=True)
def _no_progress_bars() -> Iterator[None]:
    # datasets draws its upload bars on stderr, where the tests read the one-sentence errors. (They
    # were silenced by the build run in the same process until the build wrote without datasets.)
    datasets.disable_progress_bars()
    yield
    datasets.enable_progress_bars()


def new_repo(owner: str = "alice") -> str:
    # Unique per test: both libraries fall back to cached copies of a repo id they have seen.
    return f"{owner}/qa-{uuid.uuid4().hex[:12]}"


def build(llm: Any, corpus: Path, out: Path, *extra: str) -> Path:
    args = ["build", str(corpus), "--out", str(out), "--generator-model", "openai:stand-in", "--base-url", llm.base_url]
    args += ["--seed", "7", "--chunk-size", "400", "--chunk-overlap", "40", "-q", "--vetting", "cookbook", *extra]
    result = CliRunner().invoke(main, args, catch_exceptions=False)
    assert result.exit_code == 0, result.output
    return out


@pytest.fixture()
def run_dir(llm: Any, corpus: Path, tmp_path: Path) -> Path:
    return build(llm, corpus, tmp_path / "run", "--n-generations", "16")


def push_cli(*args: str, env: dict[str, str] | None = None) -> Result:
    return CliRunner().invoke(push, list(args), env=env, catch_exceptions=False)


def tree_hash(root: Path) -> dict[str, str]:
    """Every file and folder under `root` with its content hash: a push must change none of them."""
    return {
        str(path.relative_to(root)): hashlib.sha256(path.read_bytes()).hexdigest() if path.is_file() else "dir"
        for path in sorted(root.rglob("*"))
    }


def front_matter(hub: StandInHub, repo: str, revision: str = "main") -> dict[str, Any]:
    text = hub.repo_files(repo, revision)["README.md"].decode()
    data = yaml.safe_load(text.split("---")[1])
    assert isinstance(data, dict)
    return data


def parquet_files(hub: StandInHub, repo: str) -> list[str]:
    return sorted(path for path in hub.repo_files(repo) if path.endswith(".parquet"))


def readable(path: str, data: bytes) -> str:
    """A pushed file as text; parquet pages are compressed, so their rows are decoded first."""
    if path.endswith(".parquet"):
        return json.dumps(pq.read_table(io.BytesIO(data)).to_pylist(), ensure_ascii=False)
    return data.decode("utf-8", errors="replace")


def one_sentence(result: Result) -> str:
    """The error line of a failed command, after checking it is the only one and no traceback."""
    assert result.exit_code == 1, result.output
    lines = [line for line in result.stderr.splitlines() if line.strip()]
    assert len(lines) == 1 and lines[0].startswith("error: "), result.stderr
    assert "Traceback" not in result.output
    return lines[0]


# --- the happy path ------------------------------------------------------------------------------
def test_push_then_load_gives_back_both_configs(hub: StandInHub, run_dir: Path) -> None:
    repo = new_repo()
    before = tree_hash(run_dir)
    result = push_cli(str(run_dir), repo, "--token", TOKEN)
    assert result.exit_code == 0, result.output
    assert f"/datasets/{repo}" in result.stdout and "private" in result.stdout

    assert hub.is_private(repo)
    assert tree_hash(run_dir) == before
    kept = datasets.load_from_disk(str(run_dir / "dataset")).to_list()
    candidates = datasets.load_from_disk(str(run_dir / "candidates")).to_list()
    assert 0 < len(kept) < len(candidates) == 16
    assert datasets.load_dataset(repo, split="train", token=TOKEN).to_list() == kept
    assert datasets.load_dataset(repo, "candidates", split="train", token=TOKEN).to_list() == candidates
    assert parquet_files(hub, repo) == ["candidates/train-00000-of-00001.parquet", "data/train-00000-of-00001.parquet"]


def test_card_metadata_body_prompts_and_summary(hub: StandInHub, run_dir: Path) -> None:
    repo = new_repo()
    assert push_cli(str(run_dir), repo, "--token", TOKEN, "--license", "CC-BY-4.0").exit_code == 0
    files = hub.repo_files(repo)
    summary = json.loads((run_dir / "summary.json").read_text())

    meta = front_matter(hub, repo)
    configs = {config["config_name"]: config["data_files"] for config in meta["configs"]}
    assert configs == {
        "default": [{"split": "train", "path": "data/train-*"}],
        "candidates": [{"split": "train", "path": "candidates/train-*"}],
    }
    # datasets' own metadata, merged into the card by push_to_hub, is kept.
    infos = {info["config_name"]: info for info in meta["dataset_info"]}
    assert infos["default"]["splits"][0]["num_examples"] == summary["funnel"]["kept"]
    assert infos["candidates"]["splits"][0]["num_examples"] == 16
    assert meta["task_categories"] == ["question-answering"]
    assert meta["language"] == ["en"]
    assert meta["size_categories"] == ["n<1K"]
    assert meta["license"] == "cc-by-4.0"
    assert meta["tags"] == ["synthetic", "rag-evaluation", "qagen"]
    assert meta["pretty_name"] == repo.split("/")[1]

    body = files["README.md"].decode().split("---", 2)[2]
    funnel, corpus = summary["funnel"], summary["corpus"]
    for label, value in [
        ("documents", corpus["documents"]),
        ("chunks", corpus["chunks"]),
        ("sampled chunks", funnel["sampled"]),
        ("drafted", funnel["drafted"]),
        ("rejected by the critics", funnel["rejected"]),
        *((f"rejected by {name}", count) for name, count in funnel["rejected_by"].items()),
        ("near-duplicates dropped", funnel["duplicates"]),
    ]:
        assert f"| {label} | {value} |" in body
    assert f"| **kept** | **{funnel['kept']}** |" in body
    assert "Generator (drafts): `openai:stand-in`" in body and "Critics (ratings): `openai:stand-in`" in body
    assert "| chunking | 400 characters, overlap 40 |" in body and "| seed | 7 |" in body
    assert "groundedness 4, relevance 4, standalone 4" in body
    assert f'load_dataset("{repo}", split="train")' in body
    assert f'load_dataset("{repo}", "candidates", split="train")' in body
    assert f"qagen evaluate {repo} --baseline bm25 --corpus PATH --out eval" in body

    # Every prompt of the run is in the repo, with its hash and a link in the card.
    for name, short_hash in summary["prompts"].items():
        text = files[f"prompts/{name}.txt"]
        assert text == (prompts_dir() / f"{name}.txt").read_bytes()
        assert hashlib.sha256(text).hexdigest().startswith(short_hash)
        assert f"| `{name}` | `{short_hash}` | [prompts/{name}.txt](prompts/{name}.txt) |" in body
    assert {path for path in files if path.startswith("prompts/")} == {f"prompts/{n}.txt" for n in summary["prompts"]}

    # The published summary is the run's, without the server address or the corpus location.
    published = json.loads(files["summary.json"])
    assert published["funnel"] == funnel and published["prompts"] == summary["prompts"]
    assert published["settings"]["generator"]["base_url"] == "(not published)"
    assert published["settings"]["corpus"]["path"] == "(not published)"
    assert "127.0.0.1" not in files["README.md"].decode() + files["summary.json"].decode()


def test_python_api_names_the_commit_and_fills_in_the_namespace(hub: StandInHub, run_dir: Path) -> None:
    name = new_repo().split("/")[1]
    result = push_run(run_dir, name, token=TOKEN)
    assert result.repo_id == f"alice/{name}" and result.private
    assert result.commit == hub.commits(result.repo_id)[0].oid
    assert result.url.endswith(f"/datasets/alice/{name}")


def test_token_from_hf_token_env(hub: StandInHub, run_dir: Path) -> None:
    repo = new_repo()
    assert push_cli(str(run_dir), repo, env={"HF_TOKEN": TOKEN}).exit_code == 0
    assert hub.repo_exists(repo)


def test_push_to_a_branch_leaves_main_alone(hub: StandInHub, run_dir: Path) -> None:
    repo = new_repo()
    assert push_cli(str(run_dir), repo, "--token", TOKEN, "--revision", "v2").exit_code == 0
    assert set(hub.branches(repo)) == {"main", "v2"}
    assert "README.md" not in hub.repo_files(repo, "main")
    kept = datasets.load_from_disk(str(run_dir / "dataset")).to_list()
    assert datasets.load_dataset(repo, split="train", token=TOKEN, revision="v2").to_list() == kept
    assert 'revision="v2"' in hub.repo_files(repo, "v2")["README.md"].decode()


# --- visibility ----------------------------------------------------------------------------------
def test_public_only_when_asked(hub: StandInHub, run_dir: Path) -> None:
    public = new_repo()
    assert push_cli(str(run_dir), public, "--token", TOKEN, "--public").exit_code == 0
    assert not hub.is_private(public)
    assert datasets.load_dataset(public, split="train").num_rows > 0  # no token needed


def test_a_push_without_public_adds_nothing_to_a_public_repo(hub: StandInHub, run_dir: Path) -> None:
    public = new_repo()
    assert push_cli(str(run_dir), public, "--token", TOKEN, "--public").exit_code == 0
    commits = len(hub.commits(public))
    message = one_sentence(push_cli(str(run_dir), public, "--token", TOKEN))
    assert "is public" in message and "--public" in message
    assert len(hub.commits(public)) == commits


def test_public_is_the_opt_in_that_makes_a_private_repo_public(hub: StandInHub, run_dir: Path) -> None:
    private = new_repo()
    assert push_cli(str(run_dir), private, "--token", TOKEN).exit_code == 0
    assert hub.is_private(private)
    result = push_cli(str(run_dir), private, "--token", TOKEN, "--public")
    assert result.exit_code == 0 and "(public," in result.stdout
    assert not hub.is_private(private)


# --- re-push and ownership -----------------------------------------------------------------------
def test_repush_updates_without_duplicating_shards(hub: StandInHub, run_dir: Path) -> None:
    repo = new_repo()
    assert push_cli(str(run_dir), repo, "--token", TOKEN).exit_code == 0
    first = len(hub.commits(repo))
    # Re-filter the same run with a lower bar: more kept rows, same shard names.
    result = CliRunner().invoke(main, ["stage", "filter", str(run_dir), "--min-score", "2"], catch_exceptions=False)
    assert result.exit_code == 0, result.output
    assert push_cli(str(run_dir), repo, "--token", TOKEN).exit_code == 0

    assert parquet_files(hub, repo) == ["candidates/train-00000-of-00001.parquet", "data/train-00000-of-00001.parquet"]
    assert len(hub.commits(repo)) == first + 3  # card + prompts + summary, then one per config
    # The re-pushed shard holds the new rows (read as stored: `test_push_then_load_gives_back_both_configs`
    # loads a pushed set back through `datasets`).
    kept = datasets.load_from_disk(str(run_dir / "dataset")).to_list()
    files = hub.repo_files(repo)
    assert pq.read_table(io.BytesIO(files["data/train-00000-of-00001.parquet"])).to_pylist() == kept
    summary = json.loads((run_dir / "summary.json").read_text())
    assert f"| **kept** | **{summary['funnel']['kept']}** |" in files["README.md"].decode()


def test_foreign_repo_needs_force(hub: StandInHub, run_dir: Path) -> None:
    repo = new_repo()
    hub.create_repo(repo, private=True)
    hub.upload_files(repo, {"README.md": "---\nlicense: mit\n---\n# Survey answers\n", "data/answers.csv": "a\n1\n"})
    before = hub.repo_files(repo)

    message = one_sentence(push_cli(str(run_dir), repo, "--token", TOKEN))
    assert "qagen did not make" in message and "--force" in message
    assert hub.repo_files(repo) == before

    assert push_cli(str(run_dir), repo, "--token", TOKEN, "--force").exit_code == 0
    assert "qagen" in front_matter(hub, repo)["tags"]


def test_an_empty_repo_made_beforehand_is_not_foreign(hub: StandInHub, run_dir: Path) -> None:
    repo = new_repo()
    hub.create_repo(repo, private=True)  # e.g. made on the website: only .gitattributes
    assert push_cli(str(run_dir), repo, "--token", TOKEN).exit_code == 0


# --- secrets -------------------------------------------------------------------------------------
def test_secrets_never_reach_the_hub(
    hub: StandInHub, llm: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    corpus = write_corpus(tmp_path / "corpus", documents=3, paragraphs=1)
    (corpus / "ops notes.txt").write_text(
        f"The deploy key of the staging cluster is {OPENAI_KEY} and the Hub token is {TOKEN}. "
        f"The old mirror used {HF_SHAPED} until the rotation in the third year.",
        encoding="utf-8",
    )
    monkeypatch.setenv("OPENAI_API_KEY", OPENAI_KEY)
    llm.configure(api_key=OPENAI_KEY)
    run = build(llm, corpus, tmp_path / "run")
    # A run made with an older qagen may hold a server URL with credentials and an internal host.
    summary_file = run / "summary.json"
    summary = json.loads(summary_file.read_text())
    summary["settings"]["generator"]["base_url"] = f"http://deploy:{OPENAI_KEY}@llm.corp.internal:8000/v1"
    summary_file.write_text(json.dumps(summary))
    local = datasets.load_from_disk(str(run / "candidates")).to_list()
    assert any(OPENAI_KEY in row["context"] for row in local)  # the planted chunk was drafted
    before = tree_hash(run)

    repo = new_repo()
    result = push_run(run, repo, token=TOKEN)
    assert result.masked_values > 0

    pushed = {path: readable(path, data) for path, data in hub.repo_files(repo).items()}
    assert any("***" in text for path, text in pushed.items() if path.startswith("candidates/"))
    for path, text in pushed.items():
        for secret in (OPENAI_KEY, TOKEN, HF_SHAPED, "llm.corp.internal"):
            assert secret not in text, f"{secret} reached {path}"
    assert tree_hash(run) == before


# --- failures ------------------------------------------------------------------------------------
def test_rejected_token_is_one_sentence(hub: StandInHub, run_dir: Path) -> None:
    before = tree_hash(run_dir)
    message = one_sentence(push_cli(str(run_dir), new_repo(), "--token", "hf_not_a_real_token"))
    assert "rejected the token (401" in message
    assert "hf_not_a_real_token" not in message
    assert tree_hash(run_dir) == before


def test_no_token_at_all(hub: StandInHub, run_dir: Path) -> None:
    message = one_sentence(push_cli(str(run_dir), new_repo()))
    assert "No Hugging Face token" in message and "--token" in message


def test_no_write_access_is_one_sentence(hub: StandInHub, run_dir: Path) -> None:
    message = one_sentence(push_cli(str(run_dir), new_repo(owner="bob"), "--token", TOKEN))
    assert "403" in message and "may not write" in message


def test_not_a_finished_run(hub: StandInHub, tmp_path: Path) -> None:
    (tmp_path / "empty").mkdir()
    message = one_sentence(push_cli(str(tmp_path / "empty"), new_repo(), "--token", TOKEN))
    assert "not a qagen run directory" in message


def _closed_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def test_unreachable_hub_exits_non_zero_with_one_sentence(run_dir: Path, tmp_path: Path) -> None:
    # HF_ENDPOINT is read at import time, so the CLI runs in its own process pointed at a dead port.
    before = tree_hash(run_dir)
    env = {
        **os.environ,
        "HF_ENDPOINT": f"http://127.0.0.1:{_closed_port()}",
        "HF_HOME": str(tmp_path / "hf_home"),
        "HF_TOKEN": TOKEN,
        "HF_HUB_ETAG_TIMEOUT": "2",
    }
    code = "import sys; from qagen.cli.push import push; push(prog_name='qagen push')"
    process = subprocess.run(
        [sys.executable, "-c", code, str(run_dir), new_repo()],
        cwd=REPO_ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert process.returncode == 1, process.stderr
    lines = [line for line in process.stderr.splitlines() if line.strip()]
    assert len(lines) == 1 and lines[0].startswith("error: Cannot reach the Hugging Face Hub"), process.stderr
    assert TOKEN not in process.stderr
    assert tree_hash(run_dir) == before


@pytest.mark.filterwarnings("ignore::pytest.PytestUnhandledThreadExceptionWarning")  # the dropping thread's exit
def test_connection_dropped_mid_push_then_push_again(
    hub: StandInHub, run_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    repo = new_repo()
    commit_route = f"/api/datasets/{repo}/commit/main"
    seen: list[str] = []
    real_call = HubApp.__call__

    def drop_data_commits(app: HubApp, request: Any) -> Any:
        # The first commit (card, prompts, summary) lands; every later one has its connection cut
        # before an answer, as by a network failure. SystemExit ends the handler thread silently.
        if request.method == "POST" and request.path == commit_route and not dropping_stopped:
            seen.append(request.path)
            if len(seen) > 1:
                raise SystemExit
        return real_call(app, request)

    dropping_stopped = False
    monkeypatch.setattr(HubApp, "__call__", drop_data_commits)
    before = tree_hash(run_dir)
    message = one_sentence(push_cli(str(run_dir), repo, "--token", TOKEN))
    assert "connection to the Hub" in message and "was lost" in message and "push again" in message
    assert tree_hash(run_dir) == before
    assert parquet_files(hub, repo) == []

    dropping_stopped = True
    assert push_cli(str(run_dir), repo, "--token", TOKEN).exit_code == 0  # still recognised as qagen's
    kept = datasets.load_from_disk(str(run_dir / "dataset")).to_list()
    assert datasets.load_dataset(repo, split="train", token=TOKEN).to_list() == kept


def test_a_run_that_kept_nothing_is_refused(hub: StandInHub, llm: Any, corpus: Path, tmp_path: Path) -> None:
    run = build(llm, corpus, tmp_path / "run", "--n-generations", "4", "--min-score", "5")
    assert json.loads((run / "summary.json").read_text())["funnel"]["kept"] == 0
    message = one_sentence(push_cli(str(run), new_repo(), "--token", TOKEN))
    assert "kept no questions" in message
