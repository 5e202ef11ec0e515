"""A finished run, read into memory for publishing: summary, prompts, kept rows and candidates.

The run directory is only ever read (not even a `datasets` cache file is written there).
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from qagen.errors import QagenError
from qagen.llm.prompts import prompts_dir
from qagen.publish.card import PROMPTS_IN_REPO, PromptFile
from qagen.publish.language import detect_languages
from qagen.runs.rundir import RunDir

if TYPE_CHECKING:
    from datasets import Dataset

# Language detection reads this many kept rows at most (sampling order, so a spread of documents).
_LANGUAGE_SAMPLE = 2000


@dataclass(frozen=True)
class LocalRun:
    """What a push publishes of one run."""

    summary: dict[str, Any]
    prompt_hashes: dict[str, str]
    kept: Dataset
    candidates: Dataset
    agreement: str | None = None
    """The card's section on the critics' agreement with the run's reviewers (None: no labels)."""

    def prompt_files(self) -> tuple[list[PromptFile], dict[str, bytes]]:
        """The prompts the run used, with the text of each when its file (the run's own prompt folder's,
        or the bundled one) still has the run's hash."""
        import hashlib

        prompts: list[PromptFile] = []
        files: dict[str, bytes] = {}
        own = self.summary.get("settings", {}).get("prompts_dir")
        for name, short in self.summary.get("prompts", {}).items():
            full = self.prompt_hashes.get(name, short)
            path = Path(own) / f"{name}.txt" if own else prompts_dir() / f"{name}.txt"
            if not path.is_file():
                path = prompts_dir() / f"{name}.txt"
            data = path.read_bytes() if path.is_file() else b""
            if data and hashlib.sha256(data).hexdigest().startswith(full):
                files[f"{PROMPTS_IN_REPO}/{name}.txt"] = data
                prompts.append(PromptFile(name, short, f"{PROMPTS_IN_REPO}/{name}.txt"))
            else:
                prompts.append(PromptFile(name, short, None))
        return prompts, files


def load_run(run_dir: Path) -> LocalRun:
    """The run's outputs, read into memory (so nothing, not even a cache file, is written there)."""
    from datasets import load_from_disk

    run = RunDir(run_dir)
    run.require()
    if not run.summary_file.exists():
        raise QagenError(f"{run_dir} has no summary.json yet; finish the run with `qagen build` before pushing.")
    try:
        summary = json.loads(run.summary_file.read_text(encoding="utf-8"))
        fingerprint = json.loads(run.run_file.read_text(encoding="utf-8")).get("fingerprint", {})
    except (OSError, ValueError) as exc:
        raise QagenError(f"Cannot read {run.summary_file}: {exc}; run `qagen stage filter {run_dir}` again.") from exc
    if summary.get("funnel", {}).get("kept") == 0:
        # Also because `datasets` cannot load back the empty `dataset/` that such a run holds.
        raise QagenError(
            f"{run_dir} kept no questions, so there is nothing to publish; build it again with a lower "
            "`min_score` (the replies it holds are reused), or with a larger `n_generations`.",
            settings=("min_score", "n_generations"),
        )
    try:
        kept = load_from_disk(str(run.dataset_dir), keep_in_memory=True)
        candidates = load_from_disk(str(run.candidates_dir), keep_in_memory=True)
    except (OSError, ValueError) as exc:
        raise QagenError(
            f"Cannot read the outputs of {run_dir}: {exc}; run `qagen stage filter {run_dir}` again."
        ) from exc
    hashes = {name: str(digest) for name, digest in (fingerprint.get("prompts") or {}).items()}
    from qagen.review.agreement_text import card_section  # only a push reads the labels
    from qagen.review.estimate import estimate_kept_quality

    # As the labels say now: summary.json holds the estimate as of the last label or build.
    summary["kept_quality"] = estimate_kept_quality(run_dir).model_dump(mode="json")
    return LocalRun(summary, hashes, kept, candidates, card_section(run_dir))


def languages(dataset: Dataset) -> list[str]:
    """The languages of the questions and contexts, for the card (the first `_LANGUAGE_SAMPLE` rows)."""
    rows = dataset.select_columns(["question", "context"])[:_LANGUAGE_SAMPLE]
    texts = (
        f"{question or ''}\n{context or ''}"
        for question, context in zip(rows["question"], rows["context"], strict=True)
    )
    return detect_languages(texts)
