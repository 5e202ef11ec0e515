"""A local stand-in for the Hugging Face Hub HTTP API, for tests and offline demos.

It speaks enough of the Hub's protocol for `datasets.Dataset.push_to_hub` / `load_dataset`,
`huggingface_hub.HfApi` (create/delete repo, commits with LFS, upload_file/upload_folder, tree,
paths-info, refs, commits, branches, tags, settings) and `DatasetCard.push_to_hub` to work against
it, keeping everything in memory. It only ever binds a loopback address.

Point the clients at it *before* importing them (both read these at import time)::

    HF_ENDPOINT=http://127.0.0.1:8001 HF_HUB_DISABLE_XET=1

and, for `load_dataset`, set `datasets.config.USE_PARQUET_EXPORT = False` (otherwise it asks a
`datasets-server.` host derived from HF_ENDPOINT). In Python::

    with StandInHub(port=8001, tokens={"hf_test_token": "alice"}) as hub:
        ...  # push as alice with token="hf_test_token"
        assert hub.is_private("alice/qa")

From a shell (serves until SIGTERM / Ctrl-C)::

    python -m standins.hub.server --port 8001 --token hf_xxx:alice
"""

from __future__ import annotations

import argparse
import hashlib
import ipaddress
import os
import signal
import sys
import threading
from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime, timezone
from types import FrameType, TracebackType

from standins.hub import views
from standins.hub.commit_payload import AddFile, AddLfsFile, Operation
from standins.hub.http import HubHTTPServer, RequestRecord
from standins.hub.lfs import LfsUploads
from standins.hub.model import DEFAULT_BRANCH, Repo
from standins.hub.routes import HubApp
from standins.hub.store import HubStore

__all__ = ["HubCommit", "RequestRecord", "StandInHub", "main"]


@dataclass(frozen=True)
class HubCommit:
    """A commit as the inspection helpers report it (`files`: every path in its snapshot)."""

    oid: str
    title: str
    message: str
    author: str
    date: datetime
    parents: tuple[str, ...]
    files: tuple[str, ...]


