"""A local stand-in for an OpenAI-compatible chat server (`server.StandInLLM`); import its modules explicitly."""
