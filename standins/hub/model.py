"""The stand-in Hub's data model: repos, commits, stored files, and the Hub's error shape."""

from __future__ import annotations

import hashlib
from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import datetime, timezone
from typing import Any

JSON = dict[str, Any]
RepoKey = tuple[str, str]  # (repo_type, repo_id)

REPO_TYPES = ("model", "dataset", "space")
DEFAULT_BRANCH = "main"

# The real Hub seeds every new repo with this file in an "initial commit"; `push_to_hub` relies on
# the repo having a head commit (it pins `parent_commit` to `repo_info().sha`).
INITIAL_GITATTRIBUTES = "".join(
    f"{pattern} filter=lfs diff=lfs merge=lfs -text\n"
    for pattern in (
        *("*.7z", "*.arrow", "*.bin", "*.bz2", "*.ckpt", "*.ftz", "*.gz", "*.h5", "*.joblib", "*.lz4"),
        *("*.mds", "*.mlmodel", "*.model", "*.msgpack", "*.npy", "*.npz", "*.onnx", "*.ot", "*.parquet"),
        *("*.pb", "*.pickle", "*.pkl", "*.pt", "*.pth", "*.rar", "*.safetensors", "*.tar", "*.tflite"),
        *("*.tgz", "*.wasm", "*.xz", "*.zip", "*.zst", "*tfevents*"),
    )
)


class HubError(Exception):
    """An HTTP error the way the Hub reports it: status, message and the `X-Error-Code` header."""

    def __init__(
        self, status: int, message: str, code: str | None = None, headers: Mapping[str, str] | None = None
    ) -> None:
        super().__init__(message)
        self.status = status
        self.message = message
        self.code = code
        self.headers = dict(headers or {})


def repo_not_found(repo_id: str) -> HubError:
    return HubError(404, f"Repository not found: {repo_id}", "RepoNotFound")


def git_blob_oid(data: bytes) -> str:
    """The git object id of a blob, which is what the Hub reports as a regular file's `oid`."""
    return hashlib.sha1(b"blob %d\0" % len(data) + data).hexdigest()


def lfs_pointer(sha256: str, size: int) -> bytes:
    return f"version https://git-lfs.github.com/spec/v1\noid sha256:{sha256}\nsize {size}\n".encode()


def hub_date(moment: float) -> str:
    """Dates in the one format `huggingface_hub.utils.parse_datetime` accepts."""
    stamp = datetime.fromtimestamp(moment, tz=timezone.utc)
    return stamp.strftime("%Y-%m-%dT%H:%M:%S.") + f"{stamp.microsecond // 1000:03d}Z"


@dataclass(frozen=True)
class StoredFile:
    """One file of a snapshot: inline bytes for regular files, an LFS object id otherwise."""

    size: int
    blob_id: str
    content: bytes | None = None
    lfs_sha256: str | None = None

    @property
    def pointer_size(self) -> int:
        return len(lfs_pointer(self.lfs_sha256 or "", self.size))

    @property
    def etag(self) -> str:
        return self.lfs_sha256 or self.blob_id


@dataclass(frozen=True)
class Commit:
    oid: str
    parents: tuple[str, ...]
    title: str
    message: str
    author: str
    date: float
    files: Mapping[str, StoredFile]


@dataclass
class Repo:
    repo_type: str
    repo_id: str
    private: bool
    created_at: float
    gated: str | bool = False
    commits: dict[str, Commit] = field(default_factory=dict)
    branches: dict[str, str] = field(default_factory=dict)  # includes "refs/pr/N" refs
    tags: dict[str, str] = field(default_factory=dict)
    pr_count: int = 0

    @property
    def namespace(self) -> str:
        return self.repo_id.split("/", 1)[0]
