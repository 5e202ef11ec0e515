"""The critics, each declared once, as data: the registry everything else reads.

A critic is a `CriticSpec` (its name, prompt file, place in the early-stop chain, default
threshold, help text and whether it has dataset columns of its own) plus its prompt file, whose
placeholders say what it reads: `{question}` (always), what else of the draft `CRITIC_INPUTS` names
(`{context}`: the chunk) and the run's settings in `CRITIC_SETTINGS` (`{audience}`). A question type
may ask a critic with a prompt of its own, and may bring critics only it asks
(`qagen.question_types`): a build's registry holds those of its types too.

Records, settings, the filter, the summary, the card, the review tools, the CLI's threshold options
and the stand-in LLM all read `CRITICS` (or a run's `BuildConfig.critic_specs()`, which adds the
run's own critics and its question types' to it) instead of listing names.

Two ways to add a critic, both first-class (asked, filtered on, and reported everywhere):

- in Python: `register_critic("specificity", help=..., prompt_folder=FOLDER)` with
  `FOLDER/critique_specificity.txt`, before the build (asked in every build from then on);
- from a prompt file alone: `critique_<name>.txt` in the run's prompts folder and the name in
  `BuildConfig.critics`; `from_prompt_file` makes its spec.

The cookbook's three critics have columns of their own (`<name>_score`, `<name>_eval`, ... : the
cookbook's published schema); every other critic's verdict goes to the one `extra_critics` column.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from pathlib import Path
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

from qagen.errors import ConfigError
from qagen.llm.prompts import Prompt, load_prompt
from qagen.records import CRITIC_NAME_PATTERN, CheckKind, CriticName
from qagen.registry import Registry

CriticScale = CheckKind
"""How a critic's reply is read (`qagen.generation.critique`):

- `rating`: `Evaluation: ... Total rating: N`, N on 1-5 (the cookbook's protocol);
- `yes_no`: a reply that opens with Yes or No (CheckEval's checklist items; NeMo's answerability
  filter): recorded as 5 or 1 on the same scale as written, with P(yes) when the server sends token
  probabilities (what decides: `qagen.generation.vetting`);
- `reader`: the model answers the question from the passages alone (round-trip consistency, Alberti
  et al. 2019): 5 when its answer agrees with the drafted one, 1 when it differs or it says the
  passages do not answer it;
- `lone_reader`: the same reader given one of a draft's passages (its prompt reads `{first_context}`
  or `{second_context}`): 1 when its answer agrees with the drafted one (that passage alone answers a
  question that should need both), 5 when it differs or it finds no answer.
"""

Vetting = Literal["cookbook", "checks"]
"""Which critics vet a build's drafts (beyond its question types' own): `cookbook`, the notebook's
three 1-5 critics (`CRITICS`); `checks`, the yes/no checks of `CHECKS_VETTING`, read as P(yes), which
agree with a reviewer where a small model's 1-5 ratings do not (benchmarks/bench_signals.py)."""

CHECKS_VETTING = ("supported",)
"""The critics `checks` vetting asks of every type (`BUNDLED_OPT_IN`), in place of the cookbook's three."""
CHECKS_VETTING_TYPED = ("clear", "reader")
"""The critics `checks` vetting asks only of the question types that list them (`TypeCritic.vetting`):
`clear` and the reader, of multi-hop and unanswerable drafts. Of factoids they rejected drafts a
reviewer keeps (benchmarks/bench_signals.py): the reader on git's how-to pages; `clear` on git's manual
pages (precision 0.62), where over three reviewed sets the factoids kept without it are as often good
(0.65 against 0.66) and 31 of 40 good ones are kept instead of 25."""

CRITIC_INPUTS = frozenset({"question", "context", "first_context", "second_context", "answer", "retrieved"})
"""What a critic's prompt may read of the draft: the question (required), its passages (`context`:
the chunk, or every passage of a draft that reads several; `first_context`, `second_context`: one of
them alone), the drafted answer, and the chunks a BM25 search of the whole corpus finds for the
question (`retrieved`)."""
CRITIC_SETTINGS = frozenset({"audience"})
"""The run's settings a critic's prompt may read (`BuildConfig` fields of the same name)."""

_FIRST_ORDER_AFTER = 10
"""The gap between the positions of critics registered one after the other (room to slot one in)."""


