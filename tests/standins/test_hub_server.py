"""The Hub stand-in, driven by the real `datasets` / `huggingface_hub` clients over loopback."""

from __future__ import annotations

import hashlib
import http.client
import json
import os
import signal
import subprocess
import sys
import urllib.error
import urllib.request
import uuid
from pathlib import Path

import datasets
import pytest
import yaml
from huggingface_hub import (
    CommitOperationAdd,
    DatasetCard,
    DatasetCardData,
    HfApi,
    hf_hub_download,
)
from huggingface_hub.errors import HfHubHTTPError, RepositoryNotFoundError

from standins.hub.server import StandInHub

TOKEN = "hf_test_token"
BOB_TOKEN = "hf_bob_token"  # the session `hub` fixture (conftest) knows both tokens
REPO_ROOT = Path(__file__).resolve().parent.parent


@pytest.fixture(autouse=True)
def _no_dataset_viewer(monkeypatch: pytest.MonkeyPatch) -> None:
    # load_dataset would otherwise ask "datasets-server.<HF_ENDPOINT host>" for exported infos.
    monkeypatch.setattr(datasets.config, "USE_PARQUET_EXPORT", False)


def new_repo(owner: str = "alice") -> str:
    # Unique per test: both libraries fall back to cached copies of a repo id they have seen.
    return f"{owner}/qa-{uuid.uuid4().hex[:12]}"


def readme_yaml(hub: StandInHub, repo_id: str) -> dict[str, object]:
    text = hub.repo_files(repo_id)["README.md"].decode()
    front = yaml.safe_load(text.split("---")[1])
    assert isinstance(front, dict)
    return front


def parquet_files(hub: StandInHub, repo_id: str) -> list[str]:
    return [path for path in hub.repo_files(repo_id) if path.endswith(".parquet")]


def test_push_private_then_load_gives_back_the_rows(hub: StandInHub) -> None:
    repo = new_repo()
    rows = {"question": ["What is RAG?", "Who wrote it?"], "score": [4, 5]}
    datasets.Dataset.from_dict(rows).push_to_hub(repo, token=TOKEN, private=True)

    assert hub.repo_exists(repo) and hub.is_private(repo)
    assert parquet_files(hub, repo) == ["data/train-00000-of-00001.parquet"]
    loaded = datasets.load_dataset(repo, split="train", token=TOKEN)
    assert loaded.to_dict() == rows


def test_two_configs_share_one_repo(hub: StandInHub) -> None:
    repo = new_repo()
    default = {"question": ["q1", "q2"], "answer": ["a1", "a2"]}
    candidates = {"question": ["c1", "c2", "c3"], "kept": [True, False, True]}
    datasets.Dataset.from_dict(default).push_to_hub(repo, config_name="default", token=TOKEN, private=True)
    datasets.Dataset.from_dict(candidates).push_to_hub(repo, config_name="candidates", token=TOKEN, private=True)

    configs = readme_yaml(hub, repo)["configs"]
    assert isinstance(configs, list)
    assert {config["config_name"] for config in configs} == {"default", "candidates"}
    assert sorted(parquet_files(hub, repo)) == [
        "candidates/train-00000-of-00001.parquet",
        "data/train-00000-of-00001.parquet",
    ]
    loaded = datasets.load_dataset(repo, "candidates", split="train", token=TOKEN)
    assert loaded.to_dict() == candidates
    assert datasets.load_dataset(repo, "default", split="train", token=TOKEN).to_dict() == default


def test_repush_of_a_config_replaces_its_shards(hub: StandInHub) -> None:
    repo = new_repo()
    first = datasets.Dataset.from_dict({"n": list(range(10))})
    first.push_to_hub(repo, token=TOKEN, private=True, num_shards=2)
    assert len(parquet_files(hub, repo)) == 2
    commits_after_first = len(hub.commits(repo))

    datasets.Dataset.from_dict({"n": [100, 200, 300]}).push_to_hub(repo, token=TOKEN, private=True)

    assert parquet_files(hub, repo) == ["data/train-00000-of-00001.parquet"]
    assert len(hub.commits(repo)) == commits_after_first + 1  # shards + card in one commit
    assert datasets.load_dataset(repo, split="train", token=TOKEN)["n"] == [100, 200, 300]


