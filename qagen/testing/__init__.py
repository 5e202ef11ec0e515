"""Test helpers that ship with qagen: a local stand-in for an OpenAI-compatible LLM server.

Import `qagen.testing.llm_server` explicitly; this package imports nothing so that
`python -m qagen.testing.llm_server` does not find the module already imported.
"""