class StandInHub:
    """An in-memory Hub on `http://{host}:{port}`; use as a context manager or start()/stop().

    Args:
        port: Port to listen on; 0 picks a free one (see `.port` / `.url` after start).
        tokens: Access token → user name. The user owns the namespace of the same name.
        host: Loopback address to bind (anything else is refused).
        orgs: Organisation name → member user names (members may write to the org namespace).
        multipart_chunk_size: If set, LFS objects larger than this are uploaded in parts of this
            size (the Hub's multipart transfer), otherwise in one PUT.
        debug: Log every request to stderr (default: env `QAGEN_HUB_DEBUG`). Requests to unknown
            routes are always reported on stderr and listed in `unhandled_routes`.
    """

    def __init__(
        self,
        port: int = 0,
        tokens: Mapping[str, str] | None = None,
        *,
        host: str = "127.0.0.1",
        orgs: Mapping[str, Collection[str]] | None = None,
        multipart_chunk_size: int | None = None,
        debug: bool | None = None,
    ) -> None:
        if not ipaddress.ip_address(host).is_loopback:
            raise ValueError(f"the stand-in Hub only listens on loopback, not {host}")
        self.host = host
        self._port = port  # the bound port once started; restarting reuses it
        self.store = HubStore(tokens or {}, orgs or {})
        self.lfs = LfsUploads(self.store, multipart_chunk_size)
        debug = bool(os.environ.get("QAGEN_HUB_DEBUG")) if debug is None else debug
        self.app = HubApp(self.store, self.lfs, debug)
        self._server: HubHTTPServer | None = None
        self._thread: threading.Thread | None = None

    # -- lifecycle ----------------------------------------------------------------------------
    def start(self) -> StandInHub:
        if self._server is not None:
            return self
        server = HubHTTPServer((self.host, self._port), self.app, self.app.record, self.app.debug)
        self._server = server
        self._port = int(server.server_address[1])
        self._thread = threading.Thread(
            target=server.serve_forever, kwargs={"poll_interval": 0.1}, name=f"stand-in-hub-{self.port}", daemon=True
        )
        self._thread.start()
        return self

    def stop(self) -> None:
        """Stop serving and cut pooled keep-alive connections (so a new hub may reuse the port)."""
        server, self._server = self._server, None
        if server is None:
            return
        server.shutdown()
        server.close_connections()
        server.server_close()
        if self._thread is not None:
            self._thread.join(timeout=5)

    def __enter__(self) -> StandInHub:
        return self.start()

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.stop()

    @property
    def port(self) -> int:
        return self._port

    @property
    def url(self) -> str:
        return f"http://{self.host}:{self.port}"

    # -- inspection ---------------------------------------------------------------------------
    @property
    def requests(self) -> list[RequestRecord]:
        """Every request served so far, in order (method, path, query, status, user)."""
        return self.app.records()

    @property
    def unhandled_routes(self) -> list[str]:
        """`METHOD /path` of requests no route matched (answered 404 without an X-Error-Code)."""
        return self.app.unhandled_routes()

    def clear_requests(self) -> None:
        self.app.clear_log()

    def _repo(self, repo_id: str, repo_type: str) -> Repo:
        repo = self.store.find((repo_type, repo_id))
        if repo is None:
            raise KeyError(f"no {repo_type} repo {repo_id!r} on the stand-in Hub")
        return repo

    def repo_exists(self, repo_id: str, repo_type: str = "dataset") -> bool:
        return self.store.find((repo_type, repo_id)) is not None

    def is_private(self, repo_id: str, repo_type: str = "dataset") -> bool:
        return self._repo(repo_id, repo_type).private

    def branches(self, repo_id: str, repo_type: str = "dataset") -> dict[str, str]:
        """Branch name → head commit id (pull requests appear as `refs/pr/N`)."""
        with self.store.lock:
            return dict(self._repo(repo_id, repo_type).branches)

    def repo_files(self, repo_id: str, revision: str = DEFAULT_BRANCH, repo_type: str = "dataset") -> dict[str, bytes]:
        """Path → content at `revision` (LFS files resolved to their bytes)."""
        repo = self._repo(repo_id, repo_type)
        commit = self.store.resolve(repo, revision)
        return {path: self.store.content(stored) for path, stored in sorted(commit.files.items())}

    def commits(self, repo_id: str, revision: str = DEFAULT_BRANCH, repo_type: str = "dataset") -> list[HubCommit]:
        """First-parent history of `revision`, newest first (like `HfApi.list_repo_commits`)."""
        repo = self._repo(repo_id, repo_type)
        return [
            HubCommit(
                c.oid,
                c.title,
                c.message,
                c.author,
                datetime.fromtimestamp(c.date, tz=timezone.utc),
                c.parents,
                tuple(sorted(c.files)),
            )
            for c in self.store.history(repo, self.store.resolve(repo, revision))
        ]

    # -- seeding (no HTTP) --------------------------------------------------------------------
    def create_repo(self, repo_id: str, *, private: bool = False, repo_type: str = "dataset") -> None:
        """Create a repo owned by its namespace (as if that user had created it)."""
        self.store.create_repo((repo_type, repo_id), repo_id.split("/", 1)[0], private)

    def upload_files(
        self,
        repo_id: str,
        files: Mapping[str, bytes | str],
        *,
        revision: str = DEFAULT_BRANCH,
        message: str = "Upload files",
        repo_type: str = "dataset",
    ) -> str:
        """Commit `files` directly (LFS where the Hub would use it); returns the commit id."""
        repo = self._repo(repo_id, repo_type)
        head = self.store.resolve(repo, revision)
        operations: list[Operation] = []
        for path, content in files.items():
            data = content.encode() if isinstance(content, str) else content
            if views.upload_mode(self.store, head, path, len(data), data[:512]) == "lfs":
                oid = hashlib.sha256(data).hexdigest()
                with self.store.lock:
                    self.store.lfs_objects[oid] = data
                operations.append(AddLfsFile(path, oid, len(data)))
            else:
                operations.append(AddFile(path, data))
        commit, _ = self.store.commit(repo, revision, {"summary": message}, operations, repo.namespace, create_pr=False)
        return commit.oid


def _pairs(values: Sequence[str], flag: str) -> list[tuple[str, str]]:
    pairs = []
    for value in values:
        left, sep, right = value.partition(":")
        if not sep or not left or not right:
            raise SystemExit(f"{flag} expects LEFT:RIGHT, got {value!r}")
        pairs.append((left, right))
    return pairs


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m standins.hub.server",
        description="Serve an in-memory stand-in for the Hugging Face Hub API on loopback. "
        "Clients need HF_ENDPOINT=<url> and HF_HUB_DISABLE_XET=1.",
    )
    parser.add_argument("--port", type=int, default=8001, help="port (0: any free one)")
    parser.add_argument("--host", default="127.0.0.1", help="loopback address to bind")
    parser.add_argument(
        "--token", action="append", default=[], metavar="TOKEN:USER", help="accept TOKEN as USER (repeatable)"
    )
    parser.add_argument(
        "--org",
        action="append",
        default=[],
        metavar="ORG:USER[,USER...]",
        help="members of organisation ORG (repeatable)",
    )
    parser.add_argument("--debug", action="store_true", help="log every request to stderr")
    args = parser.parse_args(argv)
    tokens = dict(_pairs(args.token, "--token"))
    orgs = {org: members.split(",") for org, members in _pairs(args.org, "--org")}
    stopped = threading.Event()

    def on_signal(signum: int, frame: FrameType | None) -> None:
        stopped.set()

    signal.signal(signal.SIGTERM, on_signal)
    signal.signal(signal.SIGINT, on_signal)
    with StandInHub(args.port, tokens, host=args.host, orgs=orgs, debug=args.debug) as hub:
        print(f"stand-in Hub listening on {hub.url}", flush=True)
        while not stopped.wait(0.5):
            pass
    return 0


if __name__ == "__main__":
    sys.exit(main())
