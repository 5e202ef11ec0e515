"""The LLM work of a build: its tasks (per question type, one draft task and the critics in the
order they are asked) and the one place their dependencies are stated (`BuildFlow`).

The dependencies: a composed draft (a multi-hop question) is written after its parts, and only
when each parsed, passed the checks that cost no call and, under checks vetting, its critics
(`TypeTasks.part_critics`, asked of the parts together; `qagen.generation.compose`): a stage that
drafts alone composes without them, and leaves them to the stage that critiques, which asks them
before the composed draft's own critics; a draft's critics are asked after it, and only when it
parsed and passed the checks that cost no call (the build's, `qagen.generation.checks.precheck`,
then its type's own); cheapest first (the two that read only the question before those that also
read the passages); a low score stops the critics after it (unless `all_critics`), and so does a
critic call that failed, which is redone on the next run together with the critics after it, in
order, exactly as in a run without the failure.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Collection, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from qagen.config import BUILD_ROLES, BuildConfig, BuildRole
from qagen.corpus.chunk import ChunkSource
from qagen.corpus.chunk_index import ChunkIndex
from qagen.critics import CHECKS_VETTING, CHECKS_VETTING_TYPED, CriticSpec, check_prompt
from qagen.errors import ConfigError
from qagen.generation.checks.precheck import Precheck, Prechecks
from qagen.generation.compose import ComposeTask, Composing, PartsVerdict, judge_parts
from qagen.generation.critique import CriticTask, Drafted
from qagen.generation.draft import DraftTask, PairsCall
from qagen.generation.ledger import Ledger
from qagen.generation.semantic_dedup import QuestionVectors, load_semantic_dedup
from qagen.generation.vetting import vet
from qagen.llm.cost import Budget
from qagen.llm.prompts import load_prompts
from qagen.question_types import QUESTION_TYPES, QuestionTypeSpec
from qagen.records import Critique, Draft, Passages, Usage
from qagen.runs.executor import Executor, Store, finished, needs_call


@dataclass(frozen=True)
class TypeTasks:
    """One question type's draft task and critics, critics in the order they are asked."""

    spec: QuestionTypeSpec
    draft: DraftTask | ComposeTask
    """The task whose record is the type's draft: drafted in one call, or composed from parts."""
    critics: tuple[CriticTask, ...]
    part_critics: tuple[CriticTask, ...] = ()
    """Of a type drafted from parts, the critics each part is asked before the composing call: those of
    `CHECKS_VETTING` its part type is asked in this build's vetting (none in the cookbook's), the very
    tasks a build of that type asks them with (`qagen.generation.compose`)."""

    @property
    def compose(self) -> ComposeTask | None:
        """The composing task of a type drafted from parts (`QuestionTypeSpec.parts`); None otherwise."""
        return self.draft if isinstance(self.draft, ComposeTask) else None

    def part_keys(self, item: Passages) -> tuple[str, ...]:
        """The record ids of the parts the item's draft is composed from (none for a type of one call):
        calls paid for it, beside its own."""
        compose = self.compose
        return () if compose is None else compose.part_keys(item)

    def paid_keys(self, item: Passages) -> tuple[str, ...]:
        """The record ids of the calls paid for the item's draft beside its own record: a composed draft's
        parts, or the reply a draft of several pairs a call was read from (paid once for all its pairs)."""
        draft = self.draft
        if isinstance(draft, DraftTask) and draft.calls is not None:
            return (draft.reply_key(item),)
        return self.part_keys(item)

    def critic(self, criterion: str) -> CriticTask | None:
        """The type's task of a critic; None when the type is not vetted by it."""
        return next((task for task in self.critics if task.criterion == criterion), None)

    def check(self, draft: Draft, item: Passages) -> str | None:
        """The type's free check of a parsed draft (before any critic): the rejection reason, or None."""
        return None if self.spec.check is None else self.spec.check(draft, item)


