"""One review session: the items of a directory, who labels them, and the labels given so far.

This is what the review page's JSON API answers, without the HTTP (see `qagen.review.server`):
the state (how far a reviewer has got, and where to resume), an item (its verdicts only once this
reviewer has labelled it), and saving a label (one appended line of `labels.jsonl`, at once).
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from qagen.critics import CRITICS
from qagen.errors import QagenError
from qagen.review.estimate import refresh_kept_quality
from qagen.review.eval_answers import answer_sample, is_eval_dir
from qagen.review.items import ReviewItem, answer_items, draft_items
from qagen.review.kept_sample import kept_sample
from qagen.review.labels import MAX_NOTE_CHARS, Label, LabelKey, LabelStore
from qagen.review.sample import SampleKind, review_sample
from qagen.review.skipped import ask_skipped_critics
from qagen.runs.rundir import RunDir

MAX_REVIEWER_CHARS = 100


class LabelRejected(QagenError):
    """A label the page sent cannot be saved (unknown item, nothing labelled, a bad value)."""


def open_items(
    directory: Path,
    size: int,
    seed: int,
    *,
    allow_calls: bool = True,
    say: Callable[[str], None] | None = None,
    sample: SampleKind = "drafts",
) -> tuple[list[ReviewItem], dict[str, int]]:
    """The items to review in `directory` (a run directory's drafts or an evaluation directory's
    answers), in review order, and the run's critic thresholds (none for answers). `sample`: which
    sample of a run's drafts (`SampleKind`).

    For the drafts' sample, the critics the early stop skipped are asked for the sampled drafts first,
    so every item shows every critic's verdict once answered (saying how many calls before the first,
    or refusing with `allow_calls=False`: `qagen.review.skipped`). Kept questions have every verdict.
    """
    if is_eval_dir(directory) and sample == "drafts":
        return answer_items(directory, answer_sample(directory, size, seed).ids), {}
    if sample == "kept":
        ids = kept_sample(directory, size, seed).ids  # first: it says what an evaluation directory lacks
        return draft_items(directory, ids), _thresholds(directory)
    drafts = review_sample(directory, size=size, seed=seed)
    ask_skipped_critics(directory, drafts.ids, allow_calls=allow_calls, say=say)
    return draft_items(directory, drafts.ids), _thresholds(directory)


def _thresholds(run_dir: Path) -> dict[str, int]:
    """The run's critic thresholds, by critic."""
    run = RunDir(run_dir)
    run.require()
    return {str(name): score for name, score in run.stored_config().thresholds().items()}


