"""Turn drafts and critiques into candidate rows with a status and a reason, in sampling order."""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from typing import Any

from qagen.config import CRITIC_ORDER, BuildConfig
from qagen.generation.critique import critique_id
from qagen.generation.dedup import NearDuplicateFilter
from qagen.generation.draft import draft_id
from qagen.llm.prompts import Prompt
from qagen.records import CRITERIA, Chunk, Criterion, Critique, Draft

DATASET_COLUMNS = [
    # The cookbook evaluation set's ten columns, so existing notebooks load the set unchanged.
    "context", "question", "answer", "source_doc",
    "groundedness_score", "groundedness_eval", "relevance_score", "relevance_eval",
    "standalone_score", "standalone_eval",
    # Provenance.
    "id", "chunk_id", "start_index", "end_index", "generator_model", "critic_model",
    "qa_prompt_hash", "groundedness_prompt_hash", "relevance_prompt_hash", "standalone_prompt_hash",
]  # fmt: skip
CANDIDATE_COLUMNS = [
    *DATASET_COLUMNS, "status", "reason",
    "generation_raw", "groundedness_raw", "relevance_raw", "standalone_raw",
]  # fmt: skip


@dataclass
class Funnel:
    """Every count from sampled chunks to kept questions."""

    sampled: int = 0
    drafted: int = 0
    generation_failed: Counter[str] = field(default_factory=Counter)
    critique_failed: Counter[str] = field(default_factory=Counter)
    rejected: int = 0
    rejected_by: Counter[str] = field(default_factory=Counter)
    critic_calls_skipped: int = 0
    duplicates: int = 0
    kept: int = 0

    def as_dict(self) -> dict[str, Any]:
        return {
            "sampled": self.sampled,
            "drafted": self.drafted,
            "generation_failed": dict(sorted(self.generation_failed.items())),
            "critique_failed": dict(sorted(self.critique_failed.items())),
            "rejected": self.rejected,
            "rejected_by": {c: self.rejected_by.get(c, 0) for c in CRITERIA},
            "critic_calls_skipped": self.critic_calls_skipped,
            "duplicates": self.duplicates,
            "kept": self.kept,
        }


@dataclass
class Assembly:
    candidates: list[dict[str, Any]]
    kept: list[dict[str, Any]]
    funnel: Funnel


def assemble(
    sample: list[Chunk],
    drafts: dict[str, Draft],
    critiques: dict[str, Critique],
    config: BuildConfig,
    qa_prompt: Prompt,
    critic_prompts: dict[str, Prompt],
) -> Assembly:
    """Candidate rows for every sampled chunk, in sampling order (so "keep the first" is stable)."""
    funnel = Funnel(sampled=len(sample))
    dedup = NearDuplicateFilter(config.dedup_threshold)
    candidates: list[dict[str, Any]] = []
    generator, critic_model = config.generator.spec, config.critic.spec
    for chunk in sample:
        did = draft_id(chunk, qa_prompt, generator)
        draft = drafts.get(did)
        row: dict[str, Any] = {
            "context": chunk.text, "question": None, "answer": None, "source_doc": chunk.source,
            "id": did, "chunk_id": chunk.id, "start_index": chunk.start_index, "end_index": chunk.end_index,
            "generator_model": generator, "critic_model": critic_model, "qa_prompt_hash": qa_prompt.hash,
            "generation_raw": draft.raw if draft else None,
        }  # fmt: skip
        for criterion in CRITERIA:
            row[f"{criterion}_prompt_hash"] = critic_prompts[criterion].hash
            row[f"{criterion}_score"] = row[f"{criterion}_eval"] = row[f"{criterion}_raw"] = None
        candidates.append(row)
        if draft is None:
            row.update(status="failed", reason="generation:not_drafted_yet")
            funnel.generation_failed["not_drafted_yet"] += 1
            continue
        if not draft.ok:
            row.update(status="failed", reason=f"generation:{draft.reason}")
            funnel.generation_failed[draft.reason] += 1
            continue
        funnel.drafted += 1
        row.update(question=draft.question, answer=draft.answer)
        _judge(row, draft, critiques, config, critic_prompts, funnel, dedup)
    kept = [{column: row[column] for column in DATASET_COLUMNS} for row in candidates if row["status"] == "kept"]
    return Assembly(
        candidates=[{c: row[c] for c in CANDIDATE_COLUMNS} for row in candidates],
        kept=kept,
        funnel=funnel,
    )


def _judge(
    row: dict[str, Any],
    draft: Draft,
    critiques: dict[str, Critique],
    config: BuildConfig,
    critic_prompts: dict[str, Prompt],
    funnel: Funnel,
    dedup: NearDuplicateFilter,
) -> None:
    """Set the row's status and reason from its critiques; a known rejection outranks a failure."""
    rejections: list[str] = []
    failures: list[str] = []
    missing: list[Criterion] = []
    for criterion in CRITIC_ORDER:
        cid = critique_id(draft, criterion, critic_prompts[criterion], config.critic.spec, config.audience)
        critique = critiques.get(cid)
        if critique is None:
            missing.append(criterion)
            continue
        row[f"{criterion}_raw"] = critique.raw
        row[f"{criterion}_eval"] = critique.rationale
        if not critique.ok or critique.score is None:
            failures.append(f"critique:{criterion}:{critique.reason}")
            continue
        row[f"{criterion}_score"] = critique.score
        if critique.score < config.threshold(criterion):
            rejections.append(f"{criterion}={critique.score}<{config.threshold(criterion)}")
            funnel.rejected_by[criterion] += 1
    if rejections:
        funnel.rejected += 1
        funnel.critic_calls_skipped += len(missing)
        skipped = f" ({', '.join(missing)} not asked)" if missing else ""
        row.update(status="rejected", reason="; ".join(rejections) + skipped)
        return
    if failures or missing:
        reason = failures[0] if failures else f"critique:{missing[0]}:not_critiqued_yet"
        funnel.critique_failed[reason.split(":", 1)[1]] += 1
        row.update(status="failed", reason=reason)
        return
    earlier = dedup.first_seen(draft.question or "", draft.id)
    if earlier is not None:
        funnel.duplicates += 1
        row.update(status="rejected", reason=f"duplicate_of:{earlier}")
        return
    funnel.kept += 1
    row.update(status="kept", reason="")
