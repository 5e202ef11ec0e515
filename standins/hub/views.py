"""JSON shapes of the stand-in Hub's read endpoints, in the field names `huggingface_hub` parses."""

from __future__ import annotations

import fnmatch
import hashlib
import re
from typing import Any

from standins.hub.model import JSON, Commit, HubError, Repo, StoredFile, hub_date
from standins.hub.store import HubStore

# Same threshold as the real Hub: anything this big goes to LFS whatever its name.
LFS_SIZE_THRESHOLD = 10 * 1024 * 1024
_FRONT_MATTER = re.compile(r"\A---\r?\n(.*?)\r?\n---(?:\r?\n|\Z)", re.DOTALL)


def front_matter(text: str) -> Any:
    """The parsed YAML block at the top of a README, `None` without one; ValueError if invalid."""
    match = _FRONT_MATTER.match(text)
    if match is None:
        return None
    import yaml  # PyYAML ships with datasets / huggingface_hub; imported late to keep startup cheap

    try:
        return yaml.safe_load(match.group(1))
    except yaml.YAMLError as exc:
        raise ValueError(f"Invalid YAML in README.md metadata: {exc}") from exc


def card_data(store: HubStore, commit: Commit) -> JSON | None:
    readme = commit.files.get("README.md")
    if readme is None:
        return None
    try:
        data = front_matter(store.content(readme).decode("utf-8", errors="replace"))
    except ValueError:
        return None
    return data if isinstance(data, dict) else None


def upload_mode(store: HubStore, commit: Commit, path: str, size: int, sample: bytes) -> str:
    """`lfs` for big, binary or .gitattributes-matched files (parquet shards), else `regular`."""
    if size >= LFS_SIZE_THRESHOLD or b"\0" in sample:
        return "lfs"
    attributes = commit.files.get(".gitattributes")
    text = store.content(attributes).decode("utf-8", errors="replace") if attributes else ""
    name = path.rsplit("/", 1)[-1]
    for line in text.splitlines():
        pattern, _, rest = line.strip().partition(" ")
        if "filter=lfs" in rest and (fnmatch.fnmatch(name, pattern) or fnmatch.fnmatch(path, pattern)):
            return "lfs"
    return "regular"


def _signature(commit: Commit, path: str) -> str | None:
    """A file's blob id, a folder's tree id (hash of everything below), None if absent."""
    stored = commit.files.get(path)
    if stored is not None:
        return stored.blob_id
    prefix = path + "/" if path else ""
    digest = hashlib.sha1(b"tree")
    found = False
    for name in sorted(commit.files):
        if name.startswith(prefix):
            found = True
            digest.update(f"{name} {commit.files[name].blob_id}\n".encode())
    return digest.hexdigest() if found else None


def last_commit(store: HubStore, repo: Repo, commit: Commit, path: str) -> JSON:
    """The newest commit in first-parent history that changed `path` (the `expand` field)."""
    signature = _signature(commit, path)
    changed = commit
    for ancestor in store.history(repo, commit):
        if _signature(ancestor, path) != signature:
            break
        changed = ancestor
    return {"id": changed.oid, "title": changed.title, "date": hub_date(changed.date)}


def file_entry(path: str, stored: StoredFile) -> JSON:
    entry: JSON = {"type": "file", "oid": stored.blob_id, "size": stored.size, "path": path}
    if stored.lfs_sha256 is not None:
        entry["lfs"] = {
            "oid": stored.lfs_sha256,
            "size": stored.size,
            "pointerSize": stored.pointer_size,
        }
    return entry


def _entry(store: HubStore, repo: Repo, commit: Commit, path: str, expand: bool) -> JSON | None:
    stored = commit.files.get(path)
    if stored is not None:
        entry = file_entry(path, stored)
    else:
        tree_id = _signature(commit, path)
        if tree_id is None:
            return None
        entry = {"type": "directory", "oid": tree_id, "size": 0, "path": path}
    if expand:
        entry["lastCommit"] = last_commit(store, repo, commit, path)
    return entry


