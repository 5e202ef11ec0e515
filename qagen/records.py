"""The records that flow through the pipeline, and the ones a build hands to the user.

Frozen, so a stage can never edit another's output. `DatasetRow` and `CandidateRow` are the
columns of `dataset/` and `candidates/` (their field order is the column order, and their field
types are the column types: see `qagen.generation.write`); `BuildSummary` is `summary.json`.
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, StringConstraints

from qagen.failures import Failure

CRITIC_NAME_PATTERN = r"^[a-z][a-z0-9_]*$"
CriticName = Annotated[str, StringConstraints(pattern=CRITIC_NAME_PATTERN)]
"""A critic's name: lower-case letters, digits and `_`, as it appears in columns and options. Records
and settings read it, so it lives here, below the critics' registry (`qagen.critics`)."""

Criterion = CriticName
"""A critic's name (the critics are `qagen.critics.CRITICS` and a build's own)."""

CandidateStatus = Literal["kept", "rejected", "failed", "undecided"]
"""What became of a sampled chunk: `undecided` when a call it needs was never made (not a failure)."""
UNDECIDED_STAGES: tuple[str, ...] = ("generation", "critique")


class Record(BaseModel):
    """The base of every record qagen stores or hands out: frozen, and no field it does not declare."""

    model_config = ConfigDict(frozen=True, extra="forbid")


class Document(Record):
    """One document of the corpus, before chunking."""

    source: str = Field(
        description="Where the text came from: a path relative to the corpus root, or a table row's source."
    )
    text: str = Field(description="The document's readable text (HTML and PDF already converted).")


class SkippedInput(Record):
    """An input file or row that could not be used, and why."""

    source: str = Field(description="The path or row that was skipped.")
    reason: str = Field(description="Short machine-readable reason: empty, binary, undecodable, unreadable, ...")
    detail: str = Field(default="", description="A human-readable explanation.")


class Chunk(Record):
    """A piece of a document; `document_text[start_index:end_index] == text`."""

    id: str = Field(description="Content hash of (source, start_index, text).")
    source: str = Field(description="The source of the document the chunk came from.")
    text: str = Field(description="The chunk's text.")
    start_index: int = Field(
        description="Character offset of the chunk in its document's text: the text as qagen read it, which for "
        ".txt/.md/.rst files has its line ends normalised (CRLF and CR become LF, as Python's `open()` reads "
        "text), for HTML and PDF is the extracted text, and for a table is the cell's value as it is."
    )
    end_index: int = Field(description="start_index + len(text).")


class RetrievedContext(Record):
    """A passage the RAG system retrieved, with its source and offsets when the system knows them."""

    text: str = Field(description="The passage's text.")
    source: str | None = Field(default=None, description="Its document, when the system reports it.")
    start_index: int | None = Field(default=None, description="Its character offset in that document, when known.")
    end_index: int | None = Field(default=None, description="start_index + the passage's length, when known.")


class Passages(Record):
    """What one draft is made from: the question type and its passages (one chunk, or several for a
    question that needs them all), and the terms that link them. The item of a build's draft and
    critic tasks (`qagen.question_types`)."""

    question_type: str = Field(description="The question type (`qagen.question_types.QUESTION_TYPES`).")
    chunks: tuple[Chunk, ...] = Field(description="The passages, in the order the draft prompt shows them.")
    link: tuple[str, ...] = Field(
        default=(),
        description="The terms the passages share (a multi-hop pair's), rarest first; empty for one passage.",
    )
    pair: int | None = Field(
        default=None,
        description="Its place among the question/answer pairs its drafting call asks for (1: the first), when "
        "one call drafts several from the same passages (`per_chunk`); None: its call drafts it alone.",
    )

    @classmethod
    def of(cls, chunk: Chunk, question_type: str = "factoid") -> Passages:
        """One chunk as the passage of a draft (a factoid's, by default)."""
        return cls(question_type=question_type, chunks=(chunk,))

    @property
    def first(self) -> Chunk:
        """The first passage: the cookbook's single-context columns show it."""
        return self.chunks[0]

    @property
    def chunk_ids(self) -> tuple[str, ...]:
        return tuple(chunk.id for chunk in self.chunks)


class Usage(Record):
    """Token usage reported by the server for one call (zeros when the server reports none)."""

    input_tokens: int = Field(default=0, description="Input (prompt) tokens, the cached ones included.")
    output_tokens: int = Field(default=0, description="Output (completion) tokens, reasoning included.")
    cached_input_tokens: int = Field(
        default=0,
        description="Of `input_tokens`, those the server read from its prompt cache (a prefix it had seen): "
        "billed at the cached-input price where the provider has one; 0 when the server reports none.",
    )