class CriticSpec(BaseModel):
    """One critic, as everything that asks it, filters on it or shows it reads it."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    name: CriticName = Field(description="The critic's name: its columns, its threshold's option, the funnel.")
    prompt: str = Field(description="The prompt file's name, without `.txt` (bundled, or in the run's prompts folder).")
    order: int = Field(
        description="Its place in the early-stop chain: lower is asked first (the cheapest critics first, so a "
        "draft rejected early costs the fewest tokens), and a low score stops the critics after it."
    )
    help: str = Field(description="What the critic rates, in a line: the CLI's help and the review page show it.")
    threshold: int | None = Field(
        default=None,
        ge=1,
        le=5,
        description="Its default minimum score; None: the build's `min_score`. `min_scores` overrides either.",
    )
    own_columns: bool = Field(
        default=False,
        description="It has dataset columns of its own (`<name>_score`, `<name>_eval`, `<name>_prompt_hash`, and "
        "`<name>_raw` in candidates): the cookbook's three only, whose schema is published. Others go to "
        "`extra_critics`.",
    )
    prompt_folder: str | None = Field(
        default=None,
        description="The folder of its prompt file when it is not one of qagen's bundled prompts (a critic "
        "registered in Python with a prompt file of its own); a run's `prompts_dir` may still replace it.",
    )
    rejects_as: str | None = Field(
        default=None,
        description="The reason a draft it rejects is given (`single_hop`, `answerable`: what the low score "
        "shows), before the score; None: the score alone (`relevance=2<4`).",
    )
    from_prompts_dir: bool = Field(
        default=False,
        description="Its prompt file is in the run's prompts folder alone: a critic of the run's own "
        "(`BuildConfig.critics`).",
    )
    scale: CriticScale = Field(
        default="rating",
        description="How its reply is read: a 1-5 rating, a yes/no, or a reader's answer compared with the "
        "drafted one (`CriticScale`).",
    )
    yes_at: float = Field(
        default=0.5,
        gt=0,
        lt=1,
        description="A yes/no critic's default cut: it passes a draft when P(yes), read from the server's token "
        "probabilities, is at least this (measured per critic: a small model's P(yes) is not calibrated); as "
        "written without them. A build's `cuts` overrides it (`qagen.generation.vetting`).",
    )


def check_prompt(spec: CriticSpec, prompt: Prompt) -> None:
    """Refuse a critic prompt that reads nothing to rate, or something no critic is given."""
    unknown = sorted(prompt.variables - CRITIC_INPUTS - CRITIC_SETTINGS)
    if "question" not in prompt.variables or unknown:
        readable = ", ".join(f"{{{name}}}" for name in sorted(CRITIC_INPUTS | CRITIC_SETTINGS))
        problem = f"has unknown placeholders {unknown}" if unknown else "lacks {question}"
        raise ConfigError(
            f"The prompt {prompt.name}.txt of the critic {spec.name} {problem}; a critic's prompt reads {{question}} "
            f"and may read any of {readable}.",
        )


class CriticRegistry(Registry[CriticSpec]):
    """The critics by name, in the order they were declared (the order of columns, funnel and
    summary); `asked()` gives them in the order they are asked. `kind` names the entry points
    installed packages add critics to it by (`qagen.registry`); None: code alone adds them."""

    def __init__(self, specs: Iterable[CriticSpec] = (), *, kind: str | None = None) -> None:
        # A run's registry is asked for every threshold: made once per registry state and set of own critics.
        self._with_own: dict[tuple[tuple[str, ...], tuple[CriticSpec, ...]], CriticRegistry] = {}
        super().__init__(kind, CriticSpec, noun="critic", specs=specs)

    def register(self, spec: CriticSpec) -> CriticSpec:
        self._with_own.clear()
        return super().register(spec)

    def unregister(self, name: str) -> None:
        self._with_own.clear()
        super().unregister(name)

    def remove(self, name: str) -> None:
        """Unregister a critic (the cookbook's three stay: the dataset's columns are theirs)."""
        spec = self.get(name)
        if spec.own_columns:
            raise ConfigError(f"The critic {name} is one of the cookbook's three; it cannot be removed.")
        self.unregister(name)

    def asked(self) -> tuple[CriticSpec, ...]:
        """In the order they are asked (`order`, then declaration)."""
        return tuple(sorted(self._specs.values(), key=lambda spec: spec.order))

    def next_order(self) -> int:
        """A place after every critic registered."""
        return max((spec.order for spec in self._specs.values()), default=0) + _FIRST_ORDER_AFTER

    def with_own(self, names: Iterable[str], types: Iterable[CriticSpec] = ()) -> CriticRegistry:
        """This registry plus the critics of a build's question types (`types`, each once) and the critics
        `names` names: bundled opt-in ones (`BUNDLED_OPT_IN`, at their own place in the order) or prompt
        files alone (`from_prompt_file`, asked last, in that order)."""
        key = (tuple(names), tuple(dict.fromkeys(types)))
        if key not in self._with_own:
            run = CriticRegistry(self)
            for spec in key[1]:
                run.register(spec)
            for name in key[0]:
                run.register(
                    BUNDLED_OPT_IN.get(name)
                    if name in BUNDLED_OPT_IN
                    else from_prompt_file(name, order=run.next_order())
                )
            self._with_own[key] = run
        return self._with_own[key]


CRITICS = CriticRegistry(
    (
        # Cheapest first: the two that see only the question come before the one that also reads the
        # whole chunk, so a draft rejected early costs the fewest input tokens.
        CriticSpec(
            name="groundedness",
            prompt="critique_groundedness",
            order=30,
            help="the answer is in the chunk, unambiguously",
            own_columns=True,
        ),
        CriticSpec(
            name="relevance",
            prompt="critique_relevance",
            order=20,
            help="useful to the people who will ask it (the audience)",
            own_columns=True,
        ),
        CriticSpec(
            name="standalone",
            prompt="critique_standalone",
            order=10,
            help="makes sense without the chunk",
            own_columns=True,
        ),
    )
)
"""Every registered critic: the cookbook's three, and those `register_critic` adds."""

