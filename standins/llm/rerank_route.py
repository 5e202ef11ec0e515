"""The stand-in's `POST /rerank` (and `/v1/rerank`): the key, the fault knobs and the latency as for
chat requests, then the reply of `standins.llm.rerank.rerank_payload`, logged with kind `rerank`."""

from __future__ import annotations

import json
import time
from typing import TYPE_CHECKING

from standins.llm.faults import fault_error
from standins.llm.http import send
from standins.llm.log import LogEntry
from standins.llm.rerank import rerank_payload

if TYPE_CHECKING:
    from standins.llm.http import LLMRequestHandler
    from standins.llm.knobs import Knobs
    from standins.llm.routes import StandInApp


def serve_rerank(
    app: StandInApp, handler: LLMRequestHandler, entry: LogEntry, body: bytes, sha: str, knobs: Knobs, arrived: float
) -> None:
    """Answer one `POST /rerank`: the key, the fault knobs, the latency, then `rerank_payload`."""
    if not app._authorised(handler, knobs):
        app._error(handler, entry, 401, "Incorrect API key provided.", "invalid_api_key")
        return
    try:
        request = json.loads(body)
    except ValueError:
        request = None
    entry["model"] = (
        request.get("model") if isinstance(request, dict) and isinstance(request.get("model"), str) else None
    )
    attempt, _, fault = app.attempts.count(
        sha, fault_rate=knobs.fault_rate, fault_attempts=knobs.fault_attempts, fault_kinds=knobs.fault_kinds
    )
    entry["attempt"] = attempt
    if fault is not None:
        entry["kind"], entry["fault"] = "fault", fault
    if fault in ("429", "500"):
        status, error, headers = fault_error(fault, retry_after=knobs.retry_after, quoted="")
        app._respond(handler, entry, status, error, headers)
        return
    if fault == "drop":
        app.log.record(entry)
        handler.close_connection = True
        return
    status, payload = rerank_payload(request, knobs.rerank_reply)
    if fault == "timeout":  # logged now; answered only after the client has given up
        app.log.record(entry)
        if not app.stopping.wait(knobs.timeout_sleep):
            send(handler, status, json.dumps(payload).encode("utf-8"), {})
        handler.close_connection = True
        return
    remaining = knobs.latency - (time.monotonic() - arrived)
    if remaining > 0 and app.stopping.wait(remaining):
        handler.close_connection = True  # shutting down: abandon the reply
        return
    entry["kind"] = "rerank"
    entry["status_code"] = status
    entry["reply"] = json.dumps(payload)
    # Logged before the bytes go out: once the client has its answer, the log already has it.
    app.log.record(entry)
    app._done_serving(handler)
    send(handler, status, json.dumps(payload).encode("utf-8"), {})