class TaskOutput(Record):
    """What every LLM task's record has: its key, the model, the raw reply, usage, and any failure."""

    id: str = Field(description="The record's key (`Task.key`): the same inputs never cost a second call.")
    model: str = Field(description="Model spec that made it.")
    failure: Failure | None = Field(default=None, description="Why there is no result; None when there is one.")
    raw: str | None = Field(
        default=None,
        description="The model's reply, verbatim; for a failed call, the (redacted) error, since no reply came.",
    )
    usage: Usage = Usage()
    reasoning: str | None = Field(
        default=None,
        description="The model's thinking, set apart from the reply (never read for a verdict).",
    )

    @property
    def ok(self) -> bool:
        return self.failure is None

    @property
    def reason(self) -> str:
        """The user-facing reason string of the failure; empty when ok."""
        return self.failure.reason if self.failure is not None else ""


class Draft(TaskOutput):
    """A question/answer pair drafted from a chunk by the generator model, or a failure to draft one."""

    chunk_id: str
    prompt_hash: str
    question: str | None = None
    answer: str | None = None
    evidence: str | None = Field(
        default=None,
        description="The sentence of the chunk the reply quoted as the answer's evidence; None when it quoted none. "
        "A composed draft's: its parts' sentences, one a line.",
    )
    parts: tuple[Draft, ...] = Field(
        default=(),
        description="The drafts a composed draft was written from (a multi-hop question's factoid of each passage, "
        "`qagen.generation.compose`), in the order of its passages, with their replies; each is also a record of "
        "its own (its usage is counted there, not here). Empty for a draft of one call.",
    )
    pair: int | None = Field(
        default=None,
        description="Its place in the reply it was read from (1: the reply's first pair), when its call asked for "
        "several pairs (`per_chunk`); None: its call drafted it alone.",
    )
    reply_id: str | None = Field(
        default=None,
        description="Of a draft read from a reply of several pairs: the id of the record that holds the reply "
        "(its usage is counted there, once, not on each pair's draft).",
    )
    pairs: int | None = Field(
        default=None,
        description="Set on the record of a call that asked for several pairs (`per_chunk`): how many. That record "
        "holds the reply and its usage, and no question: each pair is a draft of its own (`pair`, `reply_id`).",
    )


class Critique(TaskOutput):
    """One critic's verdict on one draft: a 1-5 score with its rationale, or a recorded failure."""

    draft_id: str
    criterion: str = Field(description="The critic's name: groundedness, relevance, standalone, or your own.")
    prompt_hash: str
    score: int | None = Field(
        default=None,
        description="1-5 as written (a yes/no critic: 5 for yes, 1 for no; a reader check: 5 when its answer "
        "agrees with the drafted one, else 1), or None when the reply had no valid verdict.",
    )
    rationale: str | None = Field(default=None, description="The rationale; a reader check's own answer.")
    probability: float | None = Field(
        default=None,
        description="The verdict read from the server's token probabilities: a rating critic's expected rating "
        "over the rating tokens (1-5, what its threshold applies to), a yes/no critic's P(yes) (0-1, which decided "
        "its score); None when the server sent none (the written verdict decides then).",
    )
    agreement: float | None = Field(
        default=None,
        description="A reader check's agreement of its answer with the drafted one (0-1: the larger of token F1 "
        "and the share of the drafted answer's words in the reader's); None for other critics.",
    )


# --- what a build writes ------------------------------------------------------------------------
CheckKind = Literal["rating", "yes_no", "reader", "lone_reader"]
"""How a check's reply is read and decided (`qagen.critics.CriticScale`)."""

MeasuredAs = Literal["p_yes", "expected_rating", "agreement", "written"]
"""What a verdict's measurement is: P(yes) from the server's token probabilities (a yes/no check), the
expected rating over the rating tokens (a 1-5 critic), a reader's agreement with the drafted answer, or
`written`: no measurement could be read, and the written word or rating decided."""


class Verdict(Record):
    """One check's decision on one draft, made once (`qagen.generation.vetting`) and shown as made: the
    early stop, the filter, the review tools, the profile, the card and the rows all read this value."""

    name: str = Field(description="The check's (critic's) name.")
    kind: CheckKind = Field(description="How its reply is read: a 1-5 rating, a yes/no, a reader's answer.")
    written: int | None = Field(
        description="The verdict as written, on the 1-5 scale (a yes/no: 5 yes, 1 no; a reader: 5 agrees, 1 not)."
    )
    measured_as: MeasuredAs = Field(description="What `measurement` is (`written`: the written verdict decided).")
    measurement: float | None = Field(
        description="What was compared with the cut: P(yes) (0-1), the expected rating (1-5), the reader's "
        "agreement (0-1), or the written rating of a 1-5 critic; None when a yes/no or a reader's written word "
        "decided."
    )
    cut: float = Field(
        description="The cut the measurement was held to: P(yes) at least this (yes/no), a rating at least this "
        "(1-5), an agreement at least this (a reader; a lone reader's below it)."
    )
    passed: bool = Field(description="Whether the draft passed this check.")
    why: str | None = Field(
        description="Why it did not pass, as the candidates' `reason` gives it (`unsupported_answer (supported "
        "P(yes)=0.66<0.70)`); None when it passed."
    )


