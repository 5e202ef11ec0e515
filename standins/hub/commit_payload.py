"""The NDJSON body of `POST /api/{type}s/{repo}/commit/{revision}`, parsed into operations.

`huggingface_hub` sends one `{"key": ..., "value": ...}` object per line: a `header` (summary,
description, optional `parentCommit`), then `file` (base64 content), `lfsFile` (sha256 oid of an
object uploaded through the LFS batch API; `size` is absent for copies), `deletedFile` and
`deletedFolder`. Copies of existing files arrive as `file` / `lfsFile` lines too.
"""

from __future__ import annotations

import base64
import binascii
import json
from collections.abc import Mapping
from dataclasses import dataclass

from standins.hub.model import JSON, HubError, StoredFile, git_blob_oid, lfs_pointer


@dataclass(frozen=True)
class AddFile:
    path: str
    content: bytes


@dataclass(frozen=True)
class AddLfsFile:
    path: str
    sha256: str
    size: int | None


@dataclass(frozen=True)
class DeleteFile:
    path: str


@dataclass(frozen=True)
class DeleteFolder:
    path: str


Operation = AddFile | AddLfsFile | DeleteFile | DeleteFolder


def _clean_path(raw: object) -> str:
    if not isinstance(raw, str) or not raw.strip("/"):
        raise HubError(400, f"Invalid path in commit: {raw!r}")
    path = raw.strip("/")
    if any(part in ("", ".", "..") for part in path.split("/")):
        raise HubError(400, f"Invalid path in commit: {raw!r}")
    return path


def parse_commit_payload(body: bytes) -> tuple[JSON, list[Operation]]:
    """Parse the NDJSON body of `POST .../commit/{revision}` (one `{"key", "value"}` per line)."""
    header: JSON = {}
    operations: list[Operation] = []
    for number, line in enumerate(body.splitlines(), start=1):
        if not line.strip():
            continue
        try:
            item = json.loads(line)
            key, value = item["key"], item["value"]
        except (ValueError, KeyError, TypeError) as exc:
            raise HubError(400, f"Malformed commit payload line {number}: {exc}") from exc
        if key == "header":
            header = dict(value)
        elif key == "file":
            try:
                content = base64.b64decode(value.get("content", ""), validate=True)
            except (binascii.Error, ValueError) as exc:
                raise HubError(400, f"Invalid base64 content for {value.get('path')!r}") from exc
            operations.append(AddFile(_clean_path(value.get("path")), content))
        elif key == "lfsFile":
            oid = value.get("oid")
            if value.get("algo", "sha256") != "sha256" or not isinstance(oid, str):
                raise HubError(400, f"Invalid lfsFile entry: {value!r}")
            size = value.get("size")
            operations.append(AddLfsFile(_clean_path(value.get("path")), oid, size))
        elif key == "deletedFile":
            operations.append(DeleteFile(_clean_path(value.get("path"))))
        elif key == "deletedFolder":
            operations.append(DeleteFolder(_clean_path(value.get("path"))))
        else:
            # Copies arrive as `file` / `lfsFile` lines in huggingface_hub 1.x+; anything else is new.
            raise HubError(400, f"Unsupported commit operation key {key!r} (line {number})")
    return header, operations


def apply_operation(files: dict[str, StoredFile], operation: Operation, lfs_objects: Mapping[str, bytes]) -> None:
    """Apply one operation to a snapshot being built (LFS objects must already be uploaded)."""
    if isinstance(operation, AddFile):
        data = operation.content
        files[operation.path] = StoredFile(len(data), git_blob_oid(data), data)
    elif isinstance(operation, AddLfsFile):
        data_or_none = lfs_objects.get(operation.sha256)
        if data_or_none is None:
            raise HubError(400, f"LFS object {operation.sha256} was never uploaded")
        size = len(data_or_none)
        if operation.size is not None and operation.size != size:
            raise HubError(400, f"LFS object {operation.sha256} has size {size}")
        pointer = lfs_pointer(operation.sha256, size)
        files[operation.path] = StoredFile(size, git_blob_oid(pointer), None, operation.sha256)
    elif isinstance(operation, DeleteFile):
        if files.pop(operation.path, None) is None:
            raise HubError(404, f"A file with this name doesn't exist: {operation.path}", "EntryNotFound")
    else:
        inside = [path for path in files if path.startswith(operation.path + "/")]
        if not inside:
            raise HubError(404, f"No folder named {operation.path}", "EntryNotFound")
        for path in inside:
            del files[path]
