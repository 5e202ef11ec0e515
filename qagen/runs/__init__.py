"""Run directories: append-only record stores, the fingerprint that guards resumes, and running coroutines."""
