"""The LLM judges of answers (correctness, RAGAS-style metrics, boolean graders) and their reply parsers."""
