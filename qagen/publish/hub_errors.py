"""Hub failures as one clear sentence each (`QagenError` subclasses the CLI prints without a traceback).

`huggingface_hub` reports refusals as `HfHubHTTPError` (401, 403, 404 `RepositoryNotFoundError`,
5xx) and network trouble as the exceptions of its HTTP client: `httpx2` in huggingface_hub 2.x,
`httpx` in 1.x (`ConnectError` when nothing listens, `RemoteProtocolError` / `ReadError` when a
connection drops mid-request, `TimeoutException`), plus `OfflineModeIsEnabled` (a
`ConnectionError`) under HF_HUB_OFFLINE=1. Only these are translated; anything else is a bug and
keeps its traceback.
"""

from __future__ import annotations

import importlib
from collections.abc import Iterator
from contextlib import contextmanager
from functools import cache

from qagen.errors import ConfigError, QagenError
from qagen.redaction import redact


class HubAuthError(QagenError):
    """No token, a token the Hub rejects (401), or one without write access (403)."""


class HubUnavailableError(QagenError):
    """The Hub cannot be reached, the connection dropped, or the Hub failed (5xx)."""


class HubRefusedError(QagenError):
    """The Hub refused a request for another reason (404, 409, 422, ...)."""


@cache
def _transport_errors() -> tuple[type[BaseException], ...]:
    errors: list[type[BaseException]] = [ConnectionError, TimeoutError]
    for name in ("httpx2", "httpx"):
        try:
            module = importlib.import_module(name)
        except ImportError:
            continue
        errors.append(module.TransportError)
    return tuple(errors)


def _endpoint() -> str:
    from huggingface_hub import constants

    return str(constants.ENDPOINT)


def _detail(exc: BaseException | str) -> str:
    """A short, single-line, secret-free description of the underlying failure."""
    text = " ".join(str(exc).split()) or type(exc).__name__
    return redact(text[:300].rstrip("."))


@contextmanager
def hub_errors(repo_id: str) -> Iterator[None]:
    """Translate the Hub client's failures inside the block into `QagenError`s naming `repo_id`."""
    from huggingface_hub.errors import HfHubHTTPError, HFValidationError, OfflineModeIsEnabled, RepositoryNotFoundError

    try:
        yield
    except HFValidationError as exc:  # raised before any request, by the client's argument checks
        raise ConfigError(f"'{repo_id}' is not a valid dataset repo id: {_detail(exc)}.") from exc
    except RepositoryNotFoundError as exc:
        raise HubRefusedError(f"{repo_id} was not found on {_endpoint()}, or this token may not see it (404).") from exc
    except HfHubHTTPError as exc:
        response = getattr(exc, "response", None)
        status = int(getattr(response, "status_code", 0) or 0)
        message = _detail(exc.server_message or exc)
        if status == 401:
            raise HubAuthError(
                "The Hugging Face Hub rejected the token (401 Unauthorized); check `token`, HF_TOKEN or "
                "`hf auth login`.",
                settings=("token",),
            ) from exc
        if status == 403:
            raise HubAuthError(
                f"This token may not write to {repo_id} (403 Forbidden); use a token with write access "
                "to that namespace, or push to your own."
            ) from exc
        if status >= 500:
            raise HubUnavailableError(
                f"The Hub failed while pushing {repo_id} ({status}: {message}); nothing local changed, "
                "push again later."
            ) from exc
        raise HubRefusedError(f"The Hub refused the push to {repo_id} ({status}: {message}).") from exc
    except OfflineModeIsEnabled as exc:
        raise HubUnavailableError("Cannot push while HF_HUB_OFFLINE is set; unset it and push again.") from exc
    except _transport_errors() as exc:
        if type(exc).__name__ in {"ConnectError", "ConnectTimeout"} or isinstance(exc, ConnectionRefusedError):
            raise HubUnavailableError(
                f"Cannot reach the Hugging Face Hub at {_endpoint()} ({_detail(exc)}); check the network "
                "or HF_ENDPOINT and push again."
            ) from exc
        raise HubUnavailableError(
            f"The connection to the Hub at {_endpoint()} was lost while pushing {repo_id} ({_detail(exc)}); "
            "nothing local changed, run the same push again to finish it."
        ) from exc