BUNDLED_OPT_IN = CriticRegistry(
    (
        # Checks that stay honest with a small model (measured: benchmarks/bench_quality.py): a build
        # asks them when `BuildConfig.critics` names them. The passage opens their prompts, so the calls
        # about one draft share a prefix a server's prompt cache reuses.
        CriticSpec(
            name="clear",
            prompt="critique_clear",
            order=15,
            help="the question says what it is about, with no passage in front of the reader (yes/no)",
            scale="yes_no",
            rejects_as="not_standalone",
            yes_at=0.6,
        ),
        CriticSpec(
            name="reader",
            prompt="critique_reader",
            order=25,
            help="a reader given only the passage answers the question as the draft does",
            scale="reader",
            rejects_as="answer_mismatch",
        ),
        CriticSpec(
            name="supported",
            prompt="critique_supported",
            order=27,
            help="the answer is correct and fully supported by the passage (yes/no)",
            scale="yes_no",
            rejects_as="unsupported_answer",
            yes_at=0.7,
        ),
    ),
    kind="critics",
)
"""Bundled critics a build asks only when its `critics` setting names them, and those installed
packages bring (entry points `qagen.critics`, each naming a `CriticSpec` with its `prompt_folder`)."""


def register_critic(
    name: str,
    *,
    help: str,
    prompt: str | None = None,
    prompt_folder: Path | str | None = None,
    order: int | None = None,
    threshold: int | None = None,
) -> CriticSpec:
    """Add a critic to every build from now on: its prompt is the file `prompt` (default
    `critique_<name>`) in `prompt_folder` (default: qagen's bundled prompts), asked at `order`
    (default: after every critic registered), its threshold `threshold` (default: the build's
    `min_score`). Its verdicts go to `extra_critics`."""
    return CRITICS.register(
        CriticSpec(
            name=name,
            prompt=prompt or f"critique_{name}",
            prompt_folder=None if prompt_folder is None else str(Path(prompt_folder).resolve()),
            order=CRITICS.next_order() if order is None else order,
            help=help,
            threshold=threshold,
        )
    )


def from_prompt_file(name: str, *, order: int) -> CriticSpec:
    """The spec of a critic that is a prompt file alone (`critique_<name>.txt` in the prompts folder):
    asked at `order`, its threshold the build's."""
    return CriticSpec(
        name=name,
        prompt=f"critique_{name}",
        order=order,
        help=f"your own critic (critique_{name}.txt)",
        from_prompts_dir=True,
    )


def default_prompt(spec: CriticSpec) -> Prompt:
    """A registered critic's prompt as it ships (bundled, or in its `prompt_folder`), before a run's
    `prompts_dir` replaces it."""
    if spec.from_prompts_dir:
        raise ConfigError(f"The critic {spec.name} is a prompt file of a run's own; it has no default prompt.")
    return load_prompt(spec.prompt, Path(spec.prompt_folder) if spec.prompt_folder else None)


def cookbook_critics() -> tuple[CriticSpec, ...]:
    """The critics with columns of their own, in column order."""
    return tuple(spec for spec in CRITICS if spec.own_columns)


def help_line(spec: CriticSpec) -> str:
    """A critic's help with its name, for option help and error messages."""
    return f"{spec.name} ({spec.help})"


_NAME = re.compile(CRITIC_NAME_PATTERN)


def check_name(name: str) -> str:
    if not _NAME.match(name):
        raise ConfigError(
            f"{name!r} is no critic name: use lower-case letters, digits and _ (it names columns and options)."
        )
    return name
