"""With the shared prefix on, every call about one draft that reads its passages opens with the same
text, the passages, sent once; a call meant to read less of them (one passage of two, the question
alone) is shown no more than it reads; prompt files keep their wording, the bundled ones and a user's
own. Off (the default), each request is the prompt file with its passages in place, as it reads."""

from __future__ import annotations

from pathlib import Path

from qagen.config import BuildConfig
from qagen.corpus.settings import CorpusSettings
from qagen.generation.compose import Composing
from qagen.generation.critique import Drafted
from qagen.generation.tasks import BuildTasks
from qagen.llm.prompts import load_prompt
from qagen.records import Chunk, Draft, Passages

FIRST = "The --prune option of git fetch removes remote-tracking refs that no longer exist on the remote."
SECOND = "Setting fetch.prune to true makes every git fetch prune, as if --prune were given."


def _chunk(name: str, text: str) -> Chunk:
    return Chunk(id=name, source=f"{name}.txt", text=text, start_index=0, end_index=len(text))


def _draft() -> Draft:
    return Draft(
        id="d", chunk_id="a", model="m", prompt_hash="p", question="What does --prune do?", answer="It prunes."
    )


def _messages(tasks: BuildTasks, item: Passages) -> dict[str, str]:
    """The one message of each call about the item's draft, by task name (a composed draft's parts as
    `part 1`, `part 2`...; its composing call is its `draft`)."""
    of = tasks.of(item)
    compose = of.compose
    if compose is None:
        sent = {"draft": of.draft.request(item)}
    else:
        parts = compose.part_items(item)
        sent = {f"part {number}": compose.part.request(part) for number, part in enumerate(parts, 1)}
        composing = Composing(**dict(item), parts=tuple(_draft() for _ in parts))
        sent["draft"] = compose.request(composing)
    sent.update((critic.name, critic.request(Drafted(_draft(), item))) for critic in of.critics)
    assert all(len(request) == 1 and request[0].role == "user" for request in sent.values())
    return {name: request[0].content for name, request in sent.items()}


def _shared(one: str, other: str) -> int:
    """How many characters the two texts share at their start."""
    return next((at for at, (a, b) in enumerate(zip(one, other, strict=False)) if a != b), min(len(one), len(other)))


def _tasks(tmp_path: Path, *, shared_prefix: bool = True, **settings: object) -> BuildTasks:
    config = BuildConfig(corpus=CorpusSettings(path=str(tmp_path)), shared_prefix=shared_prefix, **settings)
    return BuildTasks.for_config(config)


def test_off_by_default_a_request_is_its_prompt_file_with_the_passages_in_place(tmp_path: Path) -> None:
    assert BuildConfig(corpus=CorpusSettings(path=str(tmp_path))).shared_prefix is False
    item = Passages.of(_chunk("a", FIRST))
    sent = _messages(_tasks(tmp_path, shared_prefix=False, all_critics=True), item)
    assert sent["draft"] == load_prompt("qa_generation").render(context=FIRST, document="a")
    assert sent["critique:supported"] == load_prompt("critique_supported").render(
        context=FIRST, question="What does --prune do?", answer="It prunes."
    )
    # A multi-hop draft's parts each the factoid's prompt with its own passage; its composing call none.
    both = Passages(question_type="multi_hop", chunks=(_chunk("a", FIRST), _chunk("b", SECOND)), link=("prune",))
    tasks = _tasks(tmp_path, shared_prefix=False, question_types={"multi_hop": 100})
    sent = _messages(tasks, both)
    assert sent["part 1"] == load_prompt("qa_generation").render(context=FIRST, document="a")
    assert sent["part 2"] == load_prompt("qa_generation").render(context=SECOND, document="b")
    assert FIRST not in sent["draft"] and SECOND not in sent["draft"]
    assert not any(task.frames(both) for task in (tasks.of(both).draft, *tasks.of(both).critics))


def test_a_factoids_calls_open_with_its_passage_sent_once(tmp_path: Path) -> None:
    item = Passages.of(_chunk("a", FIRST))
    sent = _messages(_tasks(tmp_path, all_critics=True, critics=("clear",)), item)
    assert set(sent) == {"draft", "critique:supported", "critique:clear"}
    # The draft and the check that reads the passage begin alike for at least the passage's length.
    assert _shared(sent["draft"], sent["critique:supported"]) >= len(FIRST)
    assert sent["draft"].startswith(f"<context>\n{FIRST}\n</context>\n\n")
    assert sent["draft"].count(FIRST) == 1
    # The drafting prompt's own place for the passage refers to it; the rest of its wording is the file's.
    assert sent["draft"].endswith(
        load_prompt("qa_generation").render(context="(the passage above)", document="a").rsplit("Name in", 1)[1]
    )
    # A check whose file opens with the passage is sent as its file reads.
    supported = load_prompt("critique_supported").render(
        context=FIRST, question="What does --prune do?", answer="It prunes."
    )
    assert sent["critique:supported"] == supported
    # A critic of the question alone is not shown the passage.
    assert FIRST not in sent["critique:clear"]


def test_a_multi_hop_drafts_calls_that_read_both_passages_share_them_and_a_lone_reader_reads_one(
    tmp_path: Path,
) -> None:
    item = Passages(question_type="multi_hop", chunks=(_chunk("a", FIRST), _chunk("b", SECOND)), link=("prune",))
    for vetting in ("checks", "cookbook"):
        sent = _messages(_tasks(tmp_path, question_types={"multi_hop": 100}, vetting=vetting), item)
        readers_of_both = [name for name, text in sent.items() if FIRST in text and SECOND in text]
        assert len(readers_of_both) >= 2, sorted(sent)
        for name in readers_of_both:
            assert _shared(sent[readers_of_both[0]], sent[name]) >= len(FIRST) + len(SECOND), name
            assert sent[name].count(FIRST) == sent[name].count(SECOND) == 1, name
        # Each part opens with its own passage, as a factoid's draft does; the composing call reads neither.
        assert sent["part 1"].startswith(f"<context>\n{FIRST}\n</context>") and SECOND not in sent["part 1"]
        assert sent["part 2"].startswith(f"<context>\n{SECOND}\n</context>") and FIRST not in sent["part 2"]
        others = set(sent) - set(readers_of_both)
        assert "draft" in others, sorted(sent)
        for name in others:  # the question alone, or one passage of the two: nothing more
            assert SECOND not in sent[name] or FIRST not in sent[name], name
    lone = _messages(_tasks(tmp_path, question_types={"multi_hop": 100}), item)
    assert FIRST in lone["critique:first_alone"] and SECOND not in lone["critique:first_alone"]
    assert SECOND in lone["critique:second_alone"] and FIRST not in lone["critique:second_alone"]


def test_a_users_own_prompt_file_opens_with_the_passage_too(tmp_path: Path) -> None:
    folder = tmp_path / "prompts"
    folder.mkdir()
    own = (
        "Write one question about this text.\n\nText:\n{context}\n\nFrom {document}.\n"
        "Factoid question: (your question)\nAnswer: (your answer)\n"
    )
    (folder / "qa_generation.txt").write_text(own, encoding="utf-8")
    item = Passages.of(_chunk("a", FIRST))
    sent = _messages(_tasks(tmp_path, prompts_dir=str(folder)), item)
    assert sent["draft"] == f"<context>\n{FIRST}\n</context>\n\n" + own.format(
        context="(the passage above)", document="a"
    )
    assert _shared(sent["draft"], sent["critique:supported"]) >= len(FIRST)
