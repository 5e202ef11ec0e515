"""A run directory's drafts as a reviewer's tools see them: every sampled chunk's candidate row, made
from the records with the run's own settings, exactly as `qagen stage filter` makes them (no call)."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from qagen.config import BuildConfig
from qagen.errors import QagenError
from qagen.generation.filter import Assembler
from qagen.generation.ledger import Ledger
from qagen.generation.tasks import BuildTasks
from qagen.generation.vetting import row_decision
from qagen.records import CandidateRow, Criterion
from qagen.runs.rundir import RunDir


@dataclass(frozen=True)
class RunDrafts:
    """The candidate rows of a run, in sampling order, with the settings that decided them."""

    run: RunDir
    config: BuildConfig
    tasks: BuildTasks
    rows: list[CandidateRow]
    _by_id: dict[str, CandidateRow] = field(default_factory=dict, repr=False)

    def __post_init__(self) -> None:
        self._by_id.update((row.id, row) for row in self.rows)

    def get(self, draft_id: str) -> CandidateRow | None:
        return self._by_id.get(draft_id)

    def rejected_by(self, row: CandidateRow) -> list[Criterion]:
        """The criteria whose check rejected the draft (the decision the row shows), in the order they are asked."""
        return [
            criterion
            for criterion in self.asked()
            if (decided := row_decision(row, criterion)) is not None and not decided.passed
        ]

    def missing_scores(self, row: CandidateRow) -> list[Criterion]:
        """The criteria of the row's question type with no decision for a drafted question (never asked,
        or the critic failed)."""
        vetting = {critic.criterion for critic in self.tasks.types[row.question_type].critics}
        return [c for c in self.critics() if c in vetting and row_decision(row, c) is None]

    def critics(self) -> list[Criterion]:
        """The run's critics, in declaration order (`BuildConfig.critic_specs`)."""
        return [spec.name for spec in self.config.critic_specs()]

    def rated(self) -> list[Criterion]:
        """The run's 1-5 critics it asks, in declaration order: those with a minimum score."""
        asked = set(self.asked())
        return [spec.name for spec in self.config.critic_specs() if spec.name in asked and spec.scale == "rating"]

    def asked(self) -> list[Criterion]:
        """The run's critics, in the order they are asked."""
        return [critic.criterion for critic in self.tasks.critics]


def read_run_drafts(run_dir: Path, config: BuildConfig | None = None) -> RunDrafts:
    """Every sampled chunk's candidate row, from the records, with the run's settings (or `config`,
    to see the rows another threshold would give): no file is written and no call made."""
    from qagen.generation.pipeline import load_sample  # the build's module: only when a run is read

    run = RunDir(run_dir)
    run.require()
    if not run.chunking_done():
        raise QagenError(f"{run_dir} has no chunks yet, so there are no drafts to review; run `qagen build` first.")
    config = config or run.stored_config()
    tasks = BuildTasks.for_config(config, run.iter_chunks)
    sample = load_sample(config, run)
    ledger = Ledger.read(run)
    assembler = Assembler(config, tasks, sample)
    try:
        rows = [assembler.candidate(item, ledger.drafts, ledger.critiques) for item in sample]
    finally:
        ledger.close()
    return RunDrafts(run, config, tasks, rows)
