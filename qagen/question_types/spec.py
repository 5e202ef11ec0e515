"""What a question type is: one `QuestionTypeSpec`, read by the build (sampling, drafting, critique,
the filter, the rows, the summary and card) and by the evaluator (how its answers are scored)."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Literal, NamedTuple, Protocol

from qagen.corpus.chunk import ChunkSource
from qagen.critics import CriticSpec
from qagen.errors import ConfigError
from qagen.records import Draft, Passages

if TYPE_CHECKING:  # numpy is imported only when texts are embedded
    import numpy as np
    from numpy.typing import NDArray

    from qagen.llm.prompts import Prompt

PASSAGE_PLACEHOLDERS = ("first_context", "second_context", "third_context", "fourth_context")
"""The draft prompt's placeholders of a type that reads several passages, in order."""

TextEmbedder = Callable[[Sequence[str]], "NDArray[np.float64]"]
"""Texts to their unit-length embeddings, one row per text in order, so the dot product of two rows
is their cosine similarity (the build's `pair_embeddings` model; `qagen.generation.embedders`)."""


class PickedPassages(NamedTuple):
    """One draft's passages, by chunk id, and the terms that link them."""

    chunk_ids: tuple[str, ...]
    link: tuple[str, ...] = ()


class Picked(NamedTuple):
    """What a passage picker found: the drafts' passages, in its order, and how many it could not make."""

    groups: list[PickedPassages]
    short: int = 0
    """Drafts asked for that the corpus could not give passages to (no chunk shares a rare term with
    the chunk tried, or, by embeddings, every one that does is a near copy of it: a multi-hop pair
    needs two); 0 when every draft asked for got its passages."""


class PassagePicker(Protocol):
    """How a type picks its passages: `n` drafts' worth (None: one per chunk), reproducible with the seed.

    The picks must be a prefix of one fixed order for a given seed, corpus and `embed`, so that
    asking for more drafts later only extends the sample (the drafts already paid for stay in it).
    `embed` is the build's embeddings model when it has one (`BuildConfig.pair_embeddings`), for a
    picker that chooses passages by meaning; a picker of one passage ignores it."""

    def __call__(self, chunks: ChunkSource, seed: int, n: int | None, embed: TextEmbedder | None = None) -> Picked: ...


class TypeCritic(NamedTuple):
    """A critic that vets a type's drafts, and the prompt it asks them with."""

    name: str
    """A registered critic (`qagen.critics.CRITICS`) or one of the type's `own_critics`."""
    prompt: str | None = None
    """The prompt file the critic uses for this type (one that reads the type's passages); None: its own."""
    vetting: str | None = None
    """Asked only under this vetting (`BuildConfig.vetting`), or when the build names the critic; None: whenever
    the build has the critic."""


DraftCheck = Callable[[Draft, Passages], str | None]
"""A check of a parsed draft that costs no call, made before the critics: the rejection reason, or None."""

Scoring = Literal["answer", "abstention"]
"""How the evaluator scores a type's answers: `answer`, by the metrics asked for (against the
reference answer, the passages); `abstention`, by whether the system declines to answer (the
`abstention` judge), its questions left out of the retrieval metrics."""


@dataclass(frozen=True)
class QuestionTypeSpec:
    """One question type, as the build and the evaluator read it."""

    name: str
    """Its name in `question_types` (`factoid=60,multi_hop=20`), the `question_type` column, the funnel."""
    help: str
    """What kind of question it is, in a line (the CLI's help, the card)."""
    draft_prompt: str
    """The prompt file that drafts it. Its placeholders say what it reads: `{context}` (the one
    passage), or `{first_context}`, `{second_context}`... (`PASSAGE_PLACEHOLDERS`: several), and
    `{link}` (the terms they share). Of a type drafted from `parts`, the prompt that composes them: it
    reads the parts' questions and answers (`qagen.generation.compose.PART_PLACEHOLDERS`) and the
    documents' names (`{documents}`), not the passages."""
    question_label: str
    """The label of the question in the draft's reply (`Factoid question`), before the `Answer:` line."""
    picker: PassagePicker
    """How it picks its passages."""
    critics: tuple[TypeCritic, ...]
    """The critics that vet it; they are asked in their registered order (`CriticSpec.order`)."""
    own_critics: tuple[CriticSpec, ...] = ()
    """Critics only this type asks (the multi-hop test that one passage alone does not answer it)."""
    check: DraftCheck | None = None
    """A free check of its drafts before any critic (the reworded type's word-overlap bound)."""
    reference_answer: Callable[[str], str] | None = None
    """The reference answer made from the drafted one; None: the drafted answer as it is."""
    answer_drafted: bool = True
    """The reference answer comes from the drafted one. False: `reference_answer` makes it without it
    (an abstention), so a reply with a question and no `Answer:` line is a draft: a small model often
    stops after an unanswerable question (3 of 16 of Qwen2.5-1.5B's on Python's documentation)."""
    not_vetted_by: tuple[str, ...] = ()
    """Critics of the build that do not apply to it, so are not asked of its drafts (an unanswerable
    question's answer is an abstention: no passage supports it)."""
    answer_in_passages: bool = True
    """Its answer is written in its passages: the build's free checks of the answer (its evidence in
    a passage, the answer rules) apply. False (an unanswerable question): its question alone is checked."""
    scoring: Scoring = "answer"
    """How the evaluator scores its answers."""
    prompt_folder: str | None = None
    """The folder of its own prompt files (its `draft_prompt`, the prompts its `critics` name), for a
    type registered in Python or brought by an installed package; a prompt it does not hold is one of
    qagen's bundled prompts. A run's `prompts_dir` may still replace any of them."""

    def prompt_folder_of(self, name: str) -> Path | None:
        """The folder of its prompt `name` when its `prompt_folder` holds it (None: a bundled prompt).
        A prompt of its own may not take a bundled prompt's name: the build knows prompts by name."""
        from qagen.llm.prompts import prompts_dir

        if not self.prompt_folder or not (Path(self.prompt_folder) / f"{name}.txt").is_file():
            return None
        if (prompts_dir() / f"{name}.txt").is_file():
            raise ConfigError(
                f"The question type {self.name} brings its own {name}.txt, the name of one of qagen's bundled "
                "prompts; give its file another name (and the type's spec with it)."
            )
        return Path(self.prompt_folder)

    def load_prompt(self, name: str) -> Prompt:
        """One of its prompts as it ships: from its `prompt_folder` when that holds it, else bundled."""
        from qagen.llm.prompts import load_prompt

        return load_prompt(name, self.prompt_folder_of(name))

    parts: str | None = None
    """A type whose drafts are composed: each of its passages is first drafted alone as a question of
    this type (its draft prompt, its parser, its free checks; a record of its own, so a resumed run pays
    for none twice), then `draft_prompt` writes one question that needs every part's answer
    (`qagen.generation.compose`). A part that fails, or that a free check rejects, ends the draft with
    its reason before the composing call. None: `draft_prompt` drafts it from its passages in one call."""

    passages_needed: str | None = None
    """For a type whose picker can fall short (`Picked.short`): what a draft's passages must be, said
    when the corpus had none for some of its drafts. None: a picker of one chunk per draft, never short."""

    pairs_prompt: str | None = None
    """The prompt file that drafts several of its questions from the same passages in one call, numbered
    (`BuildConfig.per_chunk`; `{pairs}`: how many), each pair read as `draft_prompt`'s reply is. None:
    one question a call, whatever `per_chunk` says."""

    @property
    def critic_names(self) -> tuple[str, ...]:
        return tuple(critic.name for critic in self.critics)
