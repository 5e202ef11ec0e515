"""The run directory: where every stage's records live, and the fingerprint that guards resumes."""

from __future__ import annotations

import json
import os
from collections.abc import Collection, Iterator
from pathlib import Path
from typing import Any

from qagen import __version__
from qagen.config import BUILD_ROLES, BuildConfig, BuildRole, describe_differences, keep_decided
from qagen.errors import QagenError, RunMismatchError
from qagen.records import Chunk, Critique, Draft
from qagen.runs.store import Dependents, RecordLog, write_json_atomic, writing


class RunDir:
    """Paths and records of one run directory.

    Layout: `run.json` (settings + fingerprint), `chunks.jsonl` + `chunking.json` (written last, so
    its presence means chunking finished), `drafts.jsonl`, `critiques.jsonl` (append-only, keyed by
    content-hash ids), and the outputs `dataset/`, `candidates/`, `summary.json`.
    """

    def __init__(self, root: Path) -> None:
        self.root = root
        self.run_file = root / "run.json"
        self.chunks_file = root / "chunks.jsonl"
        self.chunking_file = root / "chunking.json"
        self.critiques = RecordLog(root / "critiques.jsonl", Critique)
        self.drafts = RecordLog(root / "drafts.jsonl", Draft, dependents=Dependents(self.critiques.path, "draft_id"))
        self.dataset_dir = root / "dataset"
        self.candidates_dir = root / "candidates"
        self.summary_file = root / "summary.json"

    def exists(self) -> bool:
        return self.run_file.exists()

    def require(self) -> None:
        if not self.exists():
            raise QagenError(
                f"{self.root} is not a qagen run directory (no run.json); start with `qagen build` or `qagen chunk`."
            )

    def stored_config(self) -> BuildConfig:
        self.require()
        return BuildConfig.model_validate(self._read_run()["config"])

    def _read_run(self) -> dict[str, Any]:
        try:
            data: dict[str, Any] = json.loads(self.run_file.read_text(encoding="utf-8"))
        except (OSError, ValueError) as exc:
            raise QagenError(f"Cannot read {self.run_file}: {exc}.") from exc
        return data

    def llm_fixed(self) -> bool:
        """Whether an LLM stage has run here (so the models and prompts are part of the run)."""
        return self.exists() and self._read_run().get("fingerprint", {}).get("generator_model") is not None

    def fixed_roles(self) -> frozenset[BuildRole]:
        """The roles whose models and prompts are part of the run: those an LLM stage has called."""
        if not self.exists():
            return frozenset()
        fingerprint = self._read_run().get("fingerprint", {})
        return frozenset(role for role in BUILD_ROLES if fingerprint.get(f"{role}_model") is not None)

    def open(
        self, config: BuildConfig, prompt_hashes: dict[str, str | None], *, llm: bool | Collection[BuildRole] = True
    ) -> None:
        """Start a new run here, or check that `config` may resume the one that is here."""
        wanted = json.loads(json.dumps(config.fingerprint(prompt_hashes, llm=llm)))
        if self.exists():
            stored = self._read_run().get("fingerprint", {})
            differences = describe_differences(stored, wanted)
            if differences:
                raise RunMismatchError(
                    f"{self.root} holds a run made with other settings, and mixing them would mix "
                    "outputs of different models, prompts or chunks:\n  - "
                    + "\n  - ".join(differences)
                    + "\nUse a new `out` directory, or repeat the run's own settings to resume it.",
                    settings=("out",),
                )
            # Keep what was decided before (e.g. the models, when `qagen filter` runs without them).
            wanted = keep_decided(wanted, stored)
        elif self.root.exists() and any(self.root.iterdir()):
            raise QagenError(
                f"{self.root} exists and is not a qagen run directory; choose another `out`.", settings=("out",)
            )
        self.root.mkdir(parents=True, exist_ok=True)
        write_json_atomic(
            self.run_file,
            {
                "qagen_version": __version__,
                "fingerprint": wanted,
                "config": config.model_dump(mode="json"),
            },
        )

    # --- chunks -----------------------------------------------------------------------------
    def chunking_done(self) -> bool:
        return self.chunking_file.exists() and self.chunks_file.exists()

    def chunking_report(self) -> dict[str, Any]:
        data: dict[str, Any] = json.loads(self.chunking_file.read_text(encoding="utf-8"))
        return data

    def iter_chunks(self) -> Iterator[Chunk]:
        with self.chunks_file.open("r", encoding="utf-8") as handle:
            for line in handle:
                yield Chunk.model_validate_json(line)

    def write_chunks(self, chunks: Iterator[Chunk]) -> int:
        """Stream chunks to `chunks.jsonl` through a temporary file (a crash leaves no half file)."""
        temporary = self.root / ".chunks.jsonl.tmp"
        count = 0
        with writing(self.chunks_file):
            self.root.mkdir(parents=True, exist_ok=True)
            with temporary.open("w", encoding="utf-8") as handle:
                for chunk in chunks:
                    handle.write(chunk.model_dump_json() + "\n")
                    count += 1
            os.replace(temporary, self.chunks_file)
        return count