class CriticVerdict(Record):
    """A critic's verdict in `extra_critics`: one beyond the cookbook's three, which have columns of their own.
    The written word (`score`) beside what decided: the measurement, the cut and the decision."""

    name: str = Field(description="The critic's name.")
    score: int | None = Field(
        description="Its verdict as written, on the 1-5 scale (a yes/no check: 5 yes, 1 no); None when not rated."
    )
    eval: str | None = Field(description="Its rationale (a reader check: its own answer).")
    prompt_hash: str = Field(description="Hash of its prompt text.")
    measured_as: MeasuredAs | None = Field(
        default=None, description="What `measurement` is (`Verdict.measured_as`); None when not rated."
    )
    measurement: float | None = Field(
        default=None, description="What was compared with the cut (`Verdict.measurement`); None when not measured."
    )
    cut: float | None = Field(default=None, description="The cut it was held to; None when not rated.")
    passed: bool | None = Field(default=None, description="Whether the draft passed it; None when not rated.")


class CriticReply(CriticVerdict):
    """A critic's verdict in the candidates' `extra_critics`, with its reply verbatim."""

    raw: str | None = Field(description="The critic's reply, verbatim (None when it was not asked).")


class DatasetRow(Record):
    """One kept question: a row of `dataset/`.

    The cookbook evaluation set's ten columns come first, so existing notebooks load the set
    unchanged; the provenance columns after them say exactly what produced the row.
    """

    context: str = Field(
        description="The chunk the question was drafted from (for an unanswerable question, the chunk it borrows its "
        "subject from, which does not answer it)."
    )
    question: str | None = Field(description="The drafted question (None for a candidate with no usable draft).")
    answer: str | None = Field(description="The drafted reference answer (None with the question).")
    source_doc: str | None = Field(
        description="The source of the chunk's document: where the answer is to be retrieved from. None for a "
        "question no passage answers (`unanswerable`): it has no retrieval target (see `NO_TARGET_COLUMNS`)."
    )
    groundedness_score: int | None = Field(description="The groundedness critic's 1-5 rating; None when not rated.")
    groundedness_eval: str | None = Field(description="The groundedness critic's rationale.")
    relevance_score: int | None = Field(description="The relevance critic's 1-5 rating; None when not rated.")
    relevance_eval: str | None = Field(description="The relevance critic's rationale.")
    standalone_score: int | None = Field(description="The standalone critic's 1-5 rating; None when not rated.")
    standalone_eval: str | None = Field(description="The standalone critic's rationale.")
    extra_critics: tuple[CriticVerdict, ...] = Field(
        default=(),
        description="The verdicts of the build's critics beyond the cookbook's three that rate the question's "
        "type, in the order they are declared (`qagen.critics`). The column is written only when the build "
        "has such critics, so a set "
        "made with the three alone has the cookbook's columns and no other critic column.",
    )
    groundedness_measurement: float | None = Field(
        default=None,
        description="What the groundedness critic's cut was held to: its expected rating over the rating tokens "
        "when the server sent token probabilities, else its written rating; None when not rated.",
    )
    groundedness_passed: bool | None = Field(
        default=None, description="Whether the draft passed the groundedness critic; None when not rated."
    )
    relevance_measurement: float | None = Field(
        default=None,
        description="What the relevance critic's cut was held to: its expected rating over the rating tokens "
        "when the server sent token probabilities, else its written rating; None when not rated.",
    )
    relevance_passed: bool | None = Field(
        default=None, description="Whether the draft passed the relevance critic; None when not rated."
    )
    standalone_measurement: float | None = Field(
        default=None,
        description="What the standalone critic's cut was held to: its expected rating over the rating tokens "
        "when the server sent token probabilities, else its written rating; None when not rated.",
    )
    standalone_passed: bool | None = Field(
        default=None, description="Whether the draft passed the standalone critic; None when not rated."
    )
    id: str = Field(description="The draft's id: a hash of the chunk, the generation prompt and the generator model.")
    chunk_id: str | None = Field(description="The chunk's id (a content hash); None with `source_doc`.")
    start_index: int | None = Field(
        description="Character offset of the chunk in its document's text as qagen read it (line ends of text "
        "files normalised to LF: see `Chunk.start_index`); None with `source_doc`."
    )
    end_index: int | None = Field(description="start_index + len(context); None with `source_doc`.")
    generator_model: str = Field(description="Model spec of the generator.")
    critic_model: str = Field(description="Model spec of the critics.")
    qa_prompt_hash: str = Field(description="Hash of the generation prompt's text.")
    groundedness_prompt_hash: str | None = Field(
        description="Hash of the groundedness critic's prompt text (None: the question's type is not rated on it)."
    )
    relevance_prompt_hash: str | None = Field(
        description="Hash of the relevance critic's prompt text (None: the question's type is not rated on it)."
    )
    standalone_prompt_hash: str | None = Field(
        description="Hash of the standalone critic's prompt text (None: the question's type is not rated on it)."
    )
    evidence_quote: str | None = Field(
        default=None,
        description="The sentence the generator quoted as the answer's evidence (None: the reply quoted none).",
    )
    evidence_start: int | None = Field(
        default=None,
        description="Offset of the answer's evidence in the document's text, as the build placed it (the quote "
        "found in the chunk, or without a quote the answer itself); None when not placed. The evaluator's "
        "chunk-level metrics use it.",
    )
    evidence_end: int | None = Field(default=None, description="End offset (exclusive) of the evidence.")
    evidence_match: str | None = Field(
        default=None,
        description="How the evidence was checked (`qagen.generation.checks.evidence`): quoted, answer_words, "
        "not_found, unsupported, no_words; None when not checked (no usable draft, or too long).",
    )
    copied_share: float | None = Field(
        default=None,
        description="Share of the question's content words found in its chunk (None: no usable draft, or no "
        "content word).",
    )
    bm25_rank: int | None = Field(
        default=None,
        description="Rank of the question's own chunk among the corpus' chunks when the question is a BM25 query "
        "(1: first; ties in its favour); None when not ranked (no usable draft, or no retrieval target).",
    )
    extractive_share: float | None = Field(
        default=None,
        description="Share of the answer's content words found in its passages (`qagen.generation.checks."
        "easiness.extractive_share`; 1: every word is the passages'); None: no usable draft, or no content word.",
    )
    restated_share: float | None = Field(
        default=None,
        description="Share of the answer's content words already in its question (an answer that restates "
        "what was asked scores high); None: no usable draft, or no content word in the answer.",
    )
    predicted_keep: float | None = Field(
        default=None,
        description="The combined score (`qagen.generation.score`): the estimated probability that a reviewer keeps "
        "the question, from the checks' measurements and the columns above by a logistic model with coefficients "
        "fitted on qagen's reviewed sets (`score_model.json`); None: not scored (no usable draft, or a check the "
        "score reads for this question type gave it no verdict).",
    )
    question_type: str = Field(
        default="factoid",
        description="The question's type (`qagen.question_types`): factoid, multi_hop, unanswerable, reworded. "
        "This column and the passages' below are written when the build drafts a type other than factoid.",
    )
    contexts: tuple[str, ...] = Field(
        default=(),
        description="Every passage the question was drafted from, in order (`context` is the first): two for a "
        "multi-hop question. These columns say what a question was drafted from, whatever its type: for an "
        "unanswerable question, the passage it borrows its subject from, which is no retrieval target.",
    )
    source_docs: tuple[str, ...] = Field(default=(), description="The source of each passage's document.")
    chunk_ids: tuple[str, ...] = Field(default=(), description="Each passage's chunk id.")
    start_indices: tuple[int, ...] = Field(default=(), description="Each passage's start offset in its document.")
    end_indices: tuple[int, ...] = Field(default=(), description="Each passage's end offset in its document.")


