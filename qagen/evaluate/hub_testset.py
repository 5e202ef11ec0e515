"""A test set read from the Hugging Face Hub, with one clear sentence for each way that fails.

`datasets.load_dataset` reports a private dataset read without a token, a missing one and a
rejected token alike ("doesn't exist on the Hub or cannot be accessed"), or, when an earlier run
left a copy in its cache, quietly loads that copy or fails on the cache instead. So the dataset's
info is asked for first, with `huggingface_hub`, whose errors tell these apart: no token and not
visible is "private dataset: set HF_TOKEN" (the Hub answers a private repo exactly as a missing
one to a caller without a token, so the sentence says both); a rejected token is said as such.
When the Hub cannot be reached at all, `load_dataset` still runs: its cache may serve offline use.
"""

from __future__ import annotations

import importlib
from collections.abc import Iterator, Mapping
from functools import cache
from typing import Any

from qagen.errors import ConfigError
from qagen.evaluate.testset_paths import did_you_mean
from qagen.redaction import redact

__all__ = ["hub_rows"]


def hub_rows(repo_id: str, split: str, token: str | None) -> Iterator[tuple[int, Mapping[str, Any]]]:
    """The rows of the Hub dataset `repo_id`, numbered from 1; `ConfigError` with a way forward."""
    import datasets

    _check_visible(repo_id, token)
    try:
        dataset = datasets.load_dataset(repo_id, split=split, token=token)
    except (FileNotFoundError, ValueError, OSError, ConnectionError) as exc:
        raise ConfigError(
            f"Cannot load the dataset '{repo_id}' from the Hub: {type(exc).__name__}: {_detail(exc)}."
        ) from exc
    yield from enumerate(dataset, start=1)


def _check_visible(repo_id: str, token: str | None) -> None:
    """Ask the Hub for the dataset's info; raise the sentence that says why it cannot be read."""
    from huggingface_hub import HfApi, get_token
    from huggingface_hub.errors import (
        GatedRepoError,
        HfHubHTTPError,
        HFValidationError,
        OfflineModeIsEnabled,
        RepositoryNotFoundError,
    )

    try:
        HfApi().dataset_info(repo_id, token=token)
    except HFValidationError as exc:
        raise ConfigError(
            f"no such file or folder: {repo_id}{did_you_mean(repo_id)}, and not a Hub dataset id (owner/name)."
        ) from exc
    except GatedRepoError as exc:
        raise ConfigError(
            f"'{repo_id}' is a gated dataset: accept its conditions on its Hub page with the account of the token, "
            "then run again."
        ) from exc
    except RepositoryNotFoundError as exc:
        if token is None and get_token() is None:
            raise ConfigError(
                f"'{repo_id}' is not a public dataset on the Hub{did_you_mean(repo_id)}; if it is a private "
                "dataset: set HF_TOKEN (or run `hf auth login`, or pass `token`).",
                settings=("token",),
            ) from exc
        raise ConfigError(
            f"'{repo_id}' was not found on the Hub, or this token may not read it{did_you_mean(repo_id)}; "
            "check the name (owner/name) and the token's access."
        ) from exc
    except OfflineModeIsEnabled:
        return  # HF_HUB_OFFLINE: the cache is what the user asked for
    except HfHubHTTPError as exc:
        status = int(getattr(getattr(exc, "response", None), "status_code", 0) or 0)
        if status == 401:
            raise ConfigError(
                "The Hugging Face Hub rejected the token (401 Unauthorized); check HF_TOKEN, `token` or "
                "`hf auth login`.",
                settings=("token",),
            ) from exc
        if status < 500:
            raise ConfigError(f"The Hub refused to describe '{repo_id}' ({status}: {_detail(exc)}).") from exc
        return  # a failing Hub: `load_dataset` may still serve a cached copy, or says why not
    except _unreachable():
        return  # unreachable (offline): `load_dataset` may still serve a cached copy, or says why not


@cache
def _unreachable() -> tuple[type[BaseException], ...]:
    """The errors of a Hub that cannot be reached: huggingface_hub's HTTP client's (`httpx2` in 2.x,
    `httpx` in 1.x) transport errors, which are no `OSError`, and the standard library's."""
    errors: list[type[BaseException]] = [ConnectionError, TimeoutError]
    for name in ("httpx2", "httpx"):
        try:
            errors.append(importlib.import_module(name).TransportError)
        except ImportError:
            continue
    return tuple(errors)


def _detail(exc: BaseException) -> str:
    return redact(" ".join(str(exc).split())[:300]).rstrip(".")
