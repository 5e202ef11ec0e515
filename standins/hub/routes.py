"""Routing of the stand-in Hub: which URL does what, with the status codes and headers of the Hub."""

from __future__ import annotations

import base64
import re
import sys
import threading

from standins.hub import views
from standins.hub.commit_payload import parse_commit_payload
from standins.hub.http import Request, RequestRecord, Response
from standins.hub.lfs import TICKET_PREFIX, LfsUploads
from standins.hub.model import DEFAULT_BRANCH, JSON, HubError, Repo, RepoKey
from standins.hub.store import HubStore

_PLURAL = {"models": "model", "datasets": "dataset", "spaces": "space"}
_URL_PREFIX = {"model": "", "dataset": "datasets/", "space": "spaces/"}
_RANGE = re.compile(r"^bytes=(\d*)-(\d*)$")
_REPO_ACTIONS = frozenset(
    ("", "revision", "tree", "paths-info", "refs", "commits", "preupload", "commit", "branch", "tag", "settings")
)
# Need a token with write access to the namespace; every other repo route needs read access only.
_WRITES = frozenset(
    (method, action)
    for method, actions in (("POST", ("preupload", "commit", "branch", "tag")), ("DELETE", ("branch", "tag")))
    for action in actions
) | {("PUT", "settings")}


def repo_url(base_url: str, repo: Repo) -> str:
    return f"{base_url}/{_URL_PREFIX[repo.repo_type]}{repo.repo_id}"


def _split_revision(rest: list[str]) -> tuple[str, list[str]]:
    """Revision and remaining segments; `refs/pr/N` may arrive unquoted as three segments."""
    if len(rest) >= 3 and rest[0] == "refs" and rest[1] in ("pr", "convert", "heads", "tags"):
        return "/".join(rest[:3]), rest[3:]
    return (rest[0], rest[1:]) if rest else (DEFAULT_BRANCH, [])


