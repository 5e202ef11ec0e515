"""A build's test-set profile (`summary.json`'s `profile`) as Markdown tables, and as a PNG chart.

The same tables are printed by `qagen profile RUN` (with the estimate of the share of good kept
questions) and written into the dataset card.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from qagen.errors import QagenError
from qagen.generation.kept_quality import certified_of, certified_sentence, kept_quality_of, kept_quality_sentence
from qagen.plotting import pyplot
from qagen.runs.rundir import RunDir


def _share(part: int, whole: int) -> str:
    return f"{part}/{whole} ({part / whole:.0%})" if whole else f"{part}/0"


def _number(value: float | None, digits: int = 2) -> str:
    if value is None:
        return "-"
    if not isinstance(value, float):
        return str(value)
    text = f"{value:.{digits}f}"
    return text.rstrip("0").rstrip(".") if "." in text else text


def _spread(distribution: Mapping[str, Any], digits: int = 2) -> str:
    """`median (p25-p75), max` of a `Distribution` dump."""
    if not distribution.get("count"):
        return "-"
    median, p25, p75 = (_number(distribution[key], digits) for key in ("median", "p25", "p75"))
    return f"{median} ({p25}-{p75}), max {_number(distribution['maximum'], digits)}"


def profile_tables(profile: Mapping[str, Any]) -> str:
    """The profile as Markdown tables (see the module docstring)."""
    coverage, easiness, duplicates = profile["coverage"], profile["easiness"], profile["duplicates"]
    kept = sum(profile["question_types"].values())
    parts: list[str] = []
    types = "\n".join(f"| {name} | {count} |" for name, count in profile["question_types"].items()) or "| - | 0 |"
    parts.append(f"| question type | kept |\n|---|---|\n{types}")
    # One row per bin, said in words: "documents with 2 kept questions | 3" reads without a legend.
    per_document = "".join(
        f"\n| documents with {name} kept question{'' if name == '1' else 's'} | {count} |"
        for name, count in coverage["kept_per_document"].items()
    )
    parts.append(
        "| coverage | count |\n|---|---|\n"
        f"| documents with a kept question | {_share(coverage['documents_with_kept'], coverage['documents'])} |\n"
        f"| documents sampled | {_share(coverage['documents_sampled'], coverage['documents'])} |\n"
        f"| chunks with a kept question | {_share(coverage['chunks_with_kept'], coverage['chunks'])} |\n"
        f"| chunks sampled | {_share(coverage['chunks_sampled'], coverage['chunks'])} |" + per_document
    )
    ranked = easiness["bm25_rank"]["count"]
    first, top5 = easiness["ranked_first_share"], easiness["ranked_top5_share"]
    bins = ", ".join(f"{name}: {count}" for name, count in easiness["copied_share_bins"].items())
    parts.append(
        "| easiness (kept questions) | value |\n|---|---|\n"
        f"| content words found in the chunk: median (p25-p75) | {_spread(easiness['copied_share'])} |\n"
        f"| questions by that share | {bins} |\n"
        f"| own chunk ranked first by BM25 | {_share(easiness['ranked_first'], ranked)} |\n"
        f"| own chunk in BM25's top 5 | {'-' if top5 is None else f'{top5:.0%}'} |\n"
        f"| BM25 rank of the own chunk: median (p25-p75) | {_spread(easiness['bm25_rank'], 1)} |"
        + ("" if first is not None else "\n| (no kept question ranked) | |")
    )
    parts.append(
        "| length in characters (kept) | median (p25-p75), max |\n|---|---|\n"
        f"| question | {_spread(profile['question_chars'], 0)} |\n"
        f"| answer | {_spread(profile['answer_chars'], 0)} |"
    )
    checks = "\n".join(_check_line(name, check) for name, check in profile.get("checks_measured", {}).items())
    if checks:
        parts.append(
            "| check (every draft decided) | what was held to the cut: drafts by bin | cut | passed | rejected |\n"
            f"|---|---|---|---|---|\n{checks}"
        )
    model = duplicates["semantic_model"]
    semantic = (
        f"| by meaning ({model}) | {duplicates['semantic']} |"
        if model
        else f"| by meaning | not checked: {duplicates['lexical_only_because']} |"
    )
    parts.append(
        "| duplicates removed | count |\n|---|---|\n"
        f"| same words (lexical rule) | {duplicates['lexical']} |\n{semantic}"
    )
    checks = "\n".join(f"| {reason} | {count} |" for reason, count in profile["checks"].items()) or "| (none) | 0 |"
    parts.append(f"| rejected by a free check, before any critic | drafts |\n|---|---|\n{checks}")
    return f"{kept} kept question{'' if kept == 1 else 's'}.\n\n" + "\n\n".join(parts)


PROFILE_FILE = "profile.md"
"""Where `qagen profile RUN` writes the profile in the run directory."""


def build_summary(run: Path) -> Mapping[str, Any] | None:
    """The build's `summary.json` when `run` is a build's run directory; None for anything else
    (an evaluation directory has a summary too, without a funnel). A build's run directory (it has
    `run.json`) whose summary is missing, unreadable or no build's is a `QagenError` saying how to
    write it again: taken for an evaluation, it would be sent to `qagen evaluate`."""
    summary_file = run / "summary.json"
    try:
        summary = json.loads(summary_file.read_text(encoding="utf-8"))
    except FileNotFoundError:
        _refuse_a_build_run(run, "is missing (the build has not got that far, or the file was removed)")
        return None
    except (OSError, ValueError) as exc:
        _refuse_a_build_run(run, f"cannot be read ({exc})")
        return None
    if isinstance(summary, dict) and "funnel" in summary:
        return summary
    _refuse_a_build_run(run, "is no build's summary (it has no funnel)")
    return None


def _refuse_a_build_run(run: Path, problem: str) -> None:
    """For a build's run directory, whose `summary.json` has `problem`: the way to a new summary."""
    if not RunDir(run).exists():
        return
    raise QagenError(
        f"{run} is a build's run directory, but its summary.json {problem}. Write it again from the run's "
        f"records with `qagen stage filter {run}` (no LLM call), or re-run the build's command: it resumes where it "
        "stopped and pays for no call twice."
    )


