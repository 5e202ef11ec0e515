"""The dataset card (`README.md` of the Hub repo), written with `huggingface_hub`'s card API.

Its YAML metadata is what the Hub indexes (configs, task, language, size, license, tags); its body
says what the set is for, how it was made (the funnel, the models, the settings, each prompt's
hash and text) and how to load it and evaluate a RAG system with it. Everything comes from the
run's `summary.json`, passed through `public_summary` first, so nothing local leaks into it.
"""

from __future__ import annotations

import copy
import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from huggingface_hub import DatasetCard, DatasetCardData

from qagen._version import __version__
from qagen.critics import CRITICS
from qagen.llm.cost import cached_note
from qagen.redaction import redact

MARKER_TAG = "qagen"
TAGS = ["synthetic", "rag-evaluation", MARKER_TAG]
# `unknown` is on the Hub's license list and says exactly what qagen knows about a private corpus;
# `other` would claim a custom license and make the Hub ask for its name and link.
DEFAULT_LICENSE = "unknown"
PROMPTS_IN_REPO = "prompts"
SUMMARY_IN_REPO = "summary.json"
NOT_PUBLISHED = "(not published)"
_CANDIDATE_COLUMNS = "its scores, rationales, raw replies, `status` (kept / rejected / failed / undecided) and `reason`"
# Where `Dataset.push_to_hub` puts each config's shards (its `data_dir` default).
CONFIG_DIRS = {"default": "data", "candidates": "candidates"}
_SIZE_LIMITS = [(1_000, "n<1K"), (10_000, "1K<n<10K"), (100_000, "10K<n<100K"), (1_000_000, "100K<n<1M")]
_SIZE_LIMITS += [(10**7, "1M<n<10M"), (10**8, "10M<n<100M"), (10**9, "100M<n<1B")]


@dataclass(frozen=True)
class PromptFile:
    """A prompt the run used, and where its text is in the repo."""

    name: str
    hash: str
    """First 12 hex digits of the text's sha256, as in summary.json and every row."""
    path_in_repo: str | None
    """None when the installed prompt file no longer matches the run's hash (its text is then unknown)."""


@dataclass(frozen=True)
class CardContent:
    """Everything the card says, gathered by `qagen.publish.push`."""

    repo_id: str
    summary: Mapping[str, Any]
    """The run's summary after `public_summary`."""
    kept_rows: int
    candidate_rows: int
    languages: list[str]
    license: str
    prompts: list[PromptFile]
    revision: str | None = None
    agreement: str | None = None
    """The section on the critics' agreement with human reviewers, when the run has labels."""


def size_category(rows: int) -> str:
    """The Hub's `size_categories` bucket for a number of rows."""
    for limit, label in _SIZE_LIMITS:
        if rows < limit:
            return label
    return "n>1B"


EMBEDDINGS_SETTINGS = ("dedup_embeddings", "pair_embeddings")
"""The settings that name an embeddings model (`local`, a model folder, or `provider:model`)."""
_PROVIDER_SPEC = re.compile(r"^(?!local:)[\w.-]+:(?![\\/])")
"""`provider:model`, and not `local:FOLDER` or a Windows path (`C:\\models`): a spec that names no folder."""


def _names_no_folder(spec: str) -> bool:
    """Whether an embeddings model's spec can be published: `local` (the bundled model) or a provider's
    model; a local model's folder names a local path."""
    return spec == "local" or _PROVIDER_SPEC.match(spec) is not None


def public_summary(summary: Mapping[str, Any]) -> dict[str, Any]:
    """summary.json as it may be published: no server addresses, no local paths, no secrets.

    The LLM server's `base_url` can name internal hosts (and carry `user:key@`), and the corpus
    path and a local embeddings model's folder name local folders; they are replaced by a
    placeholder that still shows they were set.
    """
    public = copy.deepcopy(dict(summary))
    settings = public.get("settings")
    if isinstance(settings, dict):
        for role in ("generator", "critic"):
            model = settings.get(role)
            if isinstance(model, dict) and model.get("base_url"):
                model["base_url"] = NOT_PUBLISHED
        for key in EMBEDDINGS_SETTINGS:
            embeddings = settings.get(key)
            if isinstance(embeddings, str) and not _names_no_folder(embeddings):
                settings[key] = NOT_PUBLISHED
        corpus = settings.get("corpus")
        if isinstance(corpus, dict):
            for key in ("path", "hf_dataset"):
                if corpus.get(key):
                    corpus[key] = NOT_PUBLISHED
    return public