@dataclass(frozen=True)
class BuildTasks:
    """Every question type's tasks of a build, in the order of the build's `question_types`."""

    types: dict[str, TypeTasks]
    chunk_index: ChunkIndex | None = field(default=None, compare=False)
    """The run's chunks in BM25, built on first use: what a critic reading `{retrieved}` is shown,
    and the ranks the final write measures; one per build process, whoever asks (None: no run's
    chunks were given)."""
    prechecks: Prechecks = field(default_factory=Prechecks, compare=False)
    """The free checks of each draft, made once a process: see `precheck`."""
    question_vectors: QuestionVectors | None = field(default=None, compare=False)
    """The drafts' questions embedded as they arrive, for the filter's duplicates by meaning (None:
    the build looks for none, `dedup_embeddings`)."""

    @classmethod
    def for_config(cls, config: BuildConfig, chunks: ChunkSource | None = None) -> BuildTasks:
        """The build's tasks, with the prompts of `config.prompts_dir` replacing the bundled ones; a
        critic reading `{retrieved}`, and the final write, search `chunks` (the run's, given by
        whoever asks or filters)."""
        registry = config.critic_registry()
        specs = [QUESTION_TYPES.get(name) for name in config.question_types]
        # Critics a vetting asks only of the types that list them, unless the build names them itself.
        typed_only = set(CHECKS_VETTING_TYPED) - set(config.critics) if config.vetting == "checks" else set()
        extra = [
            spec.name
            for spec in registry
            if not spec.own_columns and not _owned_by_a_type(spec.name) and spec.name not in typed_only
        ]

        def asked_of(spec: QuestionTypeSpec) -> list[tuple[str, str]]:
            """The type's critics and their prompts, in the order asked."""
            # A type may name the prompt of a critic the build does not ask (an opt-in one): only the asked count.
            chosen = {
                critic.name: critic.prompt or registry.get(critic.name).prompt
                for critic in spec.critics
                if critic.name in registry
                and (critic.vetting in (None, config.vetting) or critic.name in config.critics)
            }
            chosen.update(
                (name, registry.get(name).prompt)
                for name in extra
                if name not in chosen and name not in spec.not_vetted_by
            )
            if config.vetting == "checks":  # the checks vet in place of the cookbook's critics
                chosen = {name: prompt for name, prompt in chosen.items() if not registry.get(name).own_columns}
            order = sorted(chosen, key=lambda name: registry.get(name).order)
            return [(name, chosen[name]) for name in order]

        asked = {spec.name: asked_of(spec) for spec in specs}  # type -> (critic, prompt), in the order asked
        part_specs = {spec.name: _part_type(spec) for spec in specs if spec.parts is not None}
        # A part is asked the critics of `CHECKS_VETTING` as its type is: the same tasks, so the same records.
        part_asked = {
            part.name: [pair for pair in asked_of(part) if config.vetting == "checks" and pair[0] in CHECKS_VETTING]
            for part in part_specs.values()
        }
        # A part type the build drafts too: its own list holds its parts' critics.
        asked |= {name: pairs for name, pairs in part_asked.items() if name not in asked}
        critic_specs = [registry.get(name) for name in dict.fromkeys(n for pairs in asked.values() for n, _ in pairs)]
        bundled = [_draft_prompt(config, spec) for spec in specs] + [spec.draft_prompt for spec in part_specs.values()]
        bundled += [p for pairs in asked.values() for n, p in pairs if not registry.get(n).from_prompts_dir]
        prompts = load_prompts(
            list(dict.fromkeys(bundled)),
            Path(config.prompts_dir) if config.prompts_dir else None,
            own=[spec.prompt for spec in critic_specs if spec.from_prompts_dir],
            defaults_in=_shipped_elsewhere([*specs, *part_specs.values()], asked, critic_specs),
        )
        settings = {"audience": config.audience}
        critics: dict[tuple[str, str], CriticTask] = {}
        for pairs in asked.values():
            for name, prompt in pairs:
                if (name, prompt) not in critics:
                    check_prompt(registry.get(name), prompts[prompt])
                    critics[name, prompt] = CriticTask(
                        name,
                        config.critic.spec,
                        prompts[prompt],
                        settings,
                        scale=registry.get(name).scale,
                        shared_prefix=config.shared_prefix,
                    )

        part_critics = {
            name: tuple(critics[pair] for pair in part_asked[part.name]) for name, part in part_specs.items()
        }

        def drafting(spec: QuestionTypeSpec, per_chunk: int = 1) -> DraftTask:
            shared = config.shared_prefix
            prompt = prompts[spec.pairs_prompt if per_chunk > 1 and spec.pairs_prompt else spec.draft_prompt]
            return DraftTask(config.generator.spec, prompt, spec, shared_prefix=shared, per_chunk=per_chunk)

        types = {
            spec.name: TypeTasks(
                spec,
                drafting(spec, config.pairs_per_call(spec.name))
                if spec.name not in part_specs
                else ComposeTask(
                    config.generator.spec, prompts[spec.draft_prompt], spec, drafting(part_specs[spec.name])
                ),
                tuple(critics[pair] for pair in asked[spec.name]),
                part_critics.get(spec.name, ()),
            )
            for spec in specs
        }
        dedup_model = load_semantic_dedup(config.dedup_embeddings).model
        return cls(
            types,
            ChunkIndex(chunks) if chunks is not None else None,
            question_vectors=QuestionVectors(dedup_model) if dedup_model is not None else None,
        )

    def of(self, item: Passages) -> TypeTasks:
        """The tasks of the item's question type."""
        return self.types[item.question_type]

    def critic(self, criterion: str) -> CriticTask:
        """A critic's task, as the build's first question type that asks it has it."""
        return next(task for task in self.critics if task.criterion == criterion)

    def draft_key(self, item: Passages) -> str:
        return self.of(item).draft.key(item)

    def drafted(self, draft: Draft, item: Passages, critics: Sequence[CriticTask] | None = None) -> Drafted:
        """What the item's critics (or `critics`) judge: the draft, its passages, and what a search finds
        for its question when one of them reads it."""
        if not any(task.reads_retrieved for task in (self.of(item).critics if critics is None else critics)):
            return Drafted(draft, item)
        if self.chunk_index is None:
            raise RuntimeError("a critic reads {retrieved}: make the build's tasks with the run's chunks")
        return Drafted(draft, item, self.chunk_index.top(draft.question or ""))

    def parts_drafted(self, item: Passages, parts: Sequence[Draft]) -> tuple[Drafted, ...]:
        """What the parts' critics judge of each part of the item's composed draft: the part, from its
        passage alone, as they judge a draft of the part's type."""
        tasks = self.of(item)
        compose = tasks.compose
        assert compose is not None, "only a composed draft has parts"
        return tuple(
            self.drafted(part, alone, tasks.part_critics)
            for part, alone in zip(parts, compose.part_items(item), strict=True)
        )

    def judge_parts(
        self,
        item: Passages,
        parts: Sequence[Draft | None],
        config: BuildConfig,
        critiques: Callable[[str], Critique | None] | None = None,
    ) -> PartsVerdict | None:
        """What the parts of the item's composed draft decide (`compose.judge_parts`), their critics'
        verdicts read from `critiques` by record id (None: their free checks alone); None for a type
        drafted in one call."""
        tasks = self.of(item)
        compose = tasks.compose
        if compose is None:
            return None

        def verdicts(drafted: Sequence[Draft]) -> list[dict[str, Critique | None]]:
            assert critiques is not None
            return [
                {critic.criterion: critiques(critic.key(part)) for critic in tasks.part_critics}
                for part in self.parts_drafted(item, drafted)
            ]

        vetted = critiques is not None and bool(tasks.part_critics)
        return judge_parts(parts, item, config, compose.part.question_type, verdicts if vetted else None)

    def stored_parts(
        self, item: Passages, draft: Draft | None, drafts: Callable[[str], Draft | None]
    ) -> tuple[Draft | None, ...]:
        """The parts of the item's draft: those it holds, or with no draft the stored ones (by record id
        from `drafts`); none for a type drafted in one call."""
        if draft is not None:
            return draft.parts
        return tuple(drafts(key) for key in self.of(item).part_keys(item))

    def precheck(self, draft: Draft, item: Passages, config: BuildConfig) -> Precheck:
        """The checks that cost no call of a parsed draft (`checks.precheck`), each draft checked once:
        the flow asks before the critics, the filter again for the draft's row."""
        return self.prechecks(draft, item, config, answered=self.of(item).spec.answer_in_passages)

    def reaches_the_critics(
        self, draft: Draft, item: Passages, config: BuildConfig, critiques: Callable[[str], Critique | None]
    ) -> bool:
        """Whether the draft's critics are asked: it parsed and passed the checks that cost no call (the
        build's, `checks.precheck`, then the type's own), and, composed from parts, its parts passed
        theirs and no stored verdict of their critics (`critiques`, by record id) ends it (the ones not
        stored are asked first: `BuildFlow`)."""
        if not draft.ok:
            return False
        parts = self.judge_parts(item, draft.parts, config, critiques)
        if parts is not None and parts.ends:
            return False
        if self.precheck(draft, item, config).reason is not None:
            return False
        return self.of(item).check(draft, item) is None

    @property
    def critics(self) -> tuple[CriticTask, ...]:
        """Every critic task of the build, each once, in the order the types ask them (a part's after its type's)."""
        seen: dict[int, CriticTask] = {}
        for tasks in self.types.values():
            for task in (*tasks.critics, *tasks.part_critics):
                seen.setdefault(id(task), task)
        return tuple(seen.values())

    def prompt_hashes(self, roles: Collection[BuildRole] = BUILD_ROLES) -> dict[str, str | None]:
        """Every prompt's full sha256, by prompt name (the run fingerprint holds them); None for the
        prompts of a role not in `roles` (not decided yet: see `BuildConfig.fingerprint`)."""
        # Critics by name, so the order does not follow the order they are asked in.
        critics = sorted(self.critics, key=lambda critic: (critic.criterion, critic.prompt.name))
        hashes: dict[str, str | None] = {}
        for role, prompts in (
            ("generator", [prompt for tt in self.types.values() for prompt in tt.draft.prompts]),
            ("critic", [prompt for critic in critics for prompt in critic.prompts]),
        ):
            hashes.update({prompt.name: prompt.sha256 if role in roles else None for prompt in prompts})
        return hashes