def write_profile(run: Path, summary: Mapping[str, Any]) -> tuple[str, Path]:
    """The profile's tables and the estimate of the share of good kept questions, also written to the
    run's `profile.md`."""
    estimate = kept_quality_sentence(kept_quality_of(summary))
    if (certified := certified_of(summary)) is not None:  # beside the estimate: what the labels certify
        estimate += f"\n\n{certified_sentence(certified)}"
    tables = f"{profile_tables(require_profile(summary, run))}\n\n{estimate[0].upper()}{estimate[1:]}"
    target = run / PROFILE_FILE
    target.write_text(f"# Test-set profile of {run.resolve().name}\n\n{tables}\n", encoding="utf-8")
    return tables, target


def require_profile(summary: Mapping[str, Any], where: Path) -> Mapping[str, Any]:
    """The summary's profile, or a clear error for a summary written before profiles existed."""
    profile = summary.get("profile")
    if not isinstance(profile, Mapping):
        raise QagenError(
            f"{where} has no test-set profile (made by an older qagen): run `qagen stage filter` on it first."
        )
    return profile


def profile_chart(profile: Mapping[str, Any], path: Path, title: str) -> Path:
    """Bar charts of the profile's distributions in one PNG: easiness (copied share, BM25 rank
    bins), coverage (documents by their number of kept questions), and each critic's scores."""
    plt = pyplot()
    figure = profile_figure(profile, title)
    path.parent.mkdir(parents=True, exist_ok=True)
    figure.savefig(path, dpi=110)
    plt.close(figure)
    return path


def profile_figure(profile: Mapping[str, Any], title: str) -> Any:
    """The figure `profile_chart` saves: four bar charts of counts, with whole-number count axes."""
    plt = pyplot()
    from matplotlib.ticker import MaxNLocator

    checks: Mapping[str, Any] = profile.get("checks_measured", {})
    figure, axes = plt.subplots(2, 2, figsize=(11, 7.5))
    easiness, coverage = profile["easiness"], profile["coverage"]
    bins = easiness["copied_share_bins"]
    _bars(axes[0][0], list(bins), list(bins.values()), "content words found in the chunk", "kept questions")
    ranked, first = easiness["bm25_rank"]["count"], easiness["ranked_first"]
    top5 = round((easiness["ranked_top5_share"] or 0) * ranked)
    rank_bins = {"1": first, "2-5": top5 - first, ">5": ranked - top5}
    _bars(axes[0][1], list(rank_bins), list(rank_bins.values()), "BM25 rank of the own chunk", "kept questions")
    per_document = coverage["kept_per_document"]
    _bars(axes[1][0], list(per_document), list(per_document.values()), "kept questions per document", "documents")
    _decisions(axes[1][1], checks)
    for axis in axes.flat:
        # Every chart counts questions, documents or drafts: a tick at 0.5 of them means nothing.
        axis.yaxis.set_major_locator(MaxNLocator(integer=True))
    figure.suptitle(title)
    figure.tight_layout()
    return figure


def _bars(axis: Any, labels: list[str], values: list[int], xlabel: str, ylabel: str) -> None:
    axis.bar(labels, values, color="#4c72b0")
    for x, value in enumerate(values):
        axis.annotate(str(value), (x, value), ha="center", va="bottom", fontsize=8)
    axis.set_xlabel(xlabel)
    axis.set_ylabel(ylabel)


_MEASURED_WORDS = {"rating": "rating", "yes_no": "P(yes)", "reader": "agreement", "lone_reader": "agreement"}


def _check_line(name: str, check: Mapping[str, Any]) -> str:
    """One check's row: its measurements by bin (`CheckMeasured.bins`), the cut they were held to, and
    what it decided."""
    measured = _MEASURED_WORDS.get(check["kind"], "measurement")
    bins = ", ".join(f"{label} x{count}" for label, count in check["bins"].items()) or "none"
    relation = "<" if check["kind"] == "lone_reader" else ">="
    cut = f"{measured} {relation} {check['cut']:g}"
    return f"| {name} | {measured}: {bins} | {cut} | {check['passed']} | {check['rejected']} |"


def _decisions(axis: Any, checks: Mapping[str, Any]) -> None:
    """Each check's passed and rejected drafts, side by side: what the cuts decided."""
    names = list(checks)
    passed = [checks[name]["passed"] for name in names]
    rejected = [checks[name]["rejected"] for name in names]
    positions = list(range(len(names)))
    axis.bar([x - 0.2 for x in positions], passed, width=0.4, label="passed", color="#4c72b0")
    axis.bar([x + 0.2 for x in positions], rejected, width=0.4, label="rejected", color="#c44e52")
    axis.set_xticks(positions)
    axis.set_xticklabels(names)
    axis.set_xlabel("check (its measurement held to its cut)")
    axis.set_ylabel("drafts decided")
    if names:
        axis.legend(fontsize=8)
