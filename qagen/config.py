"""Settings of a build, and the fingerprint that tells whether a run directory can be resumed."""

from __future__ import annotations

from collections.abc import Collection
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from qagen.corpus.settings import ChunkSettings, CorpusSettings, PathSetting
from qagen.critics import (
    BUNDLED_OPT_IN,
    CHECKS_VETTING,
    CHECKS_VETTING_TYPED,
    CRITICS,
    CriticRegistry,
    CriticSpec,
    Vetting,
)
from qagen.errors import ConfigError
from qagen.failures import FailureKind
from qagen.llm.backends import DEFAULT_MODEL, ModelSettings
from qagen.llm.clients import CallLimits
from qagen.llm.cost import Price, price_for
from qagen.question_types import DEFAULT_TYPE, QUESTION_TYPES, check_shares
from qagen.records import CriticName, Draft

DEFAULT_AUDIENCE = "people looking for information in this document collection"

RARE_TERMS = "rare terms"
"""The fingerprint's `pairing` of a run that pairs multi-hop passages by rare shared terms alone."""
FINGERPRINT_ADDED: dict[str, tuple[str, Any]] = {
    "pairing": ("generator_model", RARE_TERMS),
    "shared_prefix": ("prompts", False),
    "per_chunk": ("generator_model", 1),
}
"""Fingerprint fields added after runs were made with qagen: the field that tells whether an old run
had decided it (a run whose generator was fixed had drafted) and the value every such run had."""

FREE_CHECK_DEFAULTS: dict[str, bool] = {
    "source_pointing": True,
    "answer_in_question": True,
    "ungrounded_answer": True,
    "answer_pointing": True,
    "code_not_in_passages": True,
}
"""The free checks a build can make before any critic (the values of `free_checks`), in the order
they are tried, and whether each is on unless the build names its own; what each checks and the
reason it rejects with is `qagen.generation.checks.rules.FREE_CHECKS`."""


BuildRole = Literal["generator", "critic"]
"""The models of a build: the generator drafts, the critics rate."""
CertifyOn = Literal["auto", "supported", "predicted_keep"]
"""The scores certified acceptance can threshold (`BuildConfig.certify_on`)."""
BUILD_ROLES: tuple[BuildRole, ...] = ("generator", "critic")


MAX_PER_CHUNK = 10
"""The most pairs one drafting call may ask for: a chunk of the default 2000 characters holds few more
distinct facts, and the reply's numbers are read up to two digits."""


CRITIC_TOP_LOGPROBS = 5
"""The likeliest tokens a build's critic asks for at each position unless its settings say otherwise:
enough to hold the five ratings, or yes and no, where a verdict is written."""