def configs_metadata() -> list[dict[str, Any]]:
    """The `configs` entries, in the very form `Dataset.push_to_hub` writes and merges them."""
    return [
        {"config_name": name, "data_files": [{"split": "train", "path": f"{folder}/train-*"}]}
        for name, folder in CONFIG_DIRS.items()
    ]


def is_qagen_card(card_data: Mapping[str, Any] | None) -> bool:
    """Whether a repo's card metadata marks it as made by qagen (its `tags` hold `qagen`)."""
    tags = (card_data or {}).get("tags") or []
    return MARKER_TAG in (tags if isinstance(tags, list) else [tags])


def make_card(content: CardContent) -> DatasetCard:
    """The card: metadata (with both configs) and the body; secrets are masked as a last guard."""
    data = DatasetCardData(
        language=content.languages or None,
        license=content.license,
        size_categories=[size_category(content.kept_rows)],
        task_categories=["question-answering"],
        pretty_name=content.repo_id.split("/")[-1],
        tags=TAGS,
        configs=configs_metadata(),
    )
    text = f"---\n{data.to_yaml()}\n---\n\n{_body(content)}"
    return DatasetCard(redact(text))


# --- the body -----------------------------------------------------------------------------------
def _body(content: CardContent) -> str:
    summary = content.summary
    sections = [
        _intro(content),
        _funnel(summary),
        *([_profile(summary)] if summary.get("profile") else []),
        _kept_quality(summary),
        *([content.agreement] if content.agreement else []),
        _models(summary),
        _settings(summary),
        _prompts(content.prompts),
        _usage(content),
        _provenance(summary, content.languages),
    ]
    return "\n\n".join(sections) + "\n"


def _critics(summary: Mapping[str, Any]) -> tuple[str, bool]:
    """The checks the run asked, as a sentence: of which question types, how each was read and the cut
    it was held to (`BuildSummary.checks`); and whether any is beyond the cookbook's three (its verdicts
    are then in `extra_critics`). A summary older than `checks` names its critics by their thresholds."""
    checks: Mapping[str, Any] = summary.get("checks") or {}
    if not checks:
        names = list(summary.get("thresholds", {})) or [spec.name for spec in CRITICS]
        registry = CRITICS.with_own([name for name in names if name not in CRITICS])
        described = [f"{name} ({registry.get(name).help})" for name in names]
        extra = any(not registry.get(name).own_columns for name in names)
        return f"{len(names)} LLM critics rated each draft from 1 to 5 for {_listed(described)}", extra
    typed = len({name for check in checks.values() for name in check.get("question_types", ())}) > 1
    described = [_check_words(name, check, typed) for name, check in checks.items()]
    extra = any(name not in CRITICS or not CRITICS.get(name).own_columns for name in checks)
    noun = "check" if len(checks) == 1 else "checks"
    return f"the LLM asked {len(checks)} {noun} of each draft: {_listed(described)}", extra


def _check_words(name: str, check: Mapping[str, Any], typed: bool) -> str:
    """One check as the card says it: what it checks, how it was read and decided, and of which types."""
    cut = check.get("cut")
    kind = check.get("kind")
    if kind == "yes_no":
        read = f"a yes/no read as P(yes) from the token probabilities, kept at P(yes) >= {cut:.2f}"
    elif kind == "rating":
        read = f"a 1-5 rating read as its expected value over the rating tokens, kept at >= {cut:g}"
    elif kind == "lone_reader":
        read = f"a reader of one passage, kept when its answer agrees with the draft's below {cut:.2f}"
    else:
        read = f"a reader of the passages, kept when its answer agrees with the draft's at >= {cut:.2f}"
    of_types = f"; asked of {', '.join(check.get('question_types', ()))}" if typed else ""
    return f"**{name}** ({check.get('help')}: {read}{of_types})"


def _listed(items: list[str]) -> str:
    return ", ".join(items[:-1]) + f" and {items[-1]}" if len(items) > 1 else items[0]


