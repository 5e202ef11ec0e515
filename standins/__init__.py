"""Test stand-ins, kept beside the tests and out of the qagen wheel: local servers for an
OpenAI-compatible LLM (`llm/`) and for the Hugging Face Hub (`hub/`), and a generated corpus.

They use only the standard library, so CI starts the LLM stand-in before qagen is installed:
`python -m standins.llm.server` from the repository's root. Import `standins.llm.server`
explicitly; these packages import nothing so that `python -m` does not find the module already
imported.
"""
