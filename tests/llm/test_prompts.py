from __future__ import annotations

import pytest

from qagen.errors import ConfigError
from qagen.llm.prompts import load_prompt, prompts_dir


def test_every_prompt_file_loads_with_its_variables() -> None:
    expected = {
        "qa_generation": {"context"},
        "critique_groundedness": {"question", "context"},
        "critique_relevance": {"question", "audience"},
        "critique_standalone": {"question"},
    }
    for name, variables in expected.items():
        assert load_prompt(name).variables == variables
    assert (prompts_dir() / "qa_generation.txt").is_file()


def test_render_is_strict_and_leaves_braces_in_values_alone() -> None:
    prompt = load_prompt("critique_standalone")
    text = prompt.render(question="What does {context} mean in f'{x}'?")
    assert "What does {context} mean in f'{x}'?" in text
    with pytest.raises(ConfigError, match="missing"):
        prompt.render()
    with pytest.raises(ConfigError, match="unexpected"):
        prompt.render(question="q", context="c")


def test_hash_is_of_the_text() -> None:
    import hashlib

    prompt = load_prompt("qa_generation")
    assert prompt.sha256 == hashlib.sha256(prompt.text.encode()).hexdigest()
    assert prompt.hash == prompt.sha256[:12]


def test_qa_prompt_asks_for_the_context_language() -> None:
    assert "same language as the context" in load_prompt("qa_generation").text
