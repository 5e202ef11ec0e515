"""Agreement between a machine's yes/no and people's: raw agreement, Cohen's kappa, a bootstrap
interval, and the confusion matrix.

Cohen's kappa corrects raw agreement for the agreement two raters would reach by chance with their
own rates of "yes": `(p_o - p_e) / (1 - p_e)`, with `p_o` the share of items they agree on and
`p_e = p_yes(a) p_yes(b) + p_no(a) p_no(b)`. 1 is perfect agreement, 0 what chance gives. It is
undefined (None) when both raters say the same thing of every item (`p_e = 1`).

The interval is a percentile bootstrap over items: an item labelled by several people is drawn with
all its labels (they are not independent). The resamples are drawn as the evaluation's intervals
draw theirs (`resampled_positions` of numpy's `default_rng(seed)`), so the same labels give the
same interval.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import NamedTuple

import numpy as np
import numpy.typing as npt

from qagen.evaluate.metrics.statistics import resampled_positions

CONFIDENCE = 0.95
RESAMPLES = 2000


class Pair(NamedTuple):
    """One label compared: the item, what the machine said, what the person said."""

    item_id: str
    machine: bool
    person: bool


class Confusion(NamedTuple):
    """How machine and people split the labelled items (the four add up to `n`)."""

    true_pass: int
    """Both say yes (pass, keep, correct)."""
    false_pass: int
    """The machine says yes, the person no: a false keep."""
    false_fail: int
    """The machine says no, the person yes: a false reject."""
    true_fail: int
    """Both say no."""

    @property
    def n(self) -> int:
        return self.true_pass + self.false_pass + self.false_fail + self.true_fail


class Agreement(NamedTuple):
    """How far the machine agrees with people on `n` labels of `items` items."""

    n: int
    items: int
    agreement: float | None
    """Raw agreement: the share of labels the machine agrees with (None with no label)."""
    kappa: float | None
    kappa_low: float | None
    kappa_high: float | None
    """The bootstrap interval of kappa (None when it is undefined in most resamples, or n < 2)."""
    confusion: Confusion


def confusion(pairs: Sequence[Pair]) -> Confusion:
    counts = _counts(pairs)
    return Confusion(*(int(value) for value in counts))


def kappa_of(counts: Confusion | Sequence[int]) -> float | None:
    """Cohen's kappa of a confusion matrix (true_pass, false_pass, false_fail, true_fail)."""
    value = _kappas(np.array([list(counts)], dtype=np.float64))[0]
    return None if np.isnan(value) else float(value)


def agreement(pairs: Sequence[Pair], *, seed: int = 0, resamples: int = RESAMPLES) -> Agreement:
    """Raw agreement, kappa and its bootstrap interval, and the confusion matrix of `pairs`."""
    matrix = confusion(pairs)
    items = sorted({pair.item_id for pair in pairs})
    if not pairs:
        return Agreement(0, 0, None, None, None, None, matrix)
    low, high = _interval(pairs, items, seed, resamples)
    raw = (matrix.true_pass + matrix.true_fail) / matrix.n
    return Agreement(matrix.n, len(items), raw, kappa_of(matrix), low, high, matrix)


def _counts(pairs: Sequence[Pair]) -> npt.NDArray[np.float64]:
    counts = np.zeros(4)
    for pair in pairs:
        counts[_cell(pair)] += 1
    return counts


def _cell(pair: Pair) -> int:
    return (0 if pair.person else 1) if pair.machine else (2 if pair.person else 3)


def _kappas(counts: npt.NDArray[np.float64]) -> npt.NDArray[np.float64]:
    """Kappa of each row of confusion counts (NaN where undefined)."""
    n = counts.sum(axis=1)
    machine_yes = (counts[:, 0] + counts[:, 1]) / n
    person_yes = (counts[:, 0] + counts[:, 2]) / n
    observed = (counts[:, 0] + counts[:, 3]) / n
    chance = machine_yes * person_yes + (1 - machine_yes) * (1 - person_yes)
    with np.errstate(divide="ignore", invalid="ignore"):
        kappas: npt.NDArray[np.float64] = np.where(chance < 1, (observed - chance) / (1 - chance), np.nan)
    return kappas


def _interval(pairs: Sequence[Pair], items: list[str], seed: int, resamples: int) -> tuple[float | None, float | None]:
    if len(items) < 2:
        return None, None
    position = {item: index for index, item in enumerate(items)}
    per_item = np.zeros((len(items), 4))
    for pair in pairs:
        per_item[position[pair.item_id], _cell(pair)] += 1
    kappas: list[npt.NDArray[np.float64]] = []
    for picks in resampled_positions(np.random.default_rng(seed), resamples, len(items)):
        kappas.append(_kappas(per_item[picks].sum(axis=1)))
    values = np.concatenate(kappas)
    defined = values[~np.isnan(values)]
    if defined.size < resamples / 2:
        return None, None  # mostly undefined: an interval of the rest would mislead
    tail = (1 - CONFIDENCE) / 2
    low, high = np.quantile(defined, [tail, 1 - tail])
    return float(low), float(high)
