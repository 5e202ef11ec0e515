"""The agreement report as people read it: a table per criterion (or judge), the reviewers'
agreement with each other, and the recommendations; and the short table the dataset card shows."""

from __future__ import annotations

from pathlib import Path

from qagen.review.agreement import KEEP, AgreementReport, Measure, measure_agreement


def _number(value: float | None) -> str:
    return "-" if value is None else f"{value:.2f}"


def _interval(measure: Measure) -> str:
    if measure.kappa_low is None or measure.kappa_high is None:
        return "-"
    return f"[{measure.kappa_low:.2f}, {measure.kappa_high:.2f}]"


def _errors(kind: str) -> tuple[str, str]:
    """The names of the two errors: a machine's yes the person says no to, and the other way round."""
    return ("false keeps", "false rejects") if kind == "draft" else ("false correct", "false wrong")


def agreement_table(report: AgreementReport) -> str:
    """The whole report, as the terminal shows it."""
    false_yes, false_no = _errors(report.kind)
    machine = "critics" if report.kind == "draft" else "judges"
    reviewers = len(report.reviewers)
    lines = [
        f"agreement of the {machine} with {reviewers} reviewer{'s' if reviewers != 1 else ''} "
        f"({report.labels} labels) in {report.directory}",
        "",
    ]
    if report.elsewhere:
        lines[-1:] = [f"({_labels(report.elsewhere)} of items {report.directory} no longer has left out)", ""]
    header = ["", "labels", "agree", "kappa", "95% interval", false_yes, false_no, "unscored"]
    if report.kind == "draft":
        header += ["threshold", "best"]
    rows = [header]
    for name, measure in report.measures.items():
        row = [
            name,
            str(measure.n),
            _number(measure.agreement),
            _number(measure.kappa),
            _interval(measure),
            str(measure.confusion["false_pass"]),
            str(measure.confusion["false_fail"]),
            str(measure.unscored),
        ]
        if report.kind == "draft":
            fit = measure.threshold
            row += [str(fit.current), str(fit.best)] if fit is not None else ["", ""]
        rows.append(row)
    widths = [max(len(row[column]) for row in rows) for column in range(len(header))]
    for row in rows:
        cells = [row[0].ljust(widths[0])] + [cell.rjust(width) for cell, width in zip(row[1:], widths[1:], strict=True)]
        lines.append("  " + "  ".join(cells).rstrip())
    between = [
        f"  {name} {'/'.join(pair.reviewers)}: kappa {_number(pair.kappa)}, agree {_number(pair.agreement)} "
        f"({pair.n} items)"
        for name, measure in report.measures.items()
        for pair in measure.inter_reviewer
    ]
    if between:
        lines += ["", "between reviewers:", *between]
    if report.kind == "draft":
        lines.append("")
        withheld = [
            f"{name}: no threshold recommended: {measure.threshold.withheld}"
            for name, measure in report.measures.items()
            if measure.threshold is not None and measure.threshold.withheld is not None
        ]
        unmeasurable = [f"{name}: {m.unmeasurable}" for name, m in report.measures.items() if m.unmeasurable]
        if report.recommendations:
            lines += [recommendation.sentence for recommendation in report.recommendations]
            if len(report.recommendations) > 1 and report.kept_then is not None:
                lines.append(f"all of them together keep {report.kept_then} questions (now {report.kept_now})")
        elif unmeasurable and len(unmeasurable) == len(report.measures):
            lines.append(
                "these labels cannot measure the checks: each decided every labelled draft alike; label the "
                f"stratified review sample (`qagen review {report.directory}`) to measure them"
            )
        elif not withheld:
            lines.append("the run's cuts and thresholds match your reviewers at least as well as any other")
        lines += withheld
        lines += [line for line in unmeasurable if line not in withheld]
        if report.drawn:
            lines.append(f"labels by how their drafts were drawn: {_drawn_words(report.drawn)}")
    return "\n".join(lines)


def card_table(report: AgreementReport) -> str:
    """Counts and kappas only (never a label's text or note), as a markdown table for the card."""
    machine = "Critic" if report.kind == "draft" else "Judge"
    false_yes, false_no = _errors(report.kind)
    lines = [
        f"| {machine} | Labels | Raw agreement | Cohen's kappa (95% interval) | {false_yes.capitalize()} | "
        f"{false_no.capitalize()} |",
        "|---|---:|---:|---:|---:|---:|",
    ]
    for name, measure in report.measures.items():
        shown = "keep decision" if name == KEEP else name
        interval = _interval(measure)
        kappa = _number(measure.kappa) + (f" {interval}" if interval != "-" else "")
        lines.append(
            f"| {shown} | {measure.n} | {_number(measure.agreement)} | {kappa} | {measure.confusion['false_pass']} | "
            f"{measure.confusion['false_fail']} |"
        )
    return "\n".join(lines)


def card_section(directory: Path) -> str | None:
    """The dataset card's section on the checks' agreement with the run's reviewers; None when the
    run has no draft labels, or none that can measure a check (labels of kept questions alone feed the
    share-of-good estimate, said in its own section). Counts and kappas only: no label, note or name."""
    from qagen.review.labels import LABELS_FILE, LabelStore

    if not (directory / LABELS_FILE).is_file() or not LabelStore(directory).of_kind("draft"):
        return None
    report = measure_agreement(directory, thresholds=False)
    measured = {name: measure for name, measure in report.measures.items() if measure.unmeasurable is None}
    if not measured:
        return None
    reviewers = len(report.reviewers)
    left_out = [name for name in report.measures if name not in measured]
    unmeasured = (
        f" Not measured by these labels, which it decided all alike: {', '.join(left_out)}." if left_out else ""
    )
    return (
        "## Agreement with human reviewers\n\n"
        f"{reviewers} reviewer{'s' if reviewers != 1 else ''} labelled {report.labels} drafts "
        f"({_drawn_words(report.drawn)}). How often each check (as the run decided it) and the keep decision agree "
        "with them, with Cohen's kappa (1: perfect, 0: chance) and its 95% bootstrap interval:\n\n"
        f"{card_table(report.model_copy(update={'measures': measured}))}{unmeasured}"
    )


_DRAWN = {
    "stratified": "of the review sample, stratified over kept drafts and each check's rejections",
    "kept": "of the uniform sample of kept questions",
    "other": "of drafts neither sample holds now",
}


def _drawn_words(drawn: dict[str, int]) -> str:
    return "; ".join(f"{count} {_DRAWN[name]}" for name, count in drawn.items())


def _labels(count: int) -> str:
    return f"{count} label" if count == 1 else f"{count} labels"