class HubApp:
    """The stand-in's request → response function, plus its request log."""

    def __init__(self, store: HubStore, lfs: LfsUploads, debug: bool) -> None:
        self.store = store
        self.lfs = lfs
        self.debug = debug
        self.log: list[RequestRecord] = []
        self.unhandled: list[str] = []
        self._log_lock = threading.Lock()

    def record(self, record: RequestRecord) -> None:
        with self._log_lock:
            self.log.append(record)

    def records(self) -> list[RequestRecord]:
        with self._log_lock:
            return list(self.log)

    def unhandled_routes(self) -> list[str]:
        with self._log_lock:
            return list(self.unhandled)

    def clear_log(self) -> None:
        with self._log_lock:
            self.log.clear()
            self.unhandled.clear()

    def __call__(self, req: Request) -> Response:
        # One request at a time past this point (bodies are already read): the views iterate live
        # dicts (branches, files) that a concurrent commit would otherwise change under them.
        with self.store.lock:
            return self._route(req)

    def _route(self, req: Request) -> Response:
        segments, method = req.segments, req.method
        if req.path.startswith(TICKET_PREFIX):  # pre-signed-style upload URLs: no Authorization
            return self._lfs_ticket(req, segments[2:])
        token = req.token()
        if token is not None:
            req.user = self.store.user_for_token(token)
            if req.user is None:
                # This exact X-Error-Message keeps hf_raise_for_status from calling it RepoNotFound.
                raise HubError(401, "Invalid credentials in Authorization header")
        if segments == ["api", "agent-harnesses"] and method == "GET":
            # Telemetry registry huggingface_hub fetches once a day; empty = detect no agent.
            return Response.json({"standardEnvVars": [], "harnesses": {}})
        if segments == ["api", "whoami-v2"] and method == "GET":
            return self._whoami(req)
        if segments == ["api", "repos", "create"] and method == "POST":
            return self._create_repo(req)
        if segments == ["api", "repos", "delete"] and method == "DELETE":
            body = req.json_object()
            self.store.delete_repo(self._key_from_body(req, body), req.user)
            return Response.json({})
        if segments == ["api", "validate-yaml"] and method == "POST":
            return self._validate_yaml(req)
        if len(segments) >= 4 and segments[0] == "api" and segments[1] in _PLURAL:
            key = (_PLURAL[segments[1]], f"{segments[2]}/{segments[3]}")
            response = self._repo_api(req, key, segments[4] if len(segments) > 4 else "", segments[5:])
            if response is not None:
                return response
        lfs = self._lfs_api(req, segments)
        if lfs is not None:
            return lfs
        if method in ("GET", "HEAD"):
            offset = 1 if segments[:1] in (["datasets"], ["spaces"]) else 0
            if len(segments) >= offset + 5 and segments[offset + 2] == "resolve":
                repo_type = _PLURAL[segments[0]] if offset else "model"
                key = (repo_type, f"{segments[offset]}/{segments[offset + 1]}")
                revision, rest = _split_revision(segments[offset + 3 :])
                return self._resolve(req, key, revision, "/".join(rest))
        return self._unhandled(req)

    def _unhandled(self, req: Request) -> Response:
        line = f"{req.method} {req.path}"
        with self._log_lock:
            self.unhandled.append(line)
        # Always shown (pytest captures it): a missing route is the usual reason a client call fails.
        sys.stderr.write(f"stand-in Hub: no route for {line}\n")
        return Response.json({"error": f"stand-in Hub: no route for {line}"}, 404)

    # -- account / repo management ------------------------------------------------------------
    def _whoami(self, req: Request) -> Response:
        if req.user is None:
            raise HubError(401, "Invalid credentials in Authorization header")
        return Response.json(
            {
                "type": "user",
                "id": req.user,
                "name": req.user,
                "fullname": req.user,
                "isPro": False,
                "orgs": [
                    {"type": "org", "name": org, "fullname": org, "roleInOrg": "write"}
                    for org in self.store.orgs_of(req.user)
                ],
                "auth": {"type": "access_token", "accessToken": {"displayName": "stand-in", "role": "write"}},
            }
        )

    def _key_from_body(self, req: Request, body: JSON) -> RepoKey:
        namespace = body.get("organization") or req.user
        if namespace is None:
            raise HubError(401, "You must be authenticated to manage repositories")
        return str(body.get("type") or "model"), f"{namespace}/{body.get('name')}"

    def _create_repo(self, req: Request) -> Response:
        body = req.json_object()
        private = body.get("visibility") == "private" or body.get("private") is True
        repo, created = self.store.create_repo(self._key_from_body(req, body), req.user, private)
        url = repo_url(req.base_url, repo)
        if not created:
            # `create_repo(exist_ok=True)` swallows the 409 but still reads `url` from the body.
            return Response.json({"error": "You already created this repo", "url": url}, 409)
        return Response.json({"url": url, "name": repo.repo_id, "id": repo.repo_id})

    def _validate_yaml(self, req: Request) -> Response:
        content = req.json_object().get("content")
        try:
            views.front_matter(content if isinstance(content, str) else "")
        except ValueError as exc:
            return Response.json({"errors": [{"message": str(exc)}], "warnings": []}, 400)
        return Response.json({"errors": [], "warnings": []})

    # -- /api/{type}s/{ns}/{name}/... ---------------------------------------------------------
    def _repo_api(self, req: Request, key: RepoKey, action: str, rest: list[str]) -> Response | None:
        method, store = req.method, self.store
        if action in ("xet-write-token", "xet-read-token"):
            raise HubError(
                501, "The stand-in Hub has no Xet storage: set HF_HUB_DISABLE_XET=1 before importing huggingface_hub"
            )
        if action not in _REPO_ACTIONS:
            return None
        repo = store.get_repo(key, req.user, write=(method, action) in _WRITES)
        if action in ("", "revision") and method == "GET":
            revision, _ = _split_revision(rest)
            return Response.json(views.repo_info(store, repo, store.resolve(repo, revision), req.flag("blobs")))
        if action == "tree" and method == "GET":
            revision, path = _split_revision(rest)
            commit = store.resolve(repo, revision)
            return Response.json(
                views.tree(store, repo, commit, "/".join(path), req.flag("recursive"), req.flag("expand"))
            )
        if action == "paths-info" and method == "POST":
            form = req.form()
            commit = store.resolve(repo, _split_revision(rest)[0])
            expand = (form.get("expand") or ["false"])[0].lower() in ("1", "true")
            return Response.json(views.paths_info(store, repo, commit, form.get("paths", []), expand))
        if action == "refs" and method == "GET":
            return Response.json(views.refs(repo, req.flag("include_prs")))
        if action == "commits" and method == "GET":
            commit = store.resolve(repo, _split_revision(rest)[0])
            return Response.json(views.commits(store, repo, commit))
        if action == "preupload" and method == "POST":
            return self._preupload(req, repo, _split_revision(rest)[0])
        if action == "commit" and method == "POST":
            return self._commit(req, repo, _split_revision(rest)[0])
        if action in ("branch", "tag") and method in ("POST", "DELETE"):
            name = "/".join(rest)
            body = req.json_object() if method == "POST" else {}
            if method == "DELETE":
                store.delete_ref(repo, action, name, req.user)
            elif action == "branch":
                store.create_ref(repo, "branch", name, body.get("startingPoint"), req.user)
            else:  # POST /tag/{revision} {"tag": name}
                store.create_ref(repo, "tag", str(body.get("tag")), name, req.user)
            return Response.json({})
        if action == "settings" and method == "PUT":
            body = req.json_object()
            if "visibility" in body:
                repo.private = body["visibility"] == "private"
            if "private" in body:  # the field older clients send
                repo.private = bool(body["private"])
            if "gated" in body:
                repo.gated = body["gated"]
            return Response.json({})
        return None

    def _preupload(self, req: Request, repo: Repo, revision: str) -> Response:
        commit = self.store.resolve(repo, revision)
        answers: list[JSON] = []
        for item in req.json_object().get("files") or []:
            path = str(item.get("path"))
            sample = base64.b64decode(item.get("sample") or "")
            mode = views.upload_mode(self.store, commit, path, int(item.get("size") or 0), sample)
            existing = commit.files.get(path)
            # The client skips files whose oid (sha256 for LFS, git blob id otherwise) is unchanged.
            answers.append(
                {
                    "path": path,
                    "uploadMode": mode,
                    "shouldIgnore": False,
                    "oid": existing.etag if existing is not None else None,
                }
            )
        return Response.json({"files": answers, "commitOid": commit.oid})

    def _commit(self, req: Request, repo: Repo, revision: str) -> Response:
        header, operations = parse_commit_payload(req.body)
        commit, pr_num = self.store.commit(repo, revision, header, operations, req.user or "", req.flag("create_pr"))
        url = repo_url(req.base_url, repo)
        return Response.json(
            {
                "success": True,
                "commitOid": commit.oid,
                "commitUrl": f"{url}/commit/{commit.oid}",
                "pullRequestUrl": f"{url}/discussions/{pr_num}" if pr_num is not None else None,
            }
        )

    # -- git LFS ------------------------------------------------------------------------------
    def _lfs_api(self, req: Request, segments: list[str]) -> Response | None:
        """`/{prefix}{ns}/{name}.git/info/lfs/objects/{batch,verify}`."""
        if req.method != "POST" or len(segments) < 6 or segments[-4:-1] != ["info", "lfs", "objects"]:
            return None
        head = segments[:-4]
        repo_type = "model" if len(head) == 2 else _PLURAL.get(head[0], "") if len(head) == 3 else ""
        if not repo_type or not head[-1].endswith(".git"):
            return None
        key = (repo_type, f"{head[-2]}/{head[-1].removesuffix('.git')}")
        repo = self.store.get_repo(key, req.user, write=segments[-1] == "batch")
        if segments[-1] == "batch":
            batch = self.lfs.batch(repo, req.json_object(), req.base_url)
            return Response.json(batch, headers={"Content-Type": "application/vnd.git-lfs+json"})
        if segments[-1] == "verify":
            self.lfs.verify(req.json_object())
            return Response.json({})
        return None

    def _lfs_ticket(self, req: Request, rest: list[str]) -> Response:
        if len(rest) == 1 and req.method == "PUT":
            self.lfs.put(rest[0], req.body)
            return Response()
        if len(rest) == 1 and req.method == "POST":
            self.lfs.complete(rest[0], req.json_object())
            return Response.json({})
        if len(rest) == 3 and rest[1] == "part" and rest[2].isdigit() and req.method == "PUT":
            return Response(headers={"ETag": self.lfs.put_part(rest[0], int(rest[2]), req.body)})
        return self._unhandled(req)

    # -- file downloads -----------------------------------------------------------------------
    def _resolve(self, req: Request, key: RepoKey, revision: str, path: str) -> Response:
        repo = self.store.get_repo(key, req.user)
        commit = self.store.resolve(repo, revision)
        stored = commit.files.get(path)
        if stored is None:
            # X-Repo-Commit lets hf_hub_download cache the file's absence at this commit.
            raise HubError(404, f"Entry not found: {path}", "EntryNotFound", {"X-Repo-Commit": commit.oid})
        data = self.store.content(stored)
        headers = {
            "X-Repo-Commit": commit.oid,
            "ETag": f'"{stored.etag}"',
            "Accept-Ranges": "bytes",
            "Content-Type": "application/octet-stream",
        }
        if stored.lfs_sha256 is not None:
            headers.update({"X-Linked-Etag": f'"{stored.lfs_sha256}"', "X-Linked-Size": str(stored.size)})
        match = _RANGE.match(req.headers.get("Range") or "")
        if match is None or not any(match.groups()):
            return Response(200, data, headers)
        first, last = match.groups()
        start = int(first) if first else max(len(data) - int(last), 0)
        end = min(int(last), len(data) - 1) if first and last else len(data) - 1
        if start >= len(data) or start > end:
            raise HubError(416, "Requested range not satisfiable", headers={"Content-Range": f"bytes */{len(data)}"})
        headers["Content-Range"] = f"bytes {start}-{end}/{len(data)}"
        return Response(206, data[start : end + 1], headers)
