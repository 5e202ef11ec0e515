"""The git-LFS side of the stand-in Hub: batch API, single-part and multipart uploads, verify.

`huggingface_hub` (with Xet disabled) asks `POST {repo}.git/info/lfs/objects/batch` where to put
each object, then `PUT`s the bytes to the returned `href` *without* an Authorization header (the
real href is a pre-signed S3 URL). So every href carries an unguessable one-off ticket instead.
"""

from __future__ import annotations

import hashlib
import re
import secrets
from dataclasses import dataclass, field
from math import ceil

from standins.hub.model import JSON, HubError, Repo
from standins.hub.store import HubStore

_OID = re.compile(r"^[0-9a-f]{64}$")
TICKET_PREFIX = "/_stand_in/lfs/"


@dataclass
class _Ticket:
    oid: str
    size: int
    chunk_size: int | None
    parts: dict[int, bytes] = field(default_factory=dict)


class LfsUploads:
    """Pending uploads keyed by ticket; finished objects go to `store.lfs_objects` by sha256."""

    def __init__(self, store: HubStore, multipart_chunk_size: int | None) -> None:
        self.store = store
        self.multipart_chunk_size = multipart_chunk_size
        self._tickets: dict[str, _Ticket] = {}

    def batch(self, repo: Repo, request: JSON, base_url: str) -> JSON:
        """Answer a batch request: no `actions` for objects already stored (the client skips them)."""
        if request.get("operation") != "upload":
            raise HubError(400, "The stand-in Hub only implements the LFS 'upload' operation")
        objects: list[JSON] = []
        for item in request.get("objects") or []:
            oid, size = item.get("oid"), item.get("size")
            if not isinstance(oid, str) or not _OID.match(oid) or not isinstance(size, int):
                objects.append(
                    {
                        "oid": str(oid),
                        "size": size if isinstance(size, int) else 0,
                        "error": {"code": 422, "message": "Invalid oid or size"},
                    }
                )
                continue
            with self.store.lock:
                stored = self.store.lfs_objects.get(oid)
                if stored is not None and len(stored) == size:
                    objects.append({"oid": oid, "size": size, "authenticated": True})
                    continue
                ticket_id = secrets.token_hex(16)
                chunk = self.multipart_chunk_size
                chunk = chunk if chunk is not None and size > chunk else None
                self._tickets[ticket_id] = _Ticket(oid, size, chunk)
            href = f"{base_url}{TICKET_PREFIX}{ticket_id}"
            header: dict[str, str] = {}
            if chunk is not None:
                header["chunk_size"] = str(chunk)
                for number in range(1, ceil(size / chunk) + 1):
                    header[f"{number:05d}"] = f"{href}/part/{number}"
            prefix = "" if repo.repo_type == "model" else f"{repo.repo_type}s/"
            objects.append(
                {
                    "oid": oid,
                    "size": size,
                    "authenticated": True,
                    "actions": {
                        "upload": {"href": href, "header": header},
                        "verify": {
                            "href": f"{base_url}/{prefix}{repo.repo_id}.git/info/lfs/objects/verify",
                            "header": {},
                        },
                    },
                }
            )
        any_multipart = any("chunk_size" in o.get("actions", {}).get("upload", {}).get("header", {}) for o in objects)
        return {"transfer": "multipart" if any_multipart else "basic", "objects": objects}

    def _ticket(self, ticket_id: str) -> _Ticket:
        ticket = self._tickets.get(ticket_id)
        if ticket is None:
            raise HubError(404, f"Unknown or used LFS upload ticket {ticket_id}")
        return ticket

    def _store(self, ticket_id: str, ticket: _Ticket, data: bytes) -> None:
        digest = hashlib.sha256(data).hexdigest()
        if len(data) != ticket.size or digest != ticket.oid:
            raise HubError(400, f"Uploaded bytes (sha256 {digest}, {len(data)} B) do not match {ticket.oid}")
        self.store.lfs_objects[ticket.oid] = data
        del self._tickets[ticket_id]

    def put(self, ticket_id: str, data: bytes) -> None:
        """Basic transfer: the whole object in one PUT."""
        with self.store.lock:
            self._store(ticket_id, self._ticket(ticket_id), data)

    def put_part(self, ticket_id: str, number: int, data: bytes) -> str:
        """One part of a multipart upload; returns the ETag the client echoes at completion."""
        with self.store.lock:
            ticket = self._ticket(ticket_id)
            if ticket.chunk_size is None or not 1 <= number <= ceil(ticket.size / ticket.chunk_size):
                raise HubError(400, f"Unexpected part {number} for ticket {ticket_id}")
            ticket.parts[number] = data
            return f'"{hashlib.md5(data).hexdigest()}"'

    def complete(self, ticket_id: str, payload: JSON) -> None:
        """Multipart completion: `{"oid", "parts": [{"partNumber", "etag"}]}` in part order."""
        with self.store.lock:
            ticket = self._ticket(ticket_id)
            parts = payload.get("parts") or []
            numbers = [int(part.get("partNumber", 0)) for part in parts]
            if payload.get("oid") != ticket.oid or numbers != sorted(ticket.parts):
                raise HubError(400, f"Completion does not match the uploaded parts of {ticket.oid}")
            for part in parts:
                expected = f'"{hashlib.md5(ticket.parts[int(part["partNumber"])]).hexdigest()}"'
                if part.get("etag") != expected:
                    raise HubError(400, f"ETag mismatch for part {part['partNumber']}")
            self._store(ticket_id, ticket, b"".join(ticket.parts[n] for n in sorted(ticket.parts)))

    def verify(self, payload: JSON) -> None:
        with self.store.lock:
            data = self.store.lfs_objects.get(str(payload.get("oid")))
        if data is None or len(data) != payload.get("size"):
            raise HubError(422, f"LFS object {payload.get('oid')} is missing or has another size")