class ReviewSession:
    """The items to label in review order, the labels of `directory`, and the default reviewer."""

    def __init__(
        self,
        directory: Path,
        items: list[ReviewItem],
        *,
        reviewer: str,
        thresholds: Mapping[str, int] | None = None,
    ) -> None:
        self.directory = directory
        self.items = items
        self._ids = {item.id for item in items}
        self.kind = items[0].kind if items else "draft"
        self.reviewer = _reviewer(reviewer)
        self.thresholds = dict(thresholds or {})
        # The page lists the run's critics as the registry declares them (a run's own ones from their files).
        registry = CRITICS.with_own([name for name in self.thresholds if name not in CRITICS])
        self.critics = [{"name": spec.name, "help": spec.help} for spec in map(registry.get, self.thresholds)]
        self.saved = 0
        """Labels saved in this session (the command's closing count)."""
        self._store = LabelStore(directory)
        self.store_path = self._store.path
        self._lock = threading.Lock()  # the server answers each request on its own thread
        self._labels: dict[LabelKey, Label] = self._store.read()

    def close(self) -> None:
        with self._lock:
            self._store.close()

    # --- what the page asks for ------------------------------------------------------------
    def state(self, reviewer: str | None) -> dict[str, Any]:
        """The session as the page starts it: the reviewer, progress, and the item to resume at."""
        who = _reviewer(reviewer or self.reviewer)
        labelled = self._labelled(who)
        position = next((index for index, item in enumerate(self.items) if item.id not in labelled), None)
        return {
            "kind": self.kind,
            "directory": self.directory.name or str(self.directory),
            "reviewer": who,
            "default_reviewer": self.reviewer,
            "total": len(self.items),
            "labelled": len(labelled),
            "position": position,
            "thresholds": self.thresholds,
            "critics": self.critics,
        }

    def item(self, index: int, reviewer: str | None) -> dict[str, Any]:
        """Item `index` (0-based) as the page shows it, with this reviewer's label if they gave one;
        the verdicts only then, so they cannot anchor the reviewer's own judgement."""
        item = self._item(index)
        label = self._labels.get(LabelKey(_reviewer(reviewer or self.reviewer), item.kind, item.id))
        return {
            "index": index,
            "item": item.shown(reveal=label is not None),
            "label": label.model_dump(mode="json") if label is not None else None,
        }

    def save(self, payload: Mapping[str, Any]) -> dict[str, Any]:
        """Save the label the page sent, appended to `labels.jsonl` at once; answer with the item
        as it now shows (verdicts revealed) and the updated state."""
        index = payload.get("index")
        if not isinstance(index, int):
            raise LabelRejected("The label names no item (`index` is missing).")
        item = self._item(index)
        if payload.get("item_id") != item.id:
            raise LabelRejected(f"Item {index + 1} is {item.id}, not {payload.get('item_id')}; reload the page.")
        label = self._label(item, payload)
        with self._lock:
            self._store.append(label)
            self._labels[label.key] = label
            self.saved += 1
            if label.kind == "draft":
                refresh_kept_quality(self.directory)
        return {**self.item(index, label.reviewer), "state": self.state(label.reviewer)}

    # --- helpers ----------------------------------------------------------------------------
    def _item(self, index: int) -> ReviewItem:
        if not 0 <= index < len(self.items):
            raise LabelRejected(f"There is no item {index + 1}: the sample has {len(self.items)}.")
        return self.items[index]

    def _labelled(self, reviewer: str) -> set[str]:
        """The items of this sample the reviewer has labelled (labels of other samples' items do not count)."""
        with self._lock:
            given = {key.item_id for key in self._labels if key.reviewer == reviewer and key.kind == self.kind}
        return given & self._ids

    def _label(self, item: ReviewItem, payload: Mapping[str, Any]) -> Label:
        note = payload.get("note") or ""
        if not isinstance(note, str) or len(note) > MAX_NOTE_CHARS:
            raise LabelRejected(f"The note must be text of at most {MAX_NOTE_CHARS} characters.")
        criteria = payload.get("criteria") or {}
        if not isinstance(criteria, dict):
            raise LabelRejected("The criteria must be an object of criterion -> {pass, score}.")
        known = [critic["name"] for critic in self.critics]
        unknown = [name for name in criteria if name not in known]
        if unknown:
            raise LabelRejected(f"This run has no critic {unknown[0]!r}; its critics are {', '.join(known)}.")
        try:
            # Strictly: "yes" is no boolean and "4" no score, whatever a lax reading would make of them.
            label = Label.model_validate(
                {
                    "kind": item.kind,
                    "item_id": item.id,
                    "reviewer": _reviewer(payload.get("reviewer") or self.reviewer),
                    "criteria": criteria,
                    "keep": payload.get("keep"),
                    "correct": payload.get("correct"),
                    "note": note.strip(),
                    "prompt_hashes": item.prompt_hashes,
                    "via": "page",
                },
                strict=True,
            )
        except ValidationError as exc:
            first = exc.errors()[0]
            where = ".".join(str(part) for part in first["loc"])
            raise LabelRejected(f"The label cannot be saved ({where}: {first['msg']}).") from exc
        if label.empty:
            raise LabelRejected("Nothing is labelled yet: mark a criterion or a decision first.")
        return label


def _reviewer(name: object) -> str:
    """A reviewer's name as labels record it: trimmed, one line, not empty, not too long."""
    text = " ".join(str(name).split()) if isinstance(name, str) else ""
    if not text or len(text) > MAX_REVIEWER_CHARS:
        raise LabelRejected(f"A reviewer's name must be 1 to {MAX_REVIEWER_CHARS} characters.")
    return text
