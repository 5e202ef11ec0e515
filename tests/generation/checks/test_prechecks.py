"""`Prechecks`: each draft's free checks made once a process, and made anew when what they read changed."""

from __future__ import annotations

from pathlib import Path

import pytest

from qagen.config import BuildConfig, CorpusSettings
from qagen.generation.checks import precheck as module
from qagen.generation.checks.precheck import Prechecks, precheck
from qagen.records import Chunk, Draft, Passages

TEXT = "The default level is 6, a compromise between speed and size."


def _draft(evidence: str, answer: str = "6") -> Draft:
    return Draft(id="d", chunk_id="b", model="m", prompt_hash="h", question="What is zlib's default level?",
                 answer=answer, evidence=evidence)  # fmt: skip


@pytest.fixture
def item() -> Passages:
    other = Chunk(id="a", source="x.rst", text="Nothing about levels here.", start_index=0, end_index=26)
    chunk = Chunk(id="b", source="zlib.rst", text=TEXT, start_index=0, end_index=len(TEXT))
    return Passages(question_type="multi_hop", chunks=(other, chunk))


def test_a_draft_is_checked_once_and_gets_the_first_result_with_its_passage(
    item: Passages, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    config = BuildConfig(corpus=CorpusSettings(path=str(tmp_path)))
    calls: list[str] = []

    def counted(draft: Draft, *args: object, **kwargs: bool) -> module.Precheck:
        calls.append(draft.id)
        return precheck(draft, *args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(module, "precheck", counted)
    prechecks = Prechecks()
    draft = _draft("The default level is 6")
    first = prechecks(draft, item, config)
    # The draft read back from its log (another object, the same record) and its passages read anew.
    again = prechecks(draft.model_copy(), item.model_copy(deep=True), config)
    assert calls == ["d"]
    assert first == precheck(draft, item, config) and again == first
    assert first.passage is not None and first.passage.id == "b"  # the evidence is in the second passage
    # The same id with other text (a composed draft its parts ended), or other settings: checked anew.
    elsewhere = prechecks(_draft("The highest level is 9, the slowest.", answer="9"), item, config)
    assert elsewhere.reason == "evidence_not_found" and calls == ["d", "d"]
    prechecks(draft, item, BuildConfig(corpus=CorpusSettings(path=str(tmp_path)), max_answer_chars=40))
    assert calls == ["d", "d", "d"]
