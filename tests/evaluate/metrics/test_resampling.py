"""The numpy resampling reproduces `random.Random`'s stream and `math.fsum`'s sums exactly."""

from __future__ import annotations

import math
import random

import numpy as np
import pytest

from qagen.evaluate.metrics.resampling import ExactSums, MersenneStream


@pytest.mark.parametrize("seed", [0, 1, 2**32, 2**100 + 7, -3])
def test_choices_are_those_of_random_random(seed: int) -> None:
    python = random.Random(seed)
    stream = MersenneStream(seed)
    for rows, n in ((3, 1), (2, 7), (1, 10_000), (4, 33)):
        expected = [python.choices(range(n), k=n) for _ in range(rows)]
        assert stream.choices(rows, n).tolist() == expected


@pytest.mark.parametrize("n", [1, 5, 31, 32, 33, 63, 64, 65, 1000])
def test_getrandbits_are_those_of_random_random(n: int) -> None:
    python = random.Random(n)
    stream = MersenneStream(n)
    patterns = stream.getrandbits(5, n)
    for row in patterns:
        assert int.from_bytes(row.tobytes(), "little") == python.getrandbits(n)


def test_choices_and_getrandbits_share_one_stream() -> None:
    python = random.Random(9)
    stream = MersenneStream(9)
    assert stream.choices(1, 50).tolist() == [python.choices(range(50), k=50)]
    assert int.from_bytes(stream.getrandbits(1, 70)[0].tobytes(), "little") == python.getrandbits(70)
    assert stream.choices(1, 3).tolist() == [python.choices(range(3), k=3)]


ADVERSARIAL = {
    "cancellation": [1e16, 1.0, -1e16, 3.0, 1e-3],
    "thirds": [1 / 3, 2 / 3, 1 / 7, 0.1, 0.2, 0.3],
    "half-even ties": [2.0**53, 1.0, 1.0, 2.0**53 + 2, -1.0],
    "wide": [1e200, -1e-200, 3.0, -1e200, 1e-200],
    "subnormal": [5e-324, 1e-310, 0.0, 1.0],
    "near the limit": [1e307, -1e307, 1.0, 1e306],  # sums stay finite; the fsum path
    "zeros": [0.0, -0.0, 0.0],
    "one": [0.75],
}


@pytest.mark.parametrize("name", sorted(ADVERSARIAL))
def test_exact_sums_equal_math_fsum(name: str) -> None:
    values = ADVERSARIAL[name]
    sums = ExactSums(np.array(values))
    rng = np.random.default_rng(len(name))
    picks = rng.integers(0, len(values), size=(200, len(values)))
    assert sums.of_choices(picks) == [math.fsum(values[i] for i in row) for row in picks.tolist()]
    width = 4 * ((len(values) + 31) // 32)
    patterns = rng.integers(0, 256, size=(200, width), dtype=np.uint8)
    expected = []
    for row in patterns:
        bits = format(int.from_bytes(row.tobytes(), "little") % 2 ** len(values), f"0{len(values)}b")
        expected.append(math.fsum(v if b == "1" else -v for b, v in zip(bits, values, strict=True)))
    # Bits above n are zero in `getrandbits(n)`; clear them so both sides read the same integer.
    if len(values) % 8:
        patterns[:, len(values) // 8] &= (1 << (len(values) % 8)) - 1
    patterns[:, len(values) // 8 + (1 if len(values) % 8 else 0) :] = 0
    assert sums.of_signs(patterns) == expected


def test_exact_sums_of_many_random_floats() -> None:
    rng = random.Random(3)
    values = [rng.uniform(-1, 1) * 10.0 ** rng.randint(-30, 30) for _ in range(3000)]
    picks = np.random.default_rng(0).integers(0, len(values), size=(20, len(values)))
    assert ExactSums(np.array(values)).of_choices(picks) == [
        math.fsum(values[i] for i in row) for row in picks.tolist()
    ]
