"""Test helpers that ship with qagen: local stand-ins for an OpenAI-compatible LLM server (`llm/`)
and for the Hugging Face Hub (`hub/`), and a generated corpus.

Import `qagen.testing.llm.server` explicitly; these packages import nothing so that
`python -m qagen.testing.llm.server` does not find the module already imported.
"""