def _shipped_elsewhere(
    types: list[QuestionTypeSpec], asked: dict[str, list[tuple[str, str]]], critics: list[CriticSpec]
) -> dict[str, Path]:
    """The folder of each prompt that ships outside qagen's bundled prompts: a registered critic's
    (`CriticSpec.prompt_folder`), and those of a question type's prompts its own folder holds
    (`QuestionTypeSpec.prompt_folder_of`). Two folders holding a prompt of one name are refused: a
    build's prompts are known by their names (the fingerprint, the summary)."""
    folders: dict[str, tuple[Path, str]] = {}

    def place(prompt: str, folder: str, owner: str) -> None:
        path = Path(folder)
        if prompt in folders and folders[prompt][0] != path:
            raise ConfigError(
                f"The prompt {prompt}.txt of {owner} and that of {folders[prompt][1]} are in two folders "
                f"({path} and {folders[prompt][0]}); give one of them another name, or build without one of the two."
            )
        folders[prompt] = (path, owner)

    for critic in critics:
        if critic.prompt_folder:
            place(critic.prompt, critic.prompt_folder, f"the critic {critic.name}")
    for spec in types:
        own_prompts = {critic.prompt for critic in spec.critics if critic.prompt}
        for prompt in [spec.draft_prompt, *(p for _, p in asked.get(spec.name, ()) if p in own_prompts)]:
            folder = spec.prompt_folder_of(prompt)
            if folder is not None:
                place(prompt, str(folder), f"the question type {spec.name}")
    return {prompt: path for prompt, (path, _) in folders.items()}