PASSAGE_COLUMNS = ("question_type", "contexts", "source_docs", "chunk_ids", "start_indices", "end_indices")
"""The columns of a build that drafts several question types (`BuildConfig.mixed`)."""

NO_TARGET_COLUMNS = ("source_doc", "chunk_id", "start_index", "end_index", "bm25_rank")
"""The columns that name a question's retrieval target (the cookbook's `source_doc` and where its chunk
is), None in the row of a question its passages do not answer (`QuestionTypeSpec.answer_in_passages`
False: an unanswerable question), so that no reader of the set takes the passage it borrowed its
subject from for the place of its answer. The profile's coverage and easiness count only rows that
have them."""


class CandidateRow(DatasetRow):
    """One sampled chunk's draft, whatever became of it: a row of `candidates/`.

    A dataset row (so a kept candidate is its dataset row plus these columns) with what decided
    its fate, and every model reply verbatim, so a rejection or a failure can be checked by eye.
    """

    extra_critics: tuple[CriticReply, ...] = Field(
        default=(),
        description="The verdicts of the critics beyond the cookbook's three, each with its reply verbatim "
        "(written only when the build has such critics).",
    )
    status: CandidateStatus = Field(
        description="kept; rejected (by a critic, as too long, or as a duplicate); failed (a call or its reply "
        "failed); or undecided (a call it needs was never made: no draft yet, or a critic not asked yet)."
    )
    reason: str = Field(
        description="Why it was not kept: `generation:<reason>`, `critique:<criterion>:<reason>`, "
        "`<criterion>=<score><<threshold>` (joined by '; '), a free check's reason (`evidence_not_found`, "
        "`question_points_at_source`, `answer_in_question`, `answer_not_grounded`, `too_close`: no critic asked), "
        "`duplicate_of:<id>` (the same words) or `same_meaning_as:<id>` (the same question in other words); "
        "for undecided rows `generation:not_asked` or `critique:<criterion>:not_asked` (joined by '; '); "
        "empty when kept."
    )
    generation_raw: str | None = Field(description="The generator's reply, verbatim (None when no reply came).")
    groundedness_raw: str | None = Field(description="The groundedness critic's reply, verbatim.")
    relevance_raw: str | None = Field(description="The relevance critic's reply, verbatim.")
    standalone_raw: str | None = Field(description="The standalone critic's reply, verbatim.")

    def dataset_row(self) -> DatasetRow:
        """The row as `dataset/` holds it: the dataset columns only."""
        row = self.model_dump(include=set(DatasetRow.model_fields))
        row["extra_critics"] = [{k: v for k, v in c.items() if k != "raw"} for c in row["extra_critics"]]
        return DatasetRow.model_validate(row)