def test_private_repos_are_invisible_without_the_owners_token(hub: StandInHub) -> None:
    api = HfApi(endpoint=hub.url)
    private_repo, public_repo = new_repo(), new_repo()
    datasets.Dataset.from_dict({"x": [1]}).push_to_hub(private_repo, token=TOKEN, private=True)
    datasets.Dataset.from_dict({"x": [2]}).push_to_hub(public_repo, token=TOKEN, private=False)

    assert api.dataset_info(private_repo, token=TOKEN).private is True
    with pytest.raises(RepositoryNotFoundError):
        api.dataset_info(private_repo)
    with pytest.raises(RepositoryNotFoundError):
        api.dataset_info(private_repo, token=BOB_TOKEN)
    with pytest.raises(RepositoryNotFoundError):
        hf_hub_download(private_repo, "README.md", repo_type="dataset")
    with pytest.raises(datasets.exceptions.DatasetNotFoundError):
        datasets.load_dataset(private_repo, split="train")

    assert api.dataset_info(public_repo).private is False
    assert not hub.is_private(public_repo)
    assert datasets.load_dataset(public_repo, split="train")["x"] == [2]

    # Bob may read alice's public repo but not write to it.
    with pytest.raises(HfHubHTTPError) as denied:
        api.upload_file(
            path_or_fileobj=b"hi", path_in_repo="x.txt", repo_id=public_repo, repo_type="dataset", token=BOB_TOKEN
        )
    assert denied.value.response.status_code == 403

    api.update_repo_settings(public_repo, private=True, repo_type="dataset", token=TOKEN)
    assert hub.is_private(public_repo)
    with pytest.raises(RepositoryNotFoundError):
        api.dataset_info(public_repo)


def test_dataset_card_and_upload_folder(hub: StandInHub, tmp_path: Path) -> None:
    api = HfApi(endpoint=hub.url, token=TOKEN)
    repo = new_repo()
    api.create_repo(repo, repo_type="dataset", private=True)
    api.create_repo(repo, repo_type="dataset", private=True, exist_ok=True)  # 409 → tolerated

    # Built from text, as qagen's own card is: `from_template` needs Jinja2, which qagen does not.
    card = DatasetCard(f"---\n{DatasetCardData(license='apache-2.0', pretty_name='QA set').to_yaml()}\n---\n# QA set\n")
    card.push_to_hub(repo, repo_type="dataset", token=TOKEN)
    (tmp_path / "prompts" / "sub").mkdir(parents=True)
    (tmp_path / "prompts" / "generate.txt").write_text("Write a question about {context}\n")
    (tmp_path / "prompts" / "sub" / "critique.txt").write_text("Rate it 1-5.\n")
    api.upload_folder(folder_path=tmp_path / "prompts", path_in_repo="prompts", repo_id=repo, repo_type="dataset")

    readme = hf_hub_download(repo, "README.md", repo_type="dataset", token=TOKEN)
    assert "pretty_name: QA set" in Path(readme).read_text()
    prompt = hf_hub_download(repo, "prompts/sub/critique.txt", repo_type="dataset", token=TOKEN)
    assert Path(prompt).read_text() == "Rate it 1-5.\n"
    assert api.dataset_info(repo).card_data["license"] == "apache-2.0"  # type: ignore[index]
    assert set(api.list_repo_files(repo, repo_type="dataset")) == {
        ".gitattributes",
        "README.md",
        "prompts/generate.txt",
        "prompts/sub/critique.txt",
    }
    assert [commit.title for commit in hub.commits(repo)] == [
        "Upload folder using huggingface_hub",
        "Upload README.md with huggingface_hub",
        "initial commit",
    ]