def _draft_prompt(config: BuildConfig, spec: QuestionTypeSpec) -> str:
    """The prompt that drafts the type in this build: the one of several pairs a call when it asks for several."""
    return (
        spec.pairs_prompt
        if spec.pairs_prompt is not None and config.pairs_per_call(spec.name) > 1
        else spec.draft_prompt
    )


def _part_type(spec: QuestionTypeSpec) -> QuestionTypeSpec:
    """The type a composed type's parts are drafted as: one drafted in one call."""
    part = QUESTION_TYPES.get(spec.parts or "")
    if part.parts is not None:
        raise ConfigError(
            f"The question type {spec.name} is composed from {part.name} drafts, which are composed themselves; "
            "compose it from a type drafted in one call (factoid)."
        )
    return part


def _owned_by_a_type(name: str) -> bool:
    """A critic only some question type asks (`QuestionTypeSpec.own_critics`)."""
    return any(name == critic.name for spec in QUESTION_TYPES for critic in spec.own_critics)


class BuildFlow:
    """Drafts and critiques chunks through an executor, every record stored as it arrives.

    Stored records come from the ledger without their replies (`qagen.generation.ledger`): all
    the decisions here need, at a tenth of the memory.
    """

    def __init__(
        self,
        tasks: BuildTasks,
        config: BuildConfig,
        executor: Executor,
        ledger: Ledger,
        *,
        generate: bool = True,
        critique: bool = True,
    ) -> None:
        self.tasks = tasks
        self.config = config
        self.executor = executor
        self.drafts = ledger.draft_store
        self.critiques = ledger.critique_store
        self.generate = generate
        self.critique = critique

    async def __call__(self, item: Passages) -> None:
        tasks = self.tasks.of(item)
        draft = await self._draft(tasks, item) if self.generate else self.drafts.get(tasks.draft.key(item))
        if draft is not None and draft.ok and draft.question and self.tasks.question_vectors is not None:
            self.tasks.question_vectors.offer(draft.question)
        if not self.critique or draft is None or not draft.ok:
            return
        # A composed draft's parts' critics, asked before it was composed; a stage that drafted alone left them here.
        if draft.parts and not await self._parts_pass(item, draft.parts):
            return
        if not self.tasks.reaches_the_critics(draft, item, self.config, self.critiques.get):
            return  # a draft a free check rejects costs no critic
        drafted = self.tasks.drafted(draft, item)
        for critic in tasks.critics:
            verdict = await self.executor.run(critic, drafted, self.critiques)
            if stops_the_critics(verdict, self.config):
                return

    async def _draft(self, tasks: TypeTasks, item: Passages) -> Draft | None:
        """The item's draft, made when it is not stored; of a composed type, its parts first (together),
        then their critics (together, when the stage critiques), and None when they end it before the
        composing call (`compose`)."""
        compose = tasks.draft
        if isinstance(compose, DraftTask) and compose.calls is not None:
            return await self._pair(compose, compose.calls, item)
        if not isinstance(compose, ComposeTask):
            return await self.executor.run(compose, item, self.drafts)
        found = self.drafts.get(compose.key(item))
        if found is not None and not needs_call(found):
            return found
        parts = await asyncio.gather(
            *(self.executor.run(compose.part, part, self.drafts) for part in compose.part_items(item))
        )
        if not judge_parts(parts, item, self.config, compose.part.question_type).composable:
            return None
        if self.critique and not await self._parts_pass(item, parts):
            return None
        composing = Composing(question_type=item.question_type, chunks=item.chunks, link=item.link, parts=tuple(parts))
        return await self.executor.run(compose, composing, self.drafts)

    async def _pair(self, task: DraftTask, calls: PairsCall, item: Passages) -> Draft:
        """The draft of the item's pair: stored, or read from the reply of its call, which is made only
        when no reply is stored (the pairs of one call ask for it together: sent once, stored once)."""
        found = self.drafts.get(task.key(item))
        if found is not None and not needs_call(found):
            return found
        reply = await self.executor.run(calls, item, _StoredOnce(self.drafts))
        draft = task.from_reply(item, reply)
        self.drafts.add(draft)
        return draft

    async def _parts_pass(self, item: Passages, parts: Sequence[Draft]) -> bool:
        """Whether the parts (each past its free checks) pass their critics: the verdicts not stored (or
        stored from a call worth another) asked together, unless the stored ones end the draft already."""
        stored = self.tasks.judge_parts(item, parts, self.config, lambda key: finished(self.critiques.get(key)))
        if stored is None or not stored.unvetted:
            return stored is None or stored.composable
        critics = self.tasks.of(item).part_critics
        await asyncio.gather(
            *(
                self.executor.run(critic, drafted, self.critiques)
                for drafted in self.tasks.parts_drafted(item, parts)
                for critic in critics
            )
        )
        verdict = self.tasks.judge_parts(item, parts, self.config, self.critiques.get)
        return verdict is not None and verdict.composable