class Funnel(Record):
    """Every count from sampled chunks to kept questions (`summary.json`'s `funnel`)."""

    requested: int | None = Field(
        default=None,
        description="The sample size asked for (`n_generations`, or with `target` the drafts its rounds asked "
        "for; None: every chunk). When the corpus has fewer chunks, all of them are sampled and `sampled` is smaller.",
    )
    sampled: int = Field(description="Chunks sampled (at most n_generations).")
    drafted: int = Field(description="Sampled chunks with a usable question/answer draft.")
    generation_failed: dict[str, int] = Field(
        description="Sampled chunks without a usable draft, by reason (sorted by reason)."
    )
    critique_failed: dict[str, int] = Field(
        description="Drafts left without a verdict by a critic's failure, by `criterion:reason` (sorted)."
    )
    undecided: dict[str, int] = Field(
        default_factory=lambda: dict.fromkeys(UNDECIDED_STAGES, 0),
        description="Sampled chunks not decided because a call they need was never made (no failure), by the "
        "stage that decides them: `generation` (no draft yet: the run stopped early or only chunked) and "
        "`critique` (a draft that passed every critic asked but needs one never asked: the run stopped early, "
        "or it is re-filtered with a lower threshold than the one that stopped its critics).",
    )
    undecided_calls: dict[str, int] = Field(
        default_factory=lambda: dict.fromkeys(UNDECIDED_STAGES, 0),
        description="The calls that would decide the undecided chunks, by stage: one draft per chunk without one "
        "(its critics come after), and every critic call not made yet for undecided drafts (at most: the critics "
        "stop at the first rejection).",
    )
    rejected: int = Field(description="Drafts some critic rated below its threshold.")
    rejected_by: dict[Criterion, int] = Field(
        description="Rejections by critic, every critic of the build listed (a draft two critics reject counts twice)."
    )
    decided_as_written: dict[Criterion, int] = Field(
        default_factory=dict,
        description="Verdicts of a yes/no or 1-5 check that had no usable token probabilities (the server sent "
        "none, or impossible ones), by check: their written word or rating decided (`Verdict.measured_as`).",
    )
    critic_calls_skipped: int = Field(description="Critic calls not made because the draft was already rejected.")
    duplicates: int = Field(description="Drafts dropped as near-duplicates of an earlier one.")
    too_long: int = Field(
        default=0,
        description="Drafts rejected as no factoid: question or answer over the length limit (not critiqued).",
    )
    checks_rejected: dict[str, int] = Field(
        default_factory=dict,
        description="Drafts rejected before any critic by a free check, by reason (`evidence_not_found`, "
        "`question_points_at_source`, `answer_in_question`, `answer_not_grounded`, `too_close`; sorted).",
    )
    semantic_duplicates: int = Field(
        default=0,
        description="Drafts dropped as asking the same thing as an earlier one in other words (embeddings).",
    )
    over_target: int = Field(
        default=0,
        description="Drafts that passed every filter but were not chosen, their type having its share of the "
        "`target` already (rejected as `over_target`; 0 without a target).",
    )
    kept: int = Field(description="Questions in `dataset/`.")
    failure_examples: dict[str, str] = Field(
        default_factory=dict,
        description="For each failure reason, its first case: the document, the chunk id and the reply or "
        "server message (one line, cut to 200 characters), so the commonest failure can be looked at.",
    )


class TypeFunnel(Record):
    """One question type's counts from requested drafts to kept questions (`summary.json`'s `question_types`)."""

    share: int = Field(description="Its share of the drafts asked for, in percent (`question_types`).")
    requested: int | None = Field(
        description="The drafts asked of it: its share of `n_generations` (largest remainder, so within one draft "
        "of the share), or with `target` what its rounds asked for; None: one per chunk."
    )
    sampled: int = Field(description="Drafts it got passages for (each sampled chunk, or pair of chunks).")
    short: int = Field(
        description="Drafts asked for that the corpus could not give passages to (no two chunks share a rare term)."
    )
    drafted: int = Field(description="Sampled drafts with a usable question and answer.")
    generation_failed: int = Field(description="Sampled drafts without one (the reasons are in the funnel).")
    critique_failed: int = Field(description="Drafts left without a verdict by a critic's failure.")
    undecided: int = Field(description="Drafts a call they need was never made for.")
    rejected: int = Field(description="Drafts rejected, by a critic, a free check, the length limits or as duplicates.")
    rejected_by: dict[str, int] = Field(
        description="The rejections by reason (sorted): a critic's name, or what it rejects as (`single_hop`, "
        "`answerable`), a free check's reason (`too_close`), `question_too_long`, `answer_too_long`, `duplicate`, "
        "`over_target` (passed, but the type had its share of the `target`). "
        "A draft two critics reject counts twice."
    )
    kept: int = Field(description="Its questions in `dataset/`.")
    kept_copied_share: float | None = Field(
        description="The mean share of a kept question's content words that its (first) passage spells out "
        "(`qagen.generation.checks.easiness.copied_share`): how close the questions stay to the text's words. None "
        "when none was kept."
    )


