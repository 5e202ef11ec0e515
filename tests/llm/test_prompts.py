from __future__ import annotations

import hashlib
import re
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from qagen.errors import ConfigError
from qagen.llm.prompts import Prompt, load_prompt, load_prompts, prompts_dir


def test_every_prompt_file_loads_with_its_variables() -> None:
    expected = {
        "qa_generation": {"context", "document"},
        "critique_groundedness": {"question", "context"},
        "critique_relevance": {"question", "audience"},
        "critique_standalone": {"question"},
    }
    for name, variables in expected.items():
        assert load_prompt(name).variables == variables
    assert (prompts_dir() / "qa_generation.txt").is_file()


def test_a_prompt_file_without_the_document_name_still_replaces_the_bundled_one(tmp_path: Path) -> None:
    # Prompt files written before `{document}` was offered keep working, and a file may use it too.
    (tmp_path / "qa_generation.txt").write_text("Factoid question about: {context}", encoding="utf-8")
    assert load_prompts(["qa_generation"], tmp_path)["qa_generation"].variables == {"context"}
    (tmp_path / "qa_reworded.txt").write_text("From {document}: {context}", encoding="utf-8")
    both = load_prompts(["qa_generation", "qa_reworded"], tmp_path)
    assert both["qa_reworded"].variables == {"context", "document"}
    (tmp_path / "qa_reworded.txt").write_text("From {doc}: {context}", encoding="utf-8")
    with pytest.raises(ConfigError, match="unknown"):
        load_prompts(["qa_generation", "qa_reworded"], tmp_path)


def test_render_is_strict_and_leaves_braces_in_values_alone() -> None:
    prompt = load_prompt("critique_standalone")
    text = prompt.render(question="What does {context} mean in f'{x}'?")
    assert "What does {context} mean in f'{x}'?" in text
    with pytest.raises(ConfigError, match="missing"):
        prompt.render()
    with pytest.raises(ConfigError, match="unexpected"):
        prompt.render(question="q", context="c")


_TEMPLATE_PIECES = st.sampled_from(
    ["{context}", "{question}", "{a_b}", "{", "}", "{Context}", "{ x}", "text", "\n", "é"]
)


@given(st.lists(_TEMPLATE_PIECES, max_size=12).map("".join), st.data())
def test_render_fills_each_placeholder_as_one_substitution_over_the_text_would(text: str, data: st.DataObject) -> None:
    prompt = Prompt(name="p", text=text, sha256="0" * 64)
    values = {name: data.draw(st.sampled_from(["", "{context}", "v\\1", "x"])) for name in prompt.variables}
    assert prompt.render(**values) == re.sub(r"\{([a-z_]+)\}", lambda found: values[found.group(1)], text)


def test_hash_is_of_the_text() -> None:
    import hashlib

    prompt = load_prompt("qa_generation")
    assert prompt.sha256 == hashlib.sha256(prompt.text.encode()).hexdigest()
    assert prompt.hash == prompt.sha256[:12]


def test_qa_prompt_asks_for_the_context_language() -> None:
    assert "same language as the context" in load_prompt("qa_generation").text


# --- your own prompts: a folder whose files replace the bundled ones ---------------------------------
BUILD_PROMPTS = ["qa_generation", "critique_groundedness", "critique_relevance", "critique_standalone"]


def test_a_prompt_file_in_the_folder_replaces_the_bundled_one_and_the_others_stay(tmp_path: Path) -> None:
    own = "Rate {question} for airline pilots.\nTotal rating: 1-5"
    (tmp_path / "critique_standalone.txt").write_text(own, encoding="utf-8")
    (tmp_path / ".DS_Store").write_bytes(b"\x00")  # hidden files are not prompts
    prompts = load_prompts(BUILD_PROMPTS, tmp_path)
    assert prompts["critique_standalone"].text == own
    assert prompts["critique_standalone"].sha256 == hashlib.sha256(own.encode()).hexdigest()
    for name in BUILD_PROMPTS[:3]:
        assert prompts[name] == load_prompt(name)
    # Read afresh on every call: an edited file is a new prompt with a new hash, even in one process.
    (tmp_path / "critique_standalone.txt").write_text(own + "\n", encoding="utf-8")
    assert load_prompts(BUILD_PROMPTS, tmp_path)["critique_standalone"].sha256 != prompts["critique_standalone"].sha256
    assert load_prompts(BUILD_PROMPTS) == {name: load_prompt(name) for name in BUILD_PROMPTS}


def test_a_file_that_replaces_no_prompt_is_refused_with_the_names_that_do(tmp_path: Path) -> None:
    (tmp_path / "qa_generaton.txt").write_text("Context: {context}", encoding="utf-8")
    (tmp_path / "judge_correctness.txt").write_text("x", encoding="utf-8")
    with pytest.raises(ConfigError) as caught:
        load_prompts(BUILD_PROMPTS, tmp_path)
    assert str(caught.value) == (
        f"`prompts_dir` {tmp_path} holds judge_correctness.txt, qa_generaton.txt, which replace no prompt "
        "(judge_correctness.txt: bundled prompts not asked here; a critic's prompt is asked when the build asks the "
        "critic, as `critics` names it, and an evaluation's only by an evaluation); the prompts that can be "
        "replaced are critique_groundedness.txt, critique_relevance.txt, critique_standalone.txt, qa_generation.txt. "
        "Rename or remove the others."
    )
    assert caught.value.settings == ("prompts_dir",)
    with pytest.raises(ConfigError, match="is not a folder"):
        load_prompts(BUILD_PROMPTS, tmp_path / "missing")


@pytest.mark.parametrize(
    ("name", "text", "problem"),
    [
        ("qa_generation", "Write a question.", "lacks {context}"),
        ("critique_groundedness", "Q: {question}", "lacks {context}"),
        ("critique_relevance", "{question} {audience} {user}", "has unknown {user}"),
        ("critique_standalone", "{context}", "lacks {question} and has unknown {context}"),
    ],
)
def test_a_prompt_without_a_required_placeholder_is_refused_naming_it(
    name: str, text: str, problem: str, tmp_path: Path
) -> None:
    (tmp_path / f"{name}.txt").write_text(text, encoding="utf-8")
    with pytest.raises(ConfigError) as caught:
        load_prompts(BUILD_PROMPTS, tmp_path)
    required = ", ".join(f"{{{v}}}" for v in sorted(load_prompt(name).variables))
    assert str(caught.value) == (
        f"The prompt file {tmp_path / f'{name}.txt'} {problem}; it must have exactly the placeholders of the "
        f"bundled {name}.txt: {required}."
    )