def test_unknown_token_is_rejected_with_401(hub: StandInHub) -> None:
    api = HfApi(endpoint=hub.url)
    assert api.whoami(token=TOKEN)["name"] == "alice"
    with pytest.raises(HfHubHTTPError) as rejected:
        api.whoami(token="hf_not_a_token")
    assert rejected.value.response.status_code == 401
    with pytest.raises(HfHubHTTPError):
        datasets.Dataset.from_dict({"x": [1]}).push_to_hub(new_repo(), token="hf_not_a_token")


def test_push_to_a_branch_leaves_main_alone(hub: StandInHub) -> None:
    repo = new_repo()
    datasets.Dataset.from_dict({"v": [1]}).push_to_hub(repo, token=TOKEN, private=True)
    datasets.Dataset.from_dict({"v": [2]}).push_to_hub(repo, token=TOKEN, private=True, revision="next")

    assert set(hub.branches(repo)) == {"main", "next"}
    assert datasets.load_dataset(repo, split="train", token=TOKEN)["v"] == [1]
    assert datasets.load_dataset(repo, split="train", token=TOKEN, revision="next")["v"] == [2]
    refs = HfApi(endpoint=hub.url, token=TOKEN).list_repo_refs(repo, repo_type="dataset")
    assert {branch.name for branch in refs.branches} == {"main", "next"}


def test_hfapi_listing_commits_and_conflicts(hub: StandInHub) -> None:
    api = HfApi(endpoint=hub.url, token=TOKEN)
    repo = new_repo()
    api.create_repo(repo, repo_type="dataset")
    first = api.upload_file(path_or_fileobj=b"a" * 10, path_in_repo="dir/a.txt", repo_id=repo, repo_type="dataset")
    api.upload_file(path_or_fileobj=b"\0binary", path_in_repo="dir/b.bin", repo_id=repo, repo_type="dataset")

    tree = {entry.path: entry for entry in api.list_repo_tree(repo, "dir", repo_type="dataset")}
    assert set(tree) == {"dir/a.txt", "dir/b.bin"}
    lfs = tree["dir/b.bin"].lfs  # type: ignore[union-attr]
    assert lfs is not None and lfs.sha256 == hashlib.sha256(b"\0binary").hexdigest()
    infos = api.get_paths_info(repo, ["dir", "dir/a.txt", "missing"], repo_type="dataset", expand=True)
    assert [info.path for info in infos] == ["dir", "dir/a.txt"]
    assert infos[1].last_commit is not None and infos[1].last_commit.oid == first.oid
    assert len(api.list_repo_commits(repo, repo_type="dataset")) == 3

    # A commit based on a stale parent is refused with 412, as on the Hub.
    with pytest.raises(HfHubHTTPError) as stale:
        api.create_commit(
            repo,
            [CommitOperationAdd("c.txt", b"c")],
            commit_message="late",
            repo_type="dataset",
            parent_commit=first.oid,
        )
    assert stale.value.response.status_code == 412

    api.create_tag(repo, tag="v1", repo_type="dataset")
    assert hf_hub_download(repo, "dir/a.txt", repo_type="dataset", revision="v1", token=TOKEN)
    api.delete_file("dir/a.txt", repo, repo_type="dataset")
    assert not api.file_exists(repo, "dir/a.txt", repo_type="dataset")
    api.delete_repo(repo, repo_type="dataset")
    assert not hub.repo_exists(repo)


