"""qagen: a vetted synthetic question/answer test set for RAG, from your own corpus."""

from __future__ import annotations

__version__ = "0.1.0"