class BuildConfig(BaseModel):
    """Everything `qagen build` needs. Fields marked in `FINGERPRINT` decide what the run produces."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    corpus: CorpusSettings
    chunking: ChunkSettings = ChunkSettings()
    n_generations: int | None = Field(default=None, description="Draft from this many chunks (None: all).")
    target: int | None = Field(
        default=None,
        description="Keep this many questions, split among the question types by their shares (None: keep what "
        "passes of `n_generations` drafts): the build drafts in rounds, each sized by the share of drafts that "
        "passed so far, until every type has its share, `max_drafts` drafts are made or `max_cost` is spent "
        "(`qagen.generation.target`). Not with `n_generations`.",
    )
    max_drafts: int | None = Field(
        default=None,
        description="With `target`: make at most this many drafts, all types together (None: 4 x `target`).",
    )
    per_chunk: int = Field(
        default=1,
        description="Question/answer pairs each drafting call asks of its chunk, numbered in one reply, each pair "
        "a draft of its own (vetted and filtered as any): the model reads the chunk and the instructions once for "
        f"several drafts. Applies to the question types that have a prompt for it (factoid, reworded: "
        "`QuestionTypeSpec.pairs_prompt`); the others draft one a call. `n_generations` and `target` count drafts: "
        f"a build of n drafts makes n / per_chunk calls (rounded up, every pair of every reply a draft). At most "
        f"{MAX_PER_CHUNK}.",
    )
    seed: int = Field(default=42, description="Seed of the chunk sample: the same seed picks the same chunks.")
    generator: ModelSettings = Field(
        default=ModelSettings(spec=DEFAULT_MODEL), description="The model that drafts a question per chunk."
    )
    critic: ModelSettings = Field(
        default=ModelSettings(spec=DEFAULT_MODEL), validate_default=True, description="The model of the critics."
    )
    audience: str = Field(
        default=DEFAULT_AUDIENCE,
        description="Who the questions should be useful to: the relevance critic rates usefulness to them.",
    )
    min_score: int = Field(default=4, description="Keep a draft when every critic scores it at least this (1-5).")
    min_scores: dict[CriticName, int] = Field(
        default_factory=dict,
        description="Per-critic minimum scores of the 1-5 critics, overriding `min_score` and a critic's default.",
    )
    cuts: dict[CriticName, float] = Field(
        default_factory=dict,
        description="Per-check cuts of the checks that are not 1-5 ratings: a yes/no check passes a draft when "
        "P(yes), read from the server's token probabilities, is at least its cut (default: the check's own, "
        "supported 0.7, clear 0.6); a reader when its answer's agreement with the drafted one is at least its "
        "cut (default 0.5). Applied when filtering, so a changed cut re-filters the same records.",
    )
    precision: float | None = Field(
        default=None,
        gt=0,
        lt=1,
        description="Certified acceptance: keep the drafts whose score (`certify_on`) is at least the lowest threshold "
        "at which reviewer labels of a uniform sample of the kept questions (`qagen.review.kept_sample`) "
        "certify that at least this share of the kept questions are ones a reviewer keeps, with `confidence` "
        "(`qagen.review.certify`); None: no certification. Applied when filtering: no LLM call.",
    )
    confidence: float = Field(
        default=0.9,
        gt=0,
        lt=1,
        description="The confidence of a certified `precision`: the chance the certificate is not wrong.",
    )
    certify_on: CertifyOn = Field(
        default="supported",
        description="The score certified acceptance thresholds: `supported`, the check's P(yes) (the default: the "
        "combined score's gain over it is not established on qagen's reviewed sets, docs/benchmarks.md); "
        "`predicted_keep`, the combined score (`qagen.generation.score`: the checks' measurements and the no-call "
        "signals, by coefficients fitted on qagen's reviewed sets); `auto`: the combined score when the run's "
        "candidates have it, else the check's P(yes).",
    )
    score_cut: float | None = Field(
        default=None,
        ge=0,
        le=1,
        description="A certified threshold on the combined score `predicted_keep` (`qagen.generation.score`), set "
        "by certified acceptance (`qagen.review.certify`) when it certifies on that score: a draft every check "
        "passed is kept when its score is at least this. None: no such cut. Not a setting to write by hand.",
    )
    question_types: dict[str, int] = Field(
        default_factory=lambda: {DEFAULT_TYPE: 100},
        description="The question types to draft and their shares in percent of the drafts "
        "(`qagen.question_types`: factoid, multi_hop, unanswerable, reworded), adding up to 100.",
    )
    pair_embeddings: str | None = Field(
        default=None,
        description="Embeddings model that pairs the passages of multi-hop questions by meaning (`local`: the "
        "dense extra's bundled all-MiniLM-L6-v2, offline; a folder or `provider:model`): rare shared terms find "
        "the candidates (a shared name, option or command), the embeddings choose among them the one closest in "
        "meaning, skipping near-duplicates. None: the candidate sharing the rarest terms. Off unless asked: it "
        "changes the sample, and a run keeps the pairing it was made with.",
    )
    vetting: Vetting = Field(
        default="checks",
        description="Which critics vet the drafts: `checks`, yes/no checks read as probabilities (supported: the "
        "answer is correct and in the passage) and, for multi-hop and unanswerable drafts, clear (the question says "
        "what it is about) and a reader that answers them from their passages; `cookbook`, the notebook's three 1-5 "
        "critics (groundedness, relevance, standalone). With a small local model the checks keep what a reviewer "
        "keeps where the 1-5 ratings do not (docs/building.md). A question type's own critics are asked either way.",
    )
    critics: tuple[CriticName, ...] = Field(
        default=(),
        description="Critics beyond the registered ones (`qagen.critics`): the bundled opt-in ones (clear, "
        "reader, supported: `qagen.critics.BUNDLED_OPT_IN`), or your own, each the prompt file "
        "`critique_<name>.txt` in `prompts_dir`, asked after the registered ones, in this order.",
    )
    max_answer_chars: int = Field(
        default=300,
        description="A draft with a longer answer is rejected as `answer_too_long` (the notebook's 300); a draft "
        "composed from parts (a multi-hop question: one answer from a factoid's of each passage) may have this "
        "per part.",
    )
    max_question_chars: int = Field(
        default=500, description="A draft with a longer question is rejected as `question_too_long`."
    )
    all_critics: bool = Field(default=False, description="Run every critic even after one has rejected the draft.")
    dedup_threshold: float = Field(
        default=0.9, description="Word-set Jaccard at which two questions are near-duplicates."
    )
    free_checks: tuple[str, ...] | None = Field(
        default=None,
        description="The free checks (`qagen.generation.checks.rules.FREE_CHECKS`, by name) that reject a draft "
        "before any critic; None: the ones on by default (`FreeCheck.default_on`).",
    )
    check_evidence: bool = Field(
        default=True,
        description="Reject a draft whose quoted evidence (or, without a quote, whose answer) is not in its chunk "
        "as `evidence_not_found`, before any critic.",
    )
    max_copied_share: float | None = Field(
        default=None,
        description="Reject a draft as `too_close` when more than this share of its question's content words are "
        "its chunk's (None: no bound).",
    )
    dedup_embeddings: str | None = Field(
        default="local",
        description="Embeddings model that finds questions asking the same thing in other words (`local`: the "
        "dense extra's bundled all-MiniLM-L6-v2, offline; a folder or `provider:model`); None, or `local` without "
        "the dense extra: the lexical rule only.",
    )
    semantic_dedup_threshold: float = Field(
        default=0.8,
        description="Cosine similarity at which two questions ask the same thing (with `dedup_embeddings`).",
    )
    concurrency: int = Field(default=16, description="LLM calls in flight at once, all models together.")
    max_failure_rate: float = Field(
        default=0.5,
        description="Stop when more than this share of calls fails even after retries (checked after 20 calls).",
    )
    max_tokens: int | None = Field(default=None, description="Stop once the run has spent this many tokens.")
    max_cost: float | None = Field(default=None, description="Stop once the run has spent this many dollars.")
    price_input: float | None = Field(
        default=None, description="Dollars per million input tokens (default: known prices)."
    )
    price_output: float | None = Field(default=None, description="Dollars per million output tokens.")
    price_cached_input: float | None = Field(
        default=None,
        description="Dollars per million cached input tokens: the part of a prompt the provider read from "
        "its prompt cache (default: the known cached price; with none, the input price).",
    )
    prompts_dir: PathSetting | None = Field(
        default=None,
        description="A folder of prompt files, named as the bundled ones, that replace them (None: the bundled "
        "prompts; see `qagen.llm.prompts.load_prompts`).",
    )
    shared_prefix: bool = Field(
        default=False,
        description="Open every call about a draft that reads its passages with them, the prompt after them "
        "referring to them, and give a free call slot to the draft taken first, so a server's prefix cache reads "
        "each draft's passages once (`qagen.generation.passage_frame`). Off by default: with Qwen2.5-Coder-1.5B on "
        "llama.cpp (24 factoid drafts of git's manual pages) it cut the prompt tokens evaluated by 24% (7% per kept "
        "question), but the model quoted the wrong evidence sentence more often, and the share of kept questions "
        "a reviewer judged good fell from 0.75 (12 of 16) to 0.54 (7 of 13).",
    )

    @field_validator("critic")
    @classmethod
    def _verdicts_as_probabilities(cls, critic: ModelSettings) -> ModelSettings:
        # Verdicts are read as probabilities where the server sends them (`qagen.llm.verdict_probability`);
        # 0 turns it off (a server that refuses the parameter).
        return (
            critic
            if critic.top_logprobs is not None
            else critic.model_copy(update={"top_logprobs": CRITIC_TOP_LOGPROBS})
        )

    @model_validator(mode="after")
    def _check(self) -> BuildConfig:
        scores: dict[str, int] = {"min_score": self.min_score}
        scores.update({str(criterion): value for criterion, value in self.min_scores.items()})
        own = [name for name in self.critics if name not in BUNDLED_OPT_IN]
        if own and self.prompts_dir is None:
            raise ConfigError(
                f"`critics` names {', '.join(own)}, prompt files of your own: give the folder holding "
                f"{', '.join(f'critique_{name}.txt' for name in own)} as `prompts_dir` (the bundled opt-in "
                f"critics are {', '.join(BUNDLED_OPT_IN.names())}).",
                settings=("critics", "prompts_dir"),
            )
        check_shares(self.question_types)
        registry = self.critic_registry()  # refuses an own critic named as a registered one
        unknown = sorted(set(self.min_scores) - set(registry.names()))
        if unknown:
            raise ConfigError(
                f"`min_scores` names {', '.join(unknown)}, which is no critic of this build; the critics are "
                f"{', '.join(registry.names())}.",
                settings=("min_scores",),
            )
        for name, score in scores.items():
            if not 1 <= score <= 5:
                raise ConfigError(f"Minimum scores are on the 1-5 scale; {name}={score} is not.")
        self._check_cuts(registry)
        if self.n_generations is not None and self.n_generations < 1:
            raise ConfigError(
                f"`n_generations` must be at least 1, got {self.n_generations}.", settings=("n_generations",)
            )
        self._check_target()
        self._check_per_chunk()
        if not 0 < self.dedup_threshold <= 1:
            raise ConfigError(
                f"`dedup_threshold` must be in (0, 1], got {self.dedup_threshold}.", settings=("dedup_threshold",)
            )
        if self.free_checks is not None:
            unknown = sorted(set(self.free_checks) - set(FREE_CHECK_DEFAULTS))
            if unknown:
                raise ConfigError(
                    f"`free_checks` names no check {', '.join(unknown)}; choose from {', '.join(FREE_CHECK_DEFAULTS)}.",
                    settings=("free_checks",),
                )
        if self.max_copied_share is not None and not 0 < self.max_copied_share <= 1:
            raise ConfigError(
                f"`max_copied_share` must be in (0, 1], got {self.max_copied_share}.", settings=("max_copied_share",)
            )
        if not 0 < self.semantic_dedup_threshold <= 1:
            raise ConfigError(
                f"`semantic_dedup_threshold` must be in (0, 1], got {self.semantic_dedup_threshold}.",
                settings=("semantic_dedup_threshold",),
            )
        return self

    def _check_target(self) -> None:
        if self.target is not None and self.n_generations is not None:
            raise ConfigError(
                f"`n_generations` ({self.n_generations}) and `target` ({self.target}) cannot be given together: "
                "`n_generations` is how many drafts to make, `target` how many questions to keep; give one of them.",
                settings=("n_generations", "target"),
            )
        if self.target is not None and self.target < 1:
            raise ConfigError(f"`target` must be at least 1, got {self.target}.", settings=("target",))
        if self.max_drafts is None:
            return
        if self.target is None:
            raise ConfigError(
                f"`max_drafts` ({self.max_drafts}) bounds a build to a `target` size; give `target` too, or "
                "`n_generations` alone to draft a fixed number.",
                settings=("max_drafts", "target", "n_generations"),
            )
        if self.max_drafts < self.target:
            raise ConfigError(
                f"`max_drafts` ({self.max_drafts}) is below `target` ({self.target}): each kept question is a "
                "draft, so allow at least as many drafts as questions.",
                settings=("max_drafts", "target"),
            )

    def _check_per_chunk(self) -> None:
        if not 1 <= self.per_chunk <= MAX_PER_CHUNK:
            raise ConfigError(
                f"`per_chunk` must be from 1 to {MAX_PER_CHUNK} pairs a call, got {self.per_chunk}.",
                settings=("per_chunk",),
            )
        if self.per_chunk > 1 and not any(self.pairs_per_call(name) > 1 for name in self.question_types):
            able = [spec.name for spec in QUESTION_TYPES if spec.pairs_prompt is not None]
            raise ConfigError(
                f"`per_chunk` ({self.per_chunk}) asks for several pairs a call, and none of the `question_types` of "
                f"this build ({', '.join(self.question_types)}) drafts so: only {', '.join(able)} have a prompt for "
                "it. Leave `per_chunk` at 1, or draft one of those types.",
                settings=("per_chunk", "question_types"),
            )

    def pairs_per_call(self, question_type: str) -> int:
        """The pairs one drafting call of `question_type` asks for: `per_chunk`, for a type with a prompt
        for several (`QuestionTypeSpec.pairs_prompt`); 1 for the others."""
        return self.per_chunk if QUESTION_TYPES.get(question_type).pairs_prompt is not None else 1

    def enabled_checks(self) -> frozenset[str]:
        """The names of the free checks this build makes."""
        if self.free_checks is not None:
            return frozenset(self.free_checks)
        return frozenset(name for name, on in FREE_CHECK_DEFAULTS.items() if on)

    def too_long(self, draft: Draft) -> str | None:
        """Why a parsed draft is no factoid (`question_too_long`, `answer_too_long`), or None.

        A check of the run's settings, not of the reply: it is made when drafts are critiqued and
        filtered, so a changed limit applies to drafts already made, without a new call.
        """
        if len(draft.question or "") > self.max_question_chars:
            return FailureKind.QUESTION_TOO_LONG.value
        # A composed answer is written from its parts' answers, each within the limit.
        if len(draft.answer or "") > self.max_answer_chars * max(1, len(draft.parts)):
            return FailureKind.ANSWER_TOO_LONG.value
        return None

    def _check_cuts(self, registry: CriticRegistry) -> None:
        """A 1-5 critic has a minimum score, a yes/no or reader check a cut in (0, 1): each named in its
        own setting, so no setting is silently without effect."""
        for name in self.min_scores:
            spec = registry.get(name)
            if spec.scale != "rating":
                read = "P(yes)" if spec.scale == "yes_no" else "its answer's agreement with the drafted one"
                raise ConfigError(
                    f"`min_scores` names {name}, which is no 1-5 critic: it is decided by {read} held to a cut in "
                    f"(0, 1), so a minimum score has no effect on it; set its cut in `cuts` instead ({name}=0.8).",
                    settings=("min_scores", "cuts"),
                )
        for name, value in self.cuts.items():
            if name not in registry:
                raise ConfigError(
                    f"`cuts` names {name}, which is no check of this build; the checks are "
                    f"{', '.join(registry.names())}.",
                    settings=("cuts",),
                )
            if registry.get(name).scale == "rating":
                raise ConfigError(
                    f"`cuts` names {name}, a 1-5 critic: it has a minimum score in `min_scores` ({name}=4), not a cut.",
                    settings=("cuts", "min_scores"),
                )
            if not 0 < value < 1:
                raise ConfigError(
                    f"A check's cut in `cuts` is a probability or an agreement in (0, 1); {name}={value} is not.",
                    settings=("cuts",),
                )

    def critic_registry(self) -> CriticRegistry:
        """Every critic of this build: the registered ones (`qagen.critics.CRITICS`), those only its
        question types ask, and its own."""
        types = [critic for name in self.question_types for critic in QUESTION_TYPES.get(name).own_critics]
        vetting = (*CHECKS_VETTING, *CHECKS_VETTING_TYPED) if self.vetting == "checks" else ()
        return CRITICS.with_own(tuple(dict.fromkeys((*vetting, *self.critics))), types)

    @property
    def mixed(self) -> bool:
        """The build drafts some type other than the default: its rows carry `question_type` and the
        passages' columns (a build of factoids alone writes the cookbook's columns as before)."""
        return set(self.question_types) != {DEFAULT_TYPE}

    def critic_specs(self) -> tuple[CriticSpec, ...]:
        """This build's critics in declaration order (columns, funnel, summary)."""
        return tuple(self.critic_registry())

    def threshold(self, criterion: str) -> int:
        """The minimum score of one critic: `min_scores`, else the critic's default, else `min_score`."""
        if criterion in self.min_scores:
            return self.min_scores[criterion]
        default = self.critic_registry().get(criterion).threshold
        return self.min_score if default is None else default

    def call_limits(self) -> CallLimits:
        """How fast the build may call its models (`rpm` is set alike on both models)."""
        return CallLimits(concurrency=self.concurrency, rpm=self.generator.rpm, max_failure_rate=self.max_failure_rate)

    def price(self, model: str) -> Price | None:
        """A model's price for this build: the prices given (`price_input`, `price_output`,
        `price_cached_input`), else its known one; None when unknown (`qagen.llm.cost.price_for`), as it
        is on a server of one's own (`ModelSettings.on_own_server`: a local server named `gpt-4o-mini`
        costs nothing like it)."""
        roles = [settings for settings in (self.generator, self.critic) if settings.spec == model]
        known = not roles or not all(settings.on_own_server for settings in roles)
        return price_for(model, self.price_input, self.price_output, self.price_cached_input, known=known)

    def thresholds(self) -> dict[str, int]:
        """Every critic's minimum score, in declaration order."""
        return {spec.name: self.threshold(spec.name) for spec in self.critic_specs()}

    def fingerprint(
        self, prompt_hashes: dict[str, str | None], *, llm: bool | Collection[BuildRole] = True
    ) -> dict[str, Any]:
        """What must not change between a run and its resumption (it would mix different outputs).

        Sample size, thresholds, concurrency, rate limits, the servers' addresses and the variables
        holding their keys may change: they only extend or re-filter the same records, or change how
        fast they come or where they are fetched from. `llm` names the roles whose models are
        decided (True: both, False: none, as after `qagen stage chunk`); the fields of the others are None,
        not decided yet, fixed by the first stage that calls that role (so `qagen stage generate` fixes the
        generator and `qagen stage critique` the critics). `prompt_hashes` holds None for the prompts of a
        role not decided (see `BuildTasks.prompt_hashes`).
        """
        roles = set(BUILD_ROLES if llm is True else () if llm is False else llm)
        fixed = {
            # Where the corpus is, is no setting: what it holds is checked instead (`corpus.json`), so
            # `docs` and `/abs/docs`, or a corpus copied along with its run directory, resume one run.
            "corpus": self.corpus.model_dump(exclude={"path", "hf_dataset"}),
            "chunking": self.chunking.model_dump(),
            "seed": self.seed,
        }
        by_role: dict[BuildRole, dict[str, Any]] = {
            "generator": {
                "generator_model": self.generator.spec,
                "generator_temperature": self.generator.temperature,
                "max_output_tokens": self.generator.max_output_tokens,
                # Which passages the drafts read: fixed by the first stage that drafts, as the model is.
                "pairing": self.pair_embeddings or RARE_TERMS,
                # How many drafts a call makes is in every draft's key: fixed, as the prompts are.
                "per_chunk": self.per_chunk,
            },
            "critic": {
                "critic_model": self.critic.spec,
                "critic_temperature": self.critic.temperature,
                "audience": self.audience,
            },
        }
        for role, fields in by_role.items():
            fixed.update({key: value if role in roles else None for key, value in fields.items()})
        fixed["prompts"] = prompt_hashes if roles else None
        # How the prompts are laid out is part of what they send: fixed with them, by the first stage that calls.
        fixed["shared_prefix"] = self.shared_prefix if roles else None
        return fixed