def _intro(content: CardContent) -> str:
    name = content.repo_id.split("/")[-1]
    critics, extra = _critics(content.summary)
    extra_columns = (
        "; the checks beyond the cookbook's three in `extra_critics`, a list of `{name, score, eval, prompt_hash, "
        "measured_as, measurement, cut, passed}` (`score` the verdict as written, 5 yes and 1 no; `measurement` "
        "what was held to the `cut`: P(yes), an expected rating or a reader's agreement)"
        if extra
        else ""
    )
    no_target = (
        " An unanswerable question has no retrieval target: its `source_doc`, `chunk_id`, offsets and `bm25_rank` "
        "are null (its `context` is the passage it borrows its subject from, which does not answer it)."
        if "unanswerable" in content.summary.get("question_types", {})
        else ""
    )
    return f"""# {name}

A synthetic question/answer test set for evaluating retrieval-augmented generation (RAG) systems,
made with qagen from a document collection. An LLM drafted one factoid question and answer per
sampled chunk of the documents; {critics}; a draft is kept when it passes every check asked of it
(without token probabilities, its written verdict decides) and it is not a near-duplicate of an
earlier question.

| config | rows | what |
|---|---|---|
| `default` (split `train`) | {content.kept_rows} | the kept questions: the test set |
| `candidates` (split `train`) | {content.candidate_rows} | every draft, with {_CANDIDATE_COLUMNS} |

Columns: `context`, `question`, `answer`, `source_doc`, and for each critic `<criterion>_score` and
`<criterion>_eval` (its rationale), as in the Hugging Face
[RAG evaluation cookbook](https://huggingface.co/learn/cookbook/rag_evaluation){extra_columns}; then provenance:
`id`, `chunk_id`, `start_index` / `end_index` (character offsets of the context in `source_doc`),
the generator and critic models and the hash of every prompt.{no_target}"""


def _with_reasons(total: int, reasons: Mapping[str, int]) -> str:
    parts = [f"{name}: {count}" for name, count in reasons.items() if count]
    return f"{total}" + (f" ({', '.join(parts)})" if parts else "")


def _funnel(summary: Mapping[str, Any]) -> str:
    corpus, funnel = summary.get("corpus", {}), summary.get("funnel", {})
    generation_failed = funnel.get("generation_failed", {})
    critique_failed = funnel.get("critique_failed", {})
    undecided = funnel.get("undecided", {})
    rows = [
        ("documents", corpus.get("documents")),
        ("inputs skipped", _with_reasons(corpus.get("skipped", 0), corpus.get("skipped_by_reason", {}))),
        ("chunks", corpus.get("chunks")),
        ("identical chunks dropped", corpus.get("duplicate_chunks")),
        ("sampled chunks", funnel.get("sampled")),
        ("drafted", funnel.get("drafted")),
        ("generation failed", _with_reasons(sum(generation_failed.values()), generation_failed)),
        ("critique failed", _with_reasons(sum(critique_failed.values()), critique_failed)),
        ("undecided (a call never made)", _with_reasons(sum(undecided.values()), undecided)),
        ("rejected before any critic by a free check", _free_checks(funnel)),
        ("rejected by the critics", funnel.get("rejected")),
        *((f"rejected by {name}", count) for name, count in funnel.get("rejected_by", {}).items()),
        ("near-duplicates dropped", funnel.get("duplicates")),
        ("same question in other words dropped", funnel.get("semantic_duplicates", 0)),
        *_target_rows(summary),
        ("**kept**", f"**{funnel.get('kept')}**"),
    ]
    table = "\n".join(f"| {label} | {value} |" for label, value in rows)
    return (
        "## How it was made\n\nThe funnel from documents to kept questions (a draft may fail several critics,\n"
        "so the per-critic counts can add up to more than the rejections):\n\n"
        f"| stage | count |\n|---|---|\n{table}" + _question_types(summary)
    )


def _target_rows(summary: Mapping[str, Any]) -> list[tuple[str, Any]]:
    """A build to a target size: the target, what it took, and the passing drafts beyond it."""
    target = summary.get("target")
    if not target:
        return []
    from qagen.generation.kept_quality import certified_of
    from qagen.generation.target import counted_at

    counted = f", counted at {passing}" if (passing := counted_at(certified_of(summary))) else ""
    drafted = f"{target.get('target')} ({target.get('drafts')} drafts in {target.get('rounds')} rounds{counted})"
    over = summary.get("funnel", {}).get("over_target", 0)
    return [("questions asked for (target)", drafted), ("passed, beyond the target", over)]


