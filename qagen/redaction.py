"""Keep secrets out of everything qagen writes or prints.

Two rules, used by every writer: `redact_url` is the written form of a URL (no credentials in its
user-info, no value of a key-like query parameter), and `redact` is the written form of any text
(known secrets, key-shaped strings and every URL in it through `redact_url`).
"""

from __future__ import annotations

import os
import re
from typing import overload
from urllib.parse import unquote_plus

REDACTED = "REDACTED"
"""What stands in a written URL for a credential that was removed (the user-info, a query key)."""

# Shapes of well-known keys, caught even when we were never told the value (e.g. a key that a
# provider echoes back in an error message, partly masked).
_KEY_SHAPES = re.compile(r"\b(?:sk-[A-Za-z0-9_\-*]{6,}|hf_[A-Za-z0-9]{6,}|Bearer\s+\S+)")
_SECRET_ENV_VARS = ("OPENAI_API_KEY", "HF_TOKEN", "HUGGING_FACE_HUB_TOKEN", "ANTHROPIC_API_KEY")
_extra_secrets: set[str] = set()

# A URL in free text (an error message quoting the request it failed on): up to whitespace, a quote
# or an angle bracket, which no URL holds unescaped.
_URL_IN_TEXT = re.compile(r"\b[A-Za-z][A-Za-z0-9+.\-]*://[^\s'\"<>`]+")
# `scheme://userinfo@`: the user-info ends at the last `@` before the path, query or fragment.
_USERINFO = re.compile(r"^([A-Za-z][A-Za-z0-9+.\-]*://)[^/?#]*@")
# Query parameter names that carry credentials: `api-key`, `api_key`, `apiKey`, `key`, `token`,
# `access_token`, `client_secret`, `password`, `sig` (Azure SAS), `signature`, `auth`... Matched
# inside the name, so `x-goog-api-key` and `X-Amz-Signature` count too. A harmless parameter caught
# by mistake (`monkey=1`) only loses its value in the written form; the server still receives it.
_SECRET_NAME_PART = re.compile(r"key|token|secret|passw|pwd|auth|credential|sig", re.IGNORECASE)
# Short names that carry credentials in some services but are too common to match inside names.
_SECRET_NAMES = frozenset({"code", "pass", "session", "jwt", "pw"})


def register_secret(value: str | None) -> None:
    """Remember a secret (e.g. a token given on the command line) so that `redact` hides it."""
    if value and len(value) >= 4:
        _extra_secrets.add(value)


def redact(text: str) -> str:
    """`text` with every known secret and key-shaped string replaced by `***`, and every URL in it
    in its written form (`redact_url`)."""
    text = _URL_IN_TEXT.sub(lambda match: redact_url(match.group()), text)
    secrets = set(_extra_secrets)
    for name in _SECRET_ENV_VARS:
        value = os.environ.get(name)
        if value and len(value) >= 4:
            secrets.add(value)
    for secret in sorted(secrets, key=len, reverse=True):
        text = text.replace(secret, "***")
    return _KEY_SHAPES.sub("***", text)


def is_secret_parameter(name: str) -> bool:
    """Whether a query parameter of this name carries a credential (`api-key`, `token`, `sig`...)."""
    decoded = unquote_plus(name).strip()
    return decoded.lower() in _SECRET_NAMES or _SECRET_NAME_PART.search(decoded) is not None


@overload
def redact_url(url: str) -> str: ...
@overload
def redact_url(url: None) -> None: ...
def redact_url(url: str | None) -> str | None:
    """The form of a URL that may be written or shown: `user:password@` becomes `REDACTED@`, and
    the value of every key-like query (or fragment) parameter becomes `REDACTED`.

    The rest is kept byte for byte (the host, the path, `api-version=...`), so the written URL
    still says where calls went, and that a credential was there.
    """
    if url is None:
        return None
    url = _USERINFO.sub(rf"\g<1>{REDACTED}@", url)
    before_fragment, hash_sign, fragment = url.partition("#")
    address, question_mark, query = before_fragment.partition("?")
    if question_mark:
        address += question_mark + _redact_parameters(query)
    if hash_sign:
        address += hash_sign + _redact_parameters(fragment)
    return address


def _redact_parameters(query: str) -> str:
    """`a=1&api-key=sk-x` -> `a=1&api-key=REDACTED`.

    Only `&` separates parameters, as for the HTTP client that sends them (`urllib.parse.parse_qsl`):
    a `;` belongs to the value, which is hidden whole.
    """
    parts = query.split("&")
    for index, part in enumerate(parts):
        name, equals, value = part.partition("=")
        if equals and value and is_secret_parameter(name):
            parts[index] = f"{name}={REDACTED}"
    return "&".join(parts)