class _StoredOnce:
    """A store of replies that several drafts wait for at once (the pairs of one call): each gets the
    reply, the first to come back stores it, the others find it stored."""

    def __init__(self, store: Store[Draft]) -> None:
        self._store = store

    def get(self, key: str) -> Draft | None:
        return self._store.get(key)

    def add(self, record: Draft) -> None:
        if finished(self._store.get(record.id)) is None:
            self._store.add(record)


def stops_the_critics(verdict: Critique, config: BuildConfig) -> bool:
    """A low score rejects the draft whatever the others say, so they are not asked; a failed
    call stops them until the next run (see the module's docstring)."""
    if verdict.failure is not None and verdict.failure.is_call_failure:
        return True
    if config.all_critics:
        return False
    decided = vet(config, verdict)
    return decided is not None and not decided.passed


def make_budget(config: BuildConfig, spent: dict[str, Usage], *, batch: bool = False) -> Budget | None:
    """The run's spending cap, counting what the run directory has spent already (`Ledger.spent`;
    None: no cap); at batch prices in batch mode."""
    if config.max_tokens is None and config.max_cost is None:
        return None
    models = {config.generator.spec, config.critic.spec}
    prices = {model: config.price(model) for model in models}
    if batch:
        prices = {model: price.batch() if price else None for model, price in prices.items()}
    return Budget(max_tokens=config.max_tokens, max_cost=config.max_cost, prices=prices, spent=dict(spent))


def label(generate: bool, critique: bool) -> str:
    """The progress bar's label for the stages asked."""
    return "drafting + critiquing" if generate and critique else "drafting" if generate else "critiquing"