class TargetOutcome(Record):
    """A build to a target size (`BuildConfig.target`): what was asked for, what it took (`summary.json`'s `target`)."""

    target: int = Field(description="The questions asked for (`target`).")
    by_type: dict[str, int] = Field(
        description="Each question type's part of them: `target` split by the shares (largest remainder)."
    )
    max_drafts: int = Field(description="The draft budget (`max_drafts`, or 4 x `target`).")
    drafts: int = Field(description="Drafts made, all types together (what the draft budget counts).")
    rounds: int = Field(description="Rounds of drafting, the first included.")
    kept: int = Field(description="Questions kept: `target` when it was reached, fewer on a shortfall.")

    @property
    def reached(self) -> bool:
        return self.kept >= self.target


class CorpusSummary(Record):
    """What chunking found in the corpus (`summary.json`'s `corpus`)."""

    documents: int = Field(description="Documents read.")
    skipped: int = Field(description="Input files or rows that could not be used.")
    skipped_by_reason: dict[str, int] = Field(description="The skipped inputs by reason.")
    chunks: int = Field(description="Chunks written.")
    duplicate_chunks: int = Field(description="Identical chunks dropped.")
    characters: int = Field(description="Characters in all chunks.")


class BuildModels(Record):
    """The models a build used."""

    generator: str = Field(description="Model spec of the generator.")
    critic: str = Field(description="Model spec of the critics.")
    own_servers: list[str] = Field(
        default_factory=list,
        description="The roles (`generator`, `critic`) served by a server other than their provider's (a `base_url` "
        "or `OPENAI_BASE_URL` of another host): the spec is the name asked of it, the model is that server's.",
    )


class StageUsage(Record):
    """The calls one LLM stage paid for (failed calls without a reply are not), and their cost."""

    model: str = Field(description="Model spec of the stage.")
    calls: int = Field(description="Calls paid for, for the sampled chunks.")
    input_tokens: int = Field(description="Input tokens, as the server reported them.")
    output_tokens: int = Field(description="Output tokens, as the server reported them.")
    cached_input_tokens: int = Field(
        default=0,
        description="Of the input tokens, those the server read from its prompt cache (priced at the "
        "model's cached-input price); 0 when it reported none.",
    )
    cost_usd: float | None = Field(
        description="Cost in US dollars, calls answered in batches at batch prices (see `batch`), cached "
        "input at the cached-input price; None when the model's price is unknown."
    )


class BatchSpend(Record):
    """The paid calls of one stage (or role) that went through a batch API, at half the price."""

    calls: int = Field(description="Calls answered in batches.")
    input_tokens: int = Field(description="Their input tokens, as the server reported them.")
    output_tokens: int = Field(description="Their output tokens, as the server reported them.")
    cached_input_tokens: int = Field(
        default=0, description="Of their input tokens, those the server read from its prompt cache."
    )
    cost_usd: float | None = Field(description="What they cost at batch prices; None when the price is unknown.")
    online_cost_usd: float | None = Field(
        description="What the same tokens cost at online prices: the figure batch mode saved against."
    )


class BuildUsage(Record):
    """What each LLM stage of a build paid for."""

    generation: StageUsage = Field(description="The generator's calls.")
    critique: StageUsage = Field(description="The critics' calls.")


# --- a test set's profile (`qagen.generation.profile` counts it) ------------------------------
class Distribution(Record):
    """A numeric column's spread (all None with no value)."""

    count: int = Field(description="Values counted.")
    mean: float | None = Field(description="Their mean.")
    minimum: float | None = Field(description="The least value.")
    p25: float | None = Field(description="The 25th percentile (linear interpolation).")
    median: float | None = Field(description="The median.")
    p75: float | None = Field(description="The 75th percentile.")
    maximum: float | None = Field(description="The greatest value.")


class Coverage(Record):
    """How much of the corpus the kept questions cover: those with a retrieval target (an unanswerable
    question covers no document: `NO_TARGET_COLUMNS`)."""

    documents: int = Field(description="Documents with at least one chunk.")
    documents_sampled: int = Field(description="Documents with at least one sampled chunk.")
    documents_with_kept: int = Field(description="Documents with at least one kept question.")
    chunks: int = Field(description="Chunks of the corpus.")
    chunks_sampled: int = Field(description="Chunks sampled.")
    chunks_with_kept: int = Field(description="Chunks with at least one kept question.")
    kept_per_document: dict[str, int] = Field(
        description="Documents by how many kept questions they have (`0`, `1`, `2`, `3-5`, `6+`)."
    )


class Easiness(Record):
    """How easy the kept questions are for retrieval (`qagen.generation.checks.easiness`): those with a
    retrieval target (an unanswerable question has none: `NO_TARGET_COLUMNS`)."""

    copied_share: Distribution = Field(description="Share of each question's content words found in its chunk.")
    copied_share_bins: dict[str, int] = Field(description="Kept questions by copied share (`0-0.2` ... `0.8-1`).")
    bm25_rank: Distribution = Field(description="Rank of each question's own chunk by BM25 over the corpus.")
    ranked_first: int = Field(description="Kept questions whose own chunk BM25 ranks first.")
    ranked_first_share: float | None = Field(description="Their share of the kept questions ranked.")
    ranked_top5_share: float | None = Field(description="Share of the kept questions whose chunk ranks 1-5.")


