"""The remote calls of batch mode, through the `openai` client's files and batches API, with the
same base URL, key, timeout and retries as online calls (`qagen.llm.backends.openai_client`)."""

from __future__ import annotations

from typing import Any, NamedTuple

from qagen.errors import ConfigError
from qagen.llm.backends import ModelSettings, openai_client
from qagen.llm.client import server_name

CHAT_URL = "/v1/chat/completions"
COMPLETION_WINDOW = "24h"
_LISTED = 100  # files and batches looked through when an interrupted step is looked for


class BatchState(NamedTuple):
    """What a poll says of a batch."""

    id: str
    status: str
    total: int
    completed: int
    failed: int
    output_file_id: str | None
    error_file_id: str | None

    @classmethod
    def of(cls, batch: Any) -> BatchState:
        counts = batch.request_counts
        return cls(
            batch.id,
            batch.status,
            counts.total if counts else 0,
            counts.completed if counts else 0,
            counts.failed if counts else 0,
            batch.output_file_id,
            batch.error_file_id,
        )

    @property
    def counts(self) -> dict[str, int]:
        return {"total": self.total, "completed": self.completed, "failed": self.failed}


def endpoint_of(settings: ModelSettings) -> str:
    """Which endpoint a model's batches go to, as the journal names it (never with a key in it)."""
    return f"{settings.spec} @ {settings.model_dump(mode='json')['base_url'] or 'default'}"


def require_batchable(settings: ModelSettings) -> None:
    """Batch mode sends files to an OpenAI-compatible Batch API; refuse other providers in one sentence."""
    if settings.provider != "openai":
        raise ConfigError(
            f"`batch` needs an OpenAI-compatible Batch API (an `openai:*` model), and '{settings.spec}' is not "
            "one; run without it (a build can also export its requests for an offline runner).",
            settings=("batch",),
        )


class BatchAPI:
    """Uploads, batches and file contents on one model's endpoint. Make it inside the event loop."""

    def __init__(self, settings: ModelSettings) -> None:
        require_batchable(settings)
        self.where = server_name(settings)
        """The server, as messages name it."""
        self._client = openai_client(settings, connections=4)

    async def upload(self, name: str, content: bytes) -> str:
        uploaded = await self._client.files.create(file=(name, content), purpose="batch")
        return str(uploaded.id)

    async def find_upload(self, name: str) -> str | None:
        """The id of an uploaded batch input file of this name (an upload the journal did not see end)."""
        page = await self._client.files.list(purpose="batch", limit=_LISTED)
        return next((str(file.id) for file in page.data if file.filename == name), None)

    async def submit(self, file_id: str) -> BatchState:
        batch = await self._client.batches.create(
            input_file_id=file_id, endpoint=CHAT_URL, completion_window=COMPLETION_WINDOW
        )
        return BatchState.of(batch)

    async def find_batch(self, file_id: str) -> BatchState | None:
        """The batch made of an input file (a submission the journal did not see end), if any."""
        page = await self._client.batches.list(limit=_LISTED)
        return next((BatchState.of(batch) for batch in page.data if batch.input_file_id == file_id), None)

    async def retrieve(self, batch_id: str) -> BatchState:
        return BatchState.of(await self._client.batches.retrieve(batch_id))

    async def content(self, file_id: str) -> bytes:
        response = await self._client.files.content(file_id)
        return bytes(response.read())

    async def aclose(self) -> None:
        await self._client.close()