def _question_types(summary: Mapping[str, Any]) -> str:
    """The funnel per question type, for a set of more than factoids (the `question_type` column)."""
    types: Mapping[str, Any] = summary.get("question_types", {})
    if set(types) <= {"factoid"}:
        return ""
    lines = [
        "",
        "",
        "Per question type (the `question_type` column; `contexts`, `source_docs`, `chunk_ids`, `start_indices`",
        "and `end_indices` hold every passage of a question, `context` and its columns the first):",
        "",
        "| type | share | asked | drafted | rejected (by reason) | kept |",
        "|---|---|---|---|---|---|",
    ]
    for name, counts in types.items():
        asked = "one per chunk" if counts.get("requested") is None else counts.get("requested")
        rejected = _with_reasons(counts.get("rejected", 0), counts.get("rejected_by", {}))
        cells = [name, f"{counts.get('share')}%", asked, counts.get("drafted"), rejected, counts.get("kept")]
        lines.append("| " + " | ".join(str(cell) for cell in cells) + " |")
    return "\n".join(lines)


def _free_checks(funnel: Mapping[str, Any]) -> str:
    checks = funnel.get("checks_rejected", {})
    return _with_reasons(sum(checks.values()), checks)


def _profile(summary: Mapping[str, Any]) -> str:
    """The test set's profile (`qagen profile RUN` prints the same tables)."""
    from qagen.generation.profile_report import profile_tables

    return (
        "## Profile\n\nWhat the set holds: question types, how much of the corpus it covers, how easy its "
        "questions are for\nretrieval (the share of a question's content words found in its chunk; the rank of "
        "its chunk when the\nquestion is a BM25 query over the corpus), lengths, each critic's scores and the "
        f"duplicates removed.\n\n{profile_tables(summary['profile'])}"
    )


def _kept_quality(summary: Mapping[str, Any]) -> str:
    """The estimated share of the kept questions a reviewer keeps, with how it was estimated."""
    from qagen.generation.kept_quality import certified_of, certified_sentence, kept_quality_of, kept_quality_sentence

    quality = kept_quality_of(summary)
    said = kept_quality_sentence(quality)
    heading = f"## Share of good questions\n\n{said[0].upper()}{said[1:]}"
    if (certified := certified_of(summary)) is not None:
        said = certified_sentence(certified)
        heading += (
            f"\n\n{said[0].upper()}{said[1:]} The threshold is the lowest whose one-sided Clopper-Pearson bound "
            "on the share\nof labelled questions at or above it that a reviewer does not keep is at most 1 - "
            "precision, tested from\nthe highest down and stopping at the first that fails (fixed-sequence "
            "testing, Learn-then-Test)."
        )
        if summary.get("target") and certified.status == "certified":
            heading += (
                " The build drafted in rounds until its target passed this threshold: the drafts of later rounds "
                "are\ndrawn from the same sampling order and vetted by the same checks as the labelled ones, and "
                "the\ncertificate covers them as draws of that same process."
            )
    if quality.status == "not_estimated":
        return heading
    method = (
        "People labelled a uniform random sample of the kept questions, deciding for each whether they would "
        "keep it\nin the test set. The interval is the Wilson score interval "
        f"({quality.confidence:.0%}) of a binomial\nshare on those decisions; the labels count in the sample's "
        "order up to its first question not labelled, and a\nquestion several people labelled counts once, by "
        "their majority (a tie as not kept)."
    )
    return f"{heading}\n\n{method}"


def _models(summary: Mapping[str, Any]) -> str:
    models = summary.get("models", {})
    settings = summary.get("settings", {})
    lines = ["## Models", ""]
    own_servers = models.get("own_servers", [])
    for role, label in (("generator", "Generator (drafts)"), ("critic", "Critics (ratings)")):
        options = settings.get(role, {})
        extra = [
            f"{key} {options[key]}" for key in ("temperature", "max_output_tokens") if options.get(key) is not None
        ]
        if role in own_servers:
            extra.insert(0, "the name asked of a server of the builder's own, which answers with its own model")
        lines.append(f"- {label}: `{models.get(role)}`" + (f" ({', '.join(extra)})" if extra else ""))
    for stage, numbers in summary.get("usage", {}).items():
        cached = numbers.get("cached_input_tokens") or 0  # a summary written before it was counted has none
        lines.append(
            f"- {stage}: {numbers.get('calls')} calls, {numbers.get('input_tokens')} input{cached_note(cached)} "
            f"and {numbers.get('output_tokens')} output tokens"
        )
    if own_servers or any(settings.get(role, {}).get("base_url") for role in ("generator", "critic")):
        lines += ["", "The models were served by an OpenAI-compatible server whose address is not published."]
    return "\n".join(lines)


