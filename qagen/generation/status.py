"""What `qagen status` says of a build besides its records: the drafts as the build's table counts
them (`summary.json`), and with a target, the round it is at (`rounds.json`).

The records count calls (a multi-hop draft's parts are records of their own, a draft outside the
sample is one too), so their failures differ from the table's; these lines are the table's own
numbers, said with the date of the summary they come from when records came after it."""

from __future__ import annotations

from pydantic import ValidationError

from qagen.generation.target import read_round
from qagen.records import BuildSummary
from qagen.runs.rundir import RunDir
from qagen.words import counted


def describe_build(run: RunDir) -> list[str]:
    """Lines on the build's drafts and target, for `qagen status` (none: the run never drafted)."""
    lines: list[str] = []
    summary = _summary(run, lines)
    recorded = read_round(run)
    if summary is not None:
        funnel = summary.funnel
        generation, critique = sum(funnel.generation_failed.values()), sum(funnel.critique_failed.values())
        undecided = sum(funnel.undecided.values())
        lines.append(
            f"  drafts, as the build's table counts them: {funnel.sampled:,} sampled, {funnel.drafted:,} drafted, "
            f"{generation:,} generation failed, {critique:,} critique failed, {undecided:,} undecided, "
            f"{funnel.kept:,} kept"
        )
        target = summary.target
        if target is not None:
            lines.append(
                f"  target: kept {target.kept:,} of {target.target:,} ({counted(target.drafts, 'draft')} of at most "
                f"{target.max_drafts:,}, in {counted(target.rounds, 'round')}; parts: "
                + ", ".join(f"{name} {n}" for name, n in target.by_type.items())
                + ")"
            )
        if run.summary_file.stat().st_mtime < _last_record(run):
            lines.append(
                "  (summary.json was written before the last records: run the build again to count them and finish)"
            )
    if recorded is not None and (
        summary is None or summary.target is None or summary.target.rounds < recorded.plan.round
    ):
        asked = sum(recorded.plan.drafts.values())
        lines.append(
            f"  round {recorded.plan.round} of a build to a target under way: {counted(asked, 'draft')} asked "
            "(run the build again to finish it)"
        )
    return lines


def _summary(run: RunDir, lines: list[str]) -> BuildSummary | None:
    """The run's summary; None when there is none yet, or it cannot be read (said in `lines`)."""
    try:
        return BuildSummary.model_validate_json(run.summary_file.read_bytes())
    except FileNotFoundError:
        return None
    except (OSError, ValidationError) as exc:
        lines.append(f"  {run.summary_file} cannot be read ({type(exc).__name__}); the build writes it again")
        return None


def _last_record(run: RunDir) -> float:
    """When a record was last appended (0: none yet)."""
    times = [log.path.stat().st_mtime for log in (run.drafts, run.critiques) if log.path.exists()]
    return max(times, default=0.0)
