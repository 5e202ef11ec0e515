"""Secrets masked in a dataset before it is published: known secret values and key-shaped strings.

The secrets are the Hub token and the values of secret-named environment variables; each string
cell that holds one (or a string shaped like an OpenAI or Hugging Face key) gets `***` instead.
"""

from __future__ import annotations

import os
import re
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from datasets import Dataset

# Env vars whose values are secrets, beyond those `redaction` knows by name.
_SECRET_NAME = re.compile(r"(?:^|_)(?:API_?KEY|KEY|TOKEN|SECRET|PASSWORD|PASSWD)$")
# Key shapes masked inside the data. Narrower than `redaction`'s (no "Bearer <word>"), so that a
# corpus about HTTP authentication keeps its prose; a real key or token is far longer than this.
_DATA_KEY_SHAPES = re.compile(r"\b(?:sk-[A-Za-z0-9_\-]{20,}|hf_[A-Za-z0-9]{30,})")


def known_secrets(token: str | None) -> set[str]:
    """Every secret value we can know of: the token and the values of secret-named env vars."""
    secrets = {value for name, value in os.environ.items() if _SECRET_NAME.search(name.upper()) and len(value) >= 8}
    if token:
        secrets.add(token)
    return secrets


def _mask(text: str, secrets: set[str]) -> str:
    for secret in sorted(secrets, key=len, reverse=True):
        text = text.replace(secret, "***")
    return _DATA_KEY_SHAPES.sub("***", text)


def mask_secrets(dataset: Dataset, secrets: set[str]) -> tuple[Dataset, int]:
    """The dataset with secrets masked in every string cell (a new in-memory copy only if needed)."""
    from datasets import Dataset

    columns = dataset.to_dict()
    masked = 0
    for values in columns.values():
        for index, value in enumerate(values):
            if isinstance(value, str):
                clean = _mask(value, secrets)
                if clean != value:
                    values[index] = clean
                    masked += 1
    if not masked:
        return dataset, 0
    return Dataset.from_dict(columns, features=dataset.features, info=dataset.info, split=dataset.split), masked
