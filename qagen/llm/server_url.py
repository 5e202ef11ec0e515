"""A server's base URL taken apart into what the HTTP client is given: the address, the query
parameters to send with every request, and the `Authorization` header its user-info stands for.

Why: the `openai` client appends the request path after the base URL's query string
(`/v1?api-key=K` + `chat/completions` -> `/v1?api-key=Kchat/completions`), and its aiohttp
transport refuses a URL with credentials beside the key's `Authorization` header. Split here, the
query goes out as the client's `default_query` (gateways that take their key as `?api-key=` or
`?key=` get it on every request) and the user-info as one header:

- `http://user:password@host/v1` (a name and a password) -> `Authorization: Basic base64(user:password)`,
  what curl and every browser send for such a URL (a reverse proxy with basic authentication);
- `http://KEY@host/v1` or `http://:KEY@host/v1` (one value) -> `Authorization: Bearer KEY`, what
  OpenAI-compatible servers (vLLM started with a key, LiteLLM) check.

Every credential found is registered with `qagen.redaction`, so a server quoting it back in an
error is not written either; the written form of the URL is `qagen.redaction.redact_url`'s.
"""

from __future__ import annotations

import base64
from dataclasses import dataclass, field
from urllib.parse import parse_qsl, unquote, urlsplit, urlunsplit

from qagen.errors import ConfigError
from qagen.redaction import REDACTED, is_secret_parameter, redact_url, register_secret


@dataclass(frozen=True)
class ServerURL:
    """Where requests go and what credentials the base URL carried for them."""

    address: str | None
    """The base URL without user-info, query or fragment (None: the provider's default)."""
    query: dict[str, str] = field(default_factory=dict)
    """Every query parameter of the base URL, keys included: sent with each request."""
    authorization: str | None = None
    """The `Authorization` header the user-info stands for, or None when it had none."""


def split_server_url(base_url: str | None) -> ServerURL:
    """`base_url` as the HTTP client needs it; a ConfigError for a URL whose key was not saved."""
    if base_url is None:
        return ServerURL(address=None)
    parts = urlsplit(base_url)
    userinfo, at, host = parts.netloc.rpartition("@")
    query = dict(parse_qsl(parts.query, keep_blank_values=True))
    secret_values = [value for name, value in query.items() if is_secret_parameter(name)]
    if (at and userinfo == REDACTED) or REDACTED in secret_values:
        # A URL read back from run.json or summary.json (a stage command resuming a run): the
        # credentials were never written, so sending this would only earn a 401.
        raise ConfigError(
            f"The server URL {base_url} is the saved form of a URL whose credentials were removed "
            "(they are never written); give it again with its key (`base_url`; the critics' own: "
            "`critic_base_url`).",
            settings=("base_url", "critic_base_url"),
        )
    for value in secret_values:
        register_secret(value)
    address = urlunsplit((parts.scheme, host, parts.path, "", ""))
    return ServerURL(address=address, query=query, authorization=_authorization(userinfo) if at else None)


def has_credentials(base_url: str | None) -> bool:
    """Whether the URL carries credentials (user-info or a key-like query parameter)."""
    return base_url is not None and redact_url(base_url) != base_url


def _authorization(userinfo: str) -> str | None:
    user, _, password = (unquote(part) for part in userinfo.partition(":"))
    if user and password:
        # The name alone is no secret (hiding every "admin" in the outputs would garble them).
        token = base64.b64encode(f"{user}:{password}".encode()).decode("ascii")
        register_secret(password)
        register_secret(token)
        return f"Basic {token}"
    key = user or password
    register_secret(key)
    return f"Bearer {key}" if key else None
