"""Tests against a real OpenAI-compatible server with a real model.

A package, so that its conftest does not shadow `tests/conftest.py` (both would be `conftest`).
"""