class Duplicates(Record):
    """The questions dropped as duplicates of an earlier kept one."""

    lexical: int = Field(description="By the word-overlap rule (`dedup_threshold`).")
    semantic: int = Field(description="By meaning, with embeddings (`dedup_embeddings`).")
    semantic_model: str | None = Field(description="The embeddings model; None when the lexical rule was used alone.")
    lexical_only_because: str | None = Field(description="Why the lexical rule was used alone; None when it was not.")


class CheckMeasured(Record):
    """One check's decisions over a build's drafts: the measurements that were held to its cut, binned."""

    kind: CheckKind = Field(description="How its reply is read (`CheckReading.kind`).")
    cut: float = Field(description="The cut its measurements were held to.")
    bins: dict[str, int] = Field(
        description="Drafts by the bin of their measurement, low to high: `0.0`-`0.9` (P(yes) or agreement, "
        "bins 0.1 wide by their lower edge) or `1`-`5` (a rating, by its whole part); `written yes` / `written no` "
        "for verdicts the written word decided (no token probabilities, or a reader that found no answer)."
    )
    passed: int = Field(description="Drafts it passed.")
    rejected: int = Field(description="Drafts it rejected.")


class TestSetProfile(Record):
    """What a build kept, described."""

    question_types: dict[str, int] = Field(
        description="Kept questions by type: every type of the build, in the order of its `question_types`, 0 when "
        "none was kept."
    )
    coverage: Coverage = Field(description="Documents and chunks covered.")
    easiness: Easiness = Field(description="How easy the kept questions are for retrieval.")
    question_chars: Distribution = Field(description="Length of the kept questions, in characters.")
    answer_chars: Distribution = Field(description="Length of the kept answers, in characters.")
    checks_measured: dict[str, CheckMeasured] = Field(
        default_factory=dict,
        description="Each check's measurements over every draft it decided (kept or not), binned, with its cut and "
        "how many it passed and rejected: what decided, never the written word beside it.",
    )
    duplicates: Duplicates = Field(description="The duplicates removed.")
    checks: dict[str, int] = Field(description="Drafts the free checks rejected before any critic, by reason.")


MIN_KEPT_LABELS = 20
"""The labelled kept questions an estimate of their quality needs; with fewer it is reported as too few."""

KeptQualityStatus = Literal["not_estimated", "too_few", "estimated"]
"""Whether the share of good kept questions is estimated: no labelled sample, too few labels, or estimated."""


class KeptQuality(Record):
    """The share of a build's kept questions a reviewer keeps, estimated from people's keep decisions on a
    uniform random sample of them (`qagen.review.kept_sample`; `summary.json`'s `kept_quality`).

    The sample is the kept questions in a random order drawn by its seed; the labels counted are those of
    its beginning up to the first question nobody decided on, so the counted labels are themselves a
    uniform random sample whatever a reviewer skipped. A question several reviewers decided on counts
    once, as its reviewers' majority (a tie: not kept).
    """

    status: KeptQualityStatus = Field(
        default="not_estimated",
        description="`not_estimated`: no kept question of a sample has a keep decision; `too_few`: fewer labels "
        "than `min_labels`, so no share and no interval; `estimated`: `share` with its interval.",
    )
    share: float | None = Field(
        default=None, description="The share of the counted labels that keep their question; None unless estimated."
    )
    low: float | None = Field(default=None, description="The interval's lower end; None unless estimated.")
    high: float | None = Field(default=None, description="The interval's upper end; None unless estimated.")
    confidence: float = Field(default=0.95, description="The interval's confidence level.")
    method: Literal["wilson"] | None = Field(
        default=None,
        description="How the interval is computed: `wilson`, the Wilson score interval of a binomial share on the "
        "counted labels (no finite-population correction, so it errs wide when they are a large share of the kept "
        "questions). None unless estimated.",
    )
    labels: int = Field(default=0, description="Kept questions of the sample counted: the estimate's n.")
    kept_by_reviewers: int = Field(default=0, description="Of those, the questions the reviewers keep.")
    labels_not_counted: int = Field(
        default=0,
        description="Questions of the sample with a keep decision after its first one without: not counted, as a "
        "reviewer who skips a question may skip the hard ones (label the sample in its order).",
    )
    min_labels: int = Field(default=MIN_KEPT_LABELS, description="The labels an estimate needs.")
    kept: int | None = Field(
        default=None, description="The kept questions the sample was drawn from (the estimate's N); None: no sample."
    )
    kept_fingerprint: str | None = Field(
        default=None,
        description="The sha256 of those kept questions' sorted ids (`qagen.generation.kept_quality.kept_fingerprint`)"
        "; None: no sample.",
    )
    stale: bool = Field(
        default=False,
        description="The run's kept questions are no longer the ones the sample was drawn from (it was resized or "
        "re-filtered since): the estimate is about a set the run does not hold.",
    )

    @property
    def counted_whole(self) -> bool:
        """Every kept question labelled, too few for an estimate: the share is then counted, not estimated."""
        return self.status == "too_few" and not self.stale and self.kept is not None and self.labels == self.kept > 0