def _settings(summary: Mapping[str, Any]) -> str:
    settings = summary.get("settings", {})
    chunking = settings.get("chunking", {})
    unit = chunking.get("length_unit", "characters")
    if unit == "tokens":
        unit = f"tokens ({chunking.get('encoding')})"
    sample = settings.get("n_generations")
    target = summary.get("target")
    if target:
        sampling = f"{target.get('drafts')} chunks, spread across documents, for {target.get('target')} questions"
    else:
        sampling = "every chunk" if sample is None else f"{sample} chunks, spread across documents"
    thresholds = summary.get("thresholds", {})
    checks: Mapping[str, Any] = summary.get("checks") or {}
    reads_audience = any(check.get("reads_audience") for check in checks.values()) if checks else True
    cuts = {name: check["cut"] for name, check in checks.items() if check.get("kind") != "rating"}
    rows = [
        ("chunking", f"{chunking.get('chunk_size')} {unit}, overlap {chunking.get('chunk_overlap')}"),
        ("sampling", sampling),
        ("seed", settings.get("seed")),
        *(
            [
                (
                    "thresholds (keep when every 1-5 rating is at least)",
                    ", ".join(f"{k} {v}" for k, v in thresholds.items()),
                )
            ]
            if thresholds
            else []
        ),
        *(
            [("cuts (yes/no: P(yes) at least; reader: agreement)", ", ".join(f"{k} {v:g}" for k, v in cuts.items()))]
            if cuts
            else []
        ),
        ("near-duplicate threshold (question word-set Jaccard)", settings.get("dedup_threshold")),
        *([("relevance audience", settings.get("audience"))] if reads_audience else []),
        ("all critics asked even after a rejection", "yes" if settings.get("all_critics") else "no"),
    ]
    if "multi_hop" in settings.get("question_types", {}):
        embeddings = settings.get("pair_embeddings")
        by_meaning = f", the closest in meaning by `{embeddings}`" if embeddings else ""
        rows.append(("multi-hop passages paired by", f"rare shared terms{by_meaning}"))
    table = "\n".join(f"| {label} | {value} |" for label, value in rows)
    return f"## Settings\n\n| setting | value |\n|---|---|\n{table}"


def _prompts(prompts: list[PromptFile]) -> str:
    lines = ["## Prompts", "", "| prompt | sha256 (first 12) | text |", "|---|---|---|"]
    for prompt in prompts:
        text = (
            f"[{prompt.path_in_repo}]({prompt.path_in_repo})"
            if prompt.path_in_repo
            else "not published: the installed prompt differs from the one this run used"
        )
        lines.append(f"| `{prompt.name}` | `{prompt.hash}` | {text} |")
    return "\n".join(lines)


def _usage(content: CardContent) -> str:
    revision = f', revision="{content.revision}"' if content.revision else ""
    repo = content.repo_id
    return f"""## Use

```python
from datasets import load_dataset

testset = load_dataset("{repo}", split="train"{revision})
candidates = load_dataset("{repo}", "candidates", split="train"{revision})
```

For a private repo, log in first (`hf auth login`) or pass `token=...`.

Evaluate a RAG system on it (here qagen's BM25 baseline over the same documents; `--rag`,
`--endpoint` or `--answers` plug in your own system):

```bash
qagen evaluate {repo} --baseline bm25 --corpus PATH --out eval
```"""


def _provenance(summary: Mapping[str, Any], languages: list[str]) -> str:
    built = summary.get("qagen_version", "unknown")
    language = (
        ", ".join(languages)
        if languages
        else "not stated (no language was clear enough from the questions and contexts)"
    )
    return f"""## Provenance

- Built with qagen {built}, published with qagen {__version__}.
- The run's full summary (funnel, models, settings, token usage) is in [`{SUMMARY_IN_REPO}`]({SUMMARY_IN_REPO});
  the LLM server address and the corpus location are not published.
- Language: {language}. It is detected from the kept questions and contexts by a function-word and
  script count, and left out when unclear.
- The questions and answers are machine-generated and machine-filtered: review them before relying
  on the set; the `candidates` config shows every filtering decision."""
