"""Keep secrets out of everything qagen writes or prints."""

from __future__ import annotations

import os
import re

# Shapes of well-known keys, caught even when we were never told the value (e.g. a key that a
# provider echoes back in an error message, partly masked).
_KEY_SHAPES = re.compile(r"\b(?:sk-[A-Za-z0-9_\-*]{6,}|hf_[A-Za-z0-9]{6,}|Bearer\s+\S+)")
_SECRET_ENV_VARS = ("OPENAI_API_KEY", "HF_TOKEN", "HUGGING_FACE_HUB_TOKEN", "ANTHROPIC_API_KEY")
_extra_secrets: set[str] = set()


def register_secret(value: str | None) -> None:
    """Remember a secret (e.g. a token given on the command line) so that `redact` hides it."""
    if value and len(value) >= 4:
        _extra_secrets.add(value)


def redact(text: str) -> str:
    """`text` with every known secret and every key-shaped string replaced by `***`."""
    secrets = set(_extra_secrets)
    for name in _SECRET_ENV_VARS:
        value = os.environ.get(name)
        if value and len(value) >= 4:
            secrets.add(value)
    for secret in sorted(secrets, key=len, reverse=True):
        text = text.replace(secret, "***")
    return _KEY_SHAPES.sub("***", text)


def strip_userinfo(url: str | None) -> str | None:
    """A URL without `user:password@`, for recording where calls went."""
    if url is None:
        return None
    return re.sub(r"//[^/@]*@", "//", url)