CertifiedStatus = Literal["certified", "too_few", "stale"]
"""What the labels certify: a threshold; nothing (too few labels, or an error among the highest scored); or
nothing, as the labels are of a sample drawn from other kept questions than the settings keep."""


class Certified(Record):
    """Certified acceptance (`qagen.review.certify`; `summary.json`'s `certified`): the lowest threshold on the
    drafts' score at which reviewer labels of a uniform sample of the kept questions certify, by fixed-sequence
    testing with a Clopper-Pearson bound, that at least `precision` of the kept questions are ones a reviewer
    keeps, with `confidence`."""

    status: CertifiedStatus = Field(
        description="`certified`, `too_few` or `stale` (nothing claimed but when certified)."
    )
    precision: float = Field(description="The share of good kept questions asked for (`filter.precision`).")
    confidence: float = Field(description="The confidence asked for (`filter.confidence`).")
    score: str = Field(
        description="The score thresholded, as said: `supported P(yes)`, or `predicted_keep` (the combined score)."
    )
    cut_on: str = Field(
        default="supported",
        description="The column the threshold holds (`vetting.certified_config`'s `on`): `supported` (the check's "
        "P(yes)) or `predicted_keep`.",
    )
    labels: int = Field(description="The labels of the kept sample read (its beginning up to the first not labelled).")
    threshold: float | None = Field(description="Keep the drafts whose score is at least this; None unless certified.")
    labels_above: int = Field(description="Labelled drafts at or above the threshold (or the first one tested).")
    errors_above: int = Field(description="Of those, the ones the reviewers do not keep.")
    upper_bound: float | None = Field(
        description="The Clopper-Pearson upper bound on the error there; None: none tested."
    )
    more_labels: int = Field(
        description="Unless certified: the labels of the sample more that would suffice, if they hold no error."
    )


class CheckReading(Record):
    """How one check of a build was asked and decided (`qagen.generation.vetting`): what the summary, the
    table and the card say of it."""

    kind: CheckKind = Field(description="How its reply is read: a 1-5 rating, a yes/no, a reader's answer.")
    measured_as: MeasuredAs = Field(
        description="What its cut is held to when the server sends token probabilities (P(yes), the expected "
        "rating) or a reader answers (its agreement); without them the written verdict decides."
    )
    cut: float = Field(description="The cut: passes at or above it (a lone reader: below it).")
    question_types: tuple[str, ...] = Field(description="The question types whose drafts it was asked of.")
    reads_audience: bool = Field(description="Its prompt reads the build's `audience`.")
    help: str = Field(description="What it checks, in a line.")


class BuildSummary(Record):
    """A build's `summary.json`: what went in, what came out, and what it cost."""

    qagen_version: str = Field(description="The qagen version that wrote the summary.")
    corpus: CorpusSummary = Field(description="What chunking found.")
    funnel: Funnel = Field(description="Every count from sampled chunks to kept questions.")
    question_types: dict[str, TypeFunnel] = Field(
        default_factory=dict,
        description="The funnel of each question type of the build, in the order of its `question_types`.",
    )
    thresholds: dict[Criterion, int] = Field(
        description="The minimum score each 1-5 critic the build asked holds its (expected) rating to."
    )
    checks: dict[Criterion, CheckReading] = Field(
        default_factory=dict,
        description="Every check (critic) the build asked, in the order asked: of which question types, how it "
        "was read and decided, and its cut.",
    )
    models: BuildModels = Field(description="The generator and critic models.")
    prompts: dict[str, str] = Field(description="Each prompt's name and the first 12 characters of its hash.")
    usage: BuildUsage = Field(description="Calls, tokens and cost, per LLM stage.")
    batch: dict[str, BatchSpend] = Field(
        default_factory=dict,
        description="Of those, the calls answered in batches (batch mode, offline batches), per stage: their "
        "cost at batch prices and at online prices. Empty when every call was made online.",
    )
    settings: dict[str, Any] = Field(description="The build's settings, as `BuildConfig` dumps them to JSON.")
    profile: TestSetProfile | None = Field(
        default=None, description="What the build kept, described (`qagen.generation.profile`); `qagen profile RUN`."
    )
    target: TargetOutcome | None = Field(
        default=None, description="A build to a target size: the target and what reaching it took; None without one."
    )
    certified: Certified | None = Field(
        default=None,
        description="Certified acceptance (`filter.precision`): what the labels certify; None: not asked.",
    )
    kept_quality: KeptQuality = Field(
        default_factory=KeptQuality,
        description="The share of the kept questions a reviewer keeps, estimated from labels of a uniform random "
        "sample of them (`qagen.review.estimate`); not estimated until such labels exist.",
    )