def test_raw_http_headers_ranges_and_error_codes(hub: StandInHub) -> None:
    repo = new_repo()
    hub.create_repo(repo, private=False)
    data = bytes(range(256)) * 4
    hub.upload_files(repo, {"blob.bin": data, "notes.txt": "hello"})
    base = f"{hub.url}/datasets/{repo}/resolve/main"

    head = urllib.request.urlopen(urllib.request.Request(f"{base}/blob.bin", method="HEAD"))
    sha = hashlib.sha256(data).hexdigest()
    assert head.headers["X-Linked-Etag"] == f'"{sha}"' and head.headers["ETag"] == f'"{sha}"'
    assert head.headers["X-Linked-Size"] == head.headers["Content-Length"] == str(len(data))
    assert head.headers["X-Repo-Commit"] == hub.commits(repo)[0].oid
    ranged = urllib.request.urlopen(urllib.request.Request(f"{base}/blob.bin", headers={"Range": "bytes=10-19"}))
    assert ranged.status == 206 and ranged.read() == data[10:20]
    assert ranged.headers["Content-Range"] == f"bytes 10-19/{len(data)}"

    for url, code in [
        (f"{hub.url}/datasets/alice/nope/resolve/main/x", "RepoNotFound"),
        (f"{hub.url}/datasets/{repo}/resolve/no-branch/notes.txt", "RevisionNotFound"),
        (f"{base}/missing.txt", "EntryNotFound"),
    ]:
        with pytest.raises(urllib.error.HTTPError) as error:
            urllib.request.urlopen(url)
        assert error.value.code == 404 and error.value.headers["X-Error-Code"] == code

    # Bodies sent with Transfer-Encoding: chunked (httpx does so for streams of unknown length).
    connection = http.client.HTTPConnection("127.0.0.1", hub.port, timeout=10)
    body = iter([b'{"content": "---\\nlicense: mit\\n', b'---\\n", "repoType": "dataset"}'])
    connection.request("POST", "/api/validate-yaml", body=body, encode_chunked=True)
    reply = connection.getresponse()
    assert reply.status == 200 and json.loads(reply.read()) == {"errors": [], "warnings": []}
    connection.request("POST", "/api/validate-yaml", body=b'{"content": "---\\n: [\\n---\\n"}')
    assert connection.getresponse().status == 400  # same keep-alive connection, invalid YAML
    connection.close()


def test_multipart_lfs_upload() -> None:
    payload = os.urandom(5000)
    with StandInHub(tokens={TOKEN: "alice"}, multipart_chunk_size=1024) as other:
        api = HfApi(endpoint=other.url, token=TOKEN)
        repo = new_repo()
        api.create_repo(repo, repo_type="dataset")
        api.upload_file(path_or_fileobj=payload, path_in_repo="big.parquet", repo_id=repo, repo_type="dataset")
        assert other.repo_files(repo)["big.parquet"] == payload
        parts = [r for r in other.requests if r.method == "PUT" and "/part/" in r.path]
        assert len(parts) == 5
        assert other.unhandled_routes == []


def test_a_new_hub_on_the_same_port_serves_pooled_connections() -> None:
    with StandInHub(tokens={TOKEN: "alice"}) as first:
        port = first.port
        api = HfApi(endpoint=first.url, token=TOKEN)
        repo = new_repo()
        api.create_repo(repo, repo_type="dataset")  # leaves a keep-alive connection in the pool
    with StandInHub(port=port, tokens={TOKEN: "alice"}) as second:
        assert not api.repo_exists(repo, repo_type="dataset")
        assert second.requests and second.requests[-1].path == f"/api/datasets/{repo}"


def test_cli_announces_its_url_and_stops_on_sigterm() -> None:
    process = subprocess.Popen(
        [sys.executable, "-m", "standins.hub.server", "--port", "0", "--token", "hf_cli:carol"],
        cwd=REPO_ROOT,
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert process.stdout is not None
        line = process.stdout.readline().strip()
        prefix = "stand-in Hub listening on http://127.0.0.1:"
        assert line.startswith(prefix) and line[len(prefix) :].isdigit()
        request = urllib.request.Request(
            line.rsplit(" ", 1)[1] + "/api/whoami-v2", headers={"Authorization": "Bearer hf_cli"}
        )
        assert b'"name": "carol"' in urllib.request.urlopen(request, timeout=10).read()
        process.send_signal(signal.SIGTERM)
        assert process.wait(timeout=10) == 0
    finally:
        if process.poll() is None:
            process.kill()
            process.wait()