def with_added_fields(stored: dict[str, Any]) -> dict[str, Any]:
    """A stored fingerprint with the fields it predates (`FINGERPRINT_ADDED`) at the value its run had,
    so a run made before a setting existed is compared as what it is, not as undecided."""
    completed = dict(stored)
    for field, (decided_by, value) in FINGERPRINT_ADDED.items():
        if field not in completed and completed.get(decided_by) is not None:
            completed[field] = value
    return completed


def describe_differences(stored: dict[str, Any], wanted: dict[str, Any], prefix: str = "") -> list[str]:
    """Human-readable lines for every fingerprint field that differs."""
    lines: list[str] = []
    for key in sorted(stored.keys() | wanted.keys()):
        old, new = stored.get(key), wanted.get(key)
        if old is None or new is None:
            continue  # not decided yet on one side (a run made by `qagen stage chunk`)
        if isinstance(old, dict) and isinstance(new, dict):
            lines.extend(describe_differences(old, new, f"{prefix}{key}."))
        elif old != new:
            lines.append(f"{prefix}{key}: the run has {old!r}, this command asks for {new!r}")
    return lines


def keep_decided(wanted: dict[str, Any], stored: dict[str, Any]) -> dict[str, Any]:
    """`wanted` with every field it leaves undecided (None) taken from `stored`, in nested fields too:
    what an earlier stage fixed stays fixed when a later one runs without it."""
    kept: dict[str, Any] = {}
    for key, value in wanted.items():
        before = stored.get(key)
        if value is None:
            kept[key] = before
        elif isinstance(value, dict) and isinstance(before, dict):
            kept[key] = keep_decided(value, before)
        else:
            kept[key] = value
    return kept
