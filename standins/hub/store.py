"""In-memory repositories, commits and LFS objects behind the stand-in Hub (no HTTP here)."""

from __future__ import annotations

import hashlib
import itertools
import threading
import time
from collections.abc import Collection, Iterator, Mapping, Sequence

from standins.hub.commit_payload import Operation, apply_operation
from standins.hub.model import (
    DEFAULT_BRANCH,
    INITIAL_GITATTRIBUTES,
    JSON,
    REPO_TYPES,
    Commit,
    HubError,
    Repo,
    RepoKey,
    StoredFile,
    git_blob_oid,
    repo_not_found,
)


class HubStore:
    """All repositories and LFS objects; every public method takes the store's lock."""

    def __init__(self, tokens: Mapping[str, str], orgs: Mapping[str, Collection[str]]) -> None:
        self.lock = threading.RLock()
        self.tokens = dict(tokens)
        self.orgs = {org: set(members) for org, members in orgs.items()}
        self.repos: dict[RepoKey, Repo] = {}
        self.lfs_objects: dict[str, bytes] = {}
        self._counter = itertools.count()

    # -- identities -------------------------------------------------------------------------
    def user_for_token(self, token: str) -> str | None:
        return self.tokens.get(token)

    def orgs_of(self, user: str) -> list[str]:
        return sorted(org for org, members in self.orgs.items() if user in members)

    def may_write_namespace(self, user: str | None, namespace: str) -> bool:
        return user is not None and (user == namespace or user in self.orgs.get(namespace, ()))

    # -- repositories -----------------------------------------------------------------------
    def find(self, key: RepoKey) -> Repo | None:
        with self.lock:
            return self.repos.get(key)

    def get_repo(self, key: RepoKey, user: str | None, *, write: bool = False) -> Repo:
        """The repo if `user` may see it (and write to it when `write`), else the Hub's error.

        Private repos are indistinguishable from missing ones for outsiders (404 RepoNotFound), as
        on the real Hub; 401/403 only appear once the repo is visible.
        """
        with self.lock:
            repo = self.repos.get(key)
            allowed = self.may_write_namespace(user, key[1].split("/", 1)[0])
            if repo is None or (repo.private and not allowed):
                raise repo_not_found(key[1])
            if write and user is None:
                raise HubError(401, "You must be authenticated to write to this repository")
            if write and not allowed:
                raise HubError(403, f"You don't have the rights to write to {key[1]}")
            return repo

    def create_repo(self, key: RepoKey, user: str | None, private: bool) -> tuple[Repo, bool]:
        """Create the repo with its initial commit; returns (repo, created)."""
        if user is None:
            raise HubError(401, "You must be authenticated to create a repository")
        repo_type, repo_id = key
        if repo_type not in REPO_TYPES or repo_id.count("/") != 1 or "" in repo_id.split("/"):
            raise HubError(400, f"Invalid repository: {repo_type} {repo_id!r}")
        with self.lock:
            existing = self.repos.get(key)
            if existing is not None and self.may_write_namespace(user, existing.namespace):
                return existing, False
            if not self.may_write_namespace(user, repo_id.split("/", 1)[0]):
                raise HubError(403, f"You don't have the rights to create a repo under {repo_id}")
            repo = Repo(repo_type, repo_id, private, time.time())
            content = INITIAL_GITATTRIBUTES.encode()
            files = {".gitattributes": StoredFile(len(content), git_blob_oid(content), content)}
            self._add_commit(repo, DEFAULT_BRANCH, None, "initial commit", "", user, files)
            self.repos[key] = repo
            return repo, True

    def delete_repo(self, key: RepoKey, user: str | None) -> None:
        with self.lock:
            self.get_repo(key, user, write=True)
            del self.repos[key]

    # -- revisions --------------------------------------------------------------------------
    def resolve(self, repo: Repo, revision: str) -> Commit:
        """A branch, tag, `refs/pr/N`, `refs/heads/X`, full commit id or a >= 7 char prefix."""
        with self.lock:
            name = revision.removeprefix("refs/heads/").removeprefix("refs/tags/")
            oid = repo.branches.get(name) or repo.tags.get(name)
            if oid is None and revision in repo.commits:
                oid = revision
            if oid is None and len(revision) >= 7:
                matches = [c for c in repo.commits if c.startswith(revision.lower())]
                oid = matches[0] if len(matches) == 1 else None
            if oid is None:
                raise HubError(404, f"Invalid rev id: {revision}", "RevisionNotFound", {"X-Repo-Id": repo.repo_id})
            return repo.commits[oid]

    def history(self, repo: Repo, commit: Commit) -> Iterator[Commit]:
        """First-parent history, newest first."""
        current: Commit | None = commit
        while current is not None:
            yield current
            current = repo.commits[current.parents[0]] if current.parents else None

    def create_ref(self, repo: Repo, kind: str, name: str, starting_point: str | None, user: str | None) -> None:
        with self.lock:
            self.get_repo((repo.repo_type, repo.repo_id), user, write=True)
            refs = repo.branches if kind == "branch" else repo.tags
            if name in refs:
                raise HubError(409, f"Reference already exists: {name}")
            refs[name] = self.resolve(repo, starting_point or DEFAULT_BRANCH).oid

    def delete_ref(self, repo: Repo, kind: str, name: str, user: str | None) -> None:
        with self.lock:
            self.get_repo((repo.repo_type, repo.repo_id), user, write=True)
            refs = repo.branches if kind == "branch" else repo.tags
            if name not in refs or (kind == "branch" and name == DEFAULT_BRANCH):
                raise HubError(404, f"Invalid rev id: {name}", "RevisionNotFound")
            del refs[name]

    # -- contents ---------------------------------------------------------------------------
    def content(self, stored: StoredFile) -> bytes:
        if stored.content is not None:
            return stored.content
        with self.lock:
            return self.lfs_objects[stored.lfs_sha256 or ""]

    def commit(
        self,
        repo: Repo,
        revision: str,
        header: JSON,
        operations: Sequence[Operation],
        author: str,
        create_pr: bool,
    ) -> tuple[Commit, int | None]:
        """Apply one NDJSON commit onto `revision` (a branch), or onto a new `refs/pr/N`."""
        with self.lock:
            parent_commit = header.get("parentCommit")
            if create_pr:
                base = self.resolve(repo, parent_commit or revision)
                repo.pr_count += 1
                pr_num: int | None = repo.pr_count
                branch = f"refs/pr/{pr_num}"
                repo.branches[branch] = base.oid
            else:
                pr_num = None
                branch = revision.removeprefix("refs/heads/")
                if branch not in repo.branches:
                    self.resolve(repo, revision)  # 404 RevisionNotFound if it is nothing at all
                    raise HubError(400, f"Can only commit to a branch, not to {revision!r}")
                head = repo.branches[branch]
                if parent_commit is not None and not head.startswith(str(parent_commit)):
                    # What push_to_hub retries on: someone else committed in between.
                    raise HubError(412, "A commit has happened since. Please refresh and try again.")
            files = dict(repo.commits[repo.branches[branch]].files)
            for operation in operations:
                apply_operation(files, operation, self.lfs_objects)
            title = str(header.get("summary") or "Commit")
            commit = self._add_commit(
                repo,
                branch,
                repo.branches[branch],
                title,
                str(header.get("description") or ""),
                author,
                files,
            )
            return commit, pr_num

    def _add_commit(
        self,
        repo: Repo,
        branch: str,
        parent: str | None,
        title: str,
        message: str,
        author: str,
        files: dict[str, StoredFile],
    ) -> Commit:
        digest = hashlib.sha1(f"{parent}\n{title}\n{next(self._counter)}\n{time.time_ns()}".encode())
        for path in sorted(files):
            digest.update(f"\n{path} {files[path].blob_id}".encode())
        parents = (parent,) if parent else ()
        commit = Commit(digest.hexdigest(), parents, title, message, author, time.time(), files)
        repo.commits[commit.oid] = commit
        repo.branches[branch] = commit.oid
        return commit