def _folders(commit: Commit) -> set[str]:
    return {path.rsplit("/", i)[0] for path in commit.files for i in range(1, path.count("/") + 1)}


def tree(store: HubStore, repo: Repo, commit: Commit, folder: str, recursive: bool, expand: bool) -> list[JSON]:
    """`GET .../tree/{rev}/{folder}`: one page holding every entry (no `Link` pagination)."""
    folder = folder.strip("/")
    prefix = folder + "/" if folder else ""
    if folder and (folder in commit.files or _signature(commit, folder) is None):
        raise HubError(404, f"{folder} does not exist on this revision", "EntryNotFound")
    names = sorted(
        name
        for name in (*commit.files, *_folders(commit))
        if name.startswith(prefix) and (recursive or "/" not in name[len(prefix) :])
    )
    # Folders first, like the Hub's "tree first" listing; clients sort anyway.
    entries = [_entry(store, repo, commit, name, expand) for name in names]
    found = [entry for entry in entries if entry is not None]
    return sorted(found, key=lambda entry: (entry["type"] != "directory", entry["path"]))


def paths_info(store: HubStore, repo: Repo, commit: Commit, paths: list[str], expand: bool) -> list[JSON]:
    entries = [_entry(store, repo, commit, path.strip("/"), expand) for path in paths]
    return [entry for entry in entries if entry is not None]


def repo_info(store: HubStore, repo: Repo, commit: Commit, blobs: bool) -> JSON:
    siblings: list[JSON] = []
    for path in sorted(commit.files):
        sibling: JSON = {"rfilename": path}
        stored = commit.files[path]
        if blobs:
            sibling.update(size=stored.size, blobId=stored.blob_id)
            if stored.lfs_sha256 is not None:
                sibling["lfs"] = {
                    "size": stored.size,
                    "sha256": stored.lfs_sha256,
                    "pointerSize": stored.pointer_size,
                }
        siblings.append(sibling)
    data = card_data(store, commit)
    info: JSON = {
        "_id": hashlib.sha1(f"{repo.repo_type}/{repo.repo_id}".encode()).hexdigest()[:24],
        "id": repo.repo_id,
        "author": repo.namespace,
        "sha": commit.oid,
        "createdAt": hub_date(repo.created_at),
        "lastModified": hub_date(commit.date),
        "private": repo.private,
        "gated": repo.gated,
        "disabled": False,
        "downloads": 0,
        "likes": 0,
        "tags": list(data.get("tags") or []) if data else [],
        "siblings": siblings,
        "usedStorage": sum(stored.size for stored in commit.files.values()),
    }
    if data is not None:
        info["cardData"] = data
    return info


def refs(repo: Repo, include_prs: bool) -> JSON:
    def ref(name: str, full: str, oid: str) -> JSON:
        return {"name": name, "ref": full, "targetCommit": oid}

    branches = [(n, o) for n, o in sorted(repo.branches.items()) if not n.startswith("refs/")]
    pulls = [(n, o) for n, o in sorted(repo.branches.items()) if n.startswith("refs/pr/")]
    result: JSON = {
        "branches": [ref(name, f"refs/heads/{name}", oid) for name, oid in branches],
        "converts": [],
        "tags": [ref(name, f"refs/tags/{name}", oid) for name, oid in sorted(repo.tags.items())],
    }
    if include_prs:
        result["pullRequests"] = [ref(name, name, oid) for name, oid in pulls]
    return result


def commits(store: HubStore, repo: Repo, commit: Commit) -> list[JSON]:
    return [
        {
            "id": item.oid,
            "title": item.title,
            "message": item.message,
            "authors": [{"user": item.author, "avatar": None}],
            "date": hub_date(item.date),
            "parents": list(item.parents),
        }
        for item in store.history(repo, commit)
    ]
