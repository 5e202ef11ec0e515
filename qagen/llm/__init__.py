"""Talking to chat models: backends, the client, prompts, untrusted-text handling and cost."""
