"""Resampling in numpy that gives, bit for bit, what the pure-Python loops of `statistics` gave.

`statistics` drew its resamples from `random.Random(seed)` and summed them with `math.fsum`, one
Python float at a time: 11 s of a no-op evaluation at 10,000 questions. The same numbers come out
of numpy in blocks:

- `MersenneStream` is the Mersenne Twister of `random.Random(seed)` (its state is copied into
  numpy's MT19937), read as raw 32-bit words, from which `Random.random()` (53 bits from two
  words) and `Random.getrandbits(n)` (32 bits a word, least significant word first) are rebuilt
  exactly as CPython builds them.
- `ExactSums` sums chosen values exactly, so that the rounded sum equals `math.fsum`'s (which is
  correctly rounded, hence independent of order): every value is an integer multiple of one power
  of two, split into integer "limbs" small enough that numpy adds them without rounding in any
  order; the few limb totals are then added with `math.fsum`. Values too far apart in magnitude
  for that (below 2**-900 beside ordinary ones, or near the float limit) take the slow path,
  `math.fsum` per resample, with the same result.

A summary bootstraps every metric from the same seed over the same number of questions, so the
resamples' positions are the same for all of them: `MersenneStream.resamples` keeps the last
drawing (when it fits in `SHARED_PICKS_BYTES`) for the next bootstrap of that size and seed.
"""

from __future__ import annotations

import math
import random
from collections.abc import Iterator
from typing import Any, ClassVar

import numpy as np
import numpy.typing as npt

__all__ = ["BLOCK_DRAWS", "SHARED_PICKS_BYTES", "ExactSums", "MersenneStream"]

BLOCK_DRAWS = 1 << 20
"""Draws per numpy block: resamples are made a block at a time, so memory stays ~50 MB whatever n is."""

SHARED_PICKS_BYTES = 64 << 20
"""Largest drawing kept for the next bootstrap of the same size and seed (10,000 questions x 2,000
resamples take 40 MB as 16-bit positions; larger ones are drawn afresh each time)."""

_FLOAT_BITS = 53  # significand bits of a float64
_SMALLEST_FAST = 2.0**-900  # below this (and above 0), limbs could reach subnormal floats
_LARGEST_FAST = 2.0**900  # above this (times n), limb totals could overflow
# Row j, column v: bit j of the byte v.
_BYTE_BITS = ((np.arange(256)[None, :] >> np.arange(8)[:, None]) & 1).astype(np.float64)


class MersenneStream:
    """The random numbers `random.Random(seed)` would give, in numpy blocks (same state, same order)."""

    # The last drawing of `resamples` from a fresh stream, by (seed, resamples, n, block), with the
    # stream's state after it.
    _shared: ClassVar[tuple[tuple[int, int, int, int], list[npt.NDArray[Any]], Any] | None] = None

    def __init__(self, seed: int) -> None:
        self._seed = seed
        self._fresh = True  # nothing read yet: the state is `random.Random(seed)`'s
        version, state, _ = random.Random(seed).getstate()
        assert version == 3, "random.Random's state layout changed"
        self._bits = np.random.MT19937()
        self._bits.state = {
            "bit_generator": "MT19937",
            "state": {"key": np.array(state[:-1], dtype=np.uint32), "pos": state[-1]},
        }

    def _words(self, count: int) -> npt.NDArray[np.uint64]:
        self._fresh = False
        words: npt.NDArray[np.uint64] = self._bits.random_raw(count)
        return words

    def resamples(self, count: int, n: int, rows_per_block: int) -> Iterator[npt.NDArray[Any]]:
        """`count` rows of `choices(rows, n)`, yielded `rows_per_block` rows at a time (the last block
        may be shorter); the stream is then where those calls would leave it.

        From a fresh stream, the drawing is kept (if it fits in `SHARED_PICKS_BYTES`), and the next
        fresh stream of the same seed asked for the same resamples reads it instead of drawing.
        """
        key = (self._seed, count, n, rows_per_block)
        shared = MersenneStream._shared
        if self._fresh and shared is not None and shared[0] == key:
            self._fresh = False
            self._bits.state = shared[2]
            yield from shared[1]
            return
        compact = np.uint16 if n <= 1 << 16 else np.uint32
        keep = self._fresh and count * n * np.dtype(compact).itemsize <= SHARED_PICKS_BYTES
        kept: list[npt.NDArray[Any]] = []
        for done in range(0, count, rows_per_block):
            picks = self.choices(min(rows_per_block, count - done), n)
            if keep:
                kept.append(picks.astype(compact))
            yield picks
        if keep:
            MersenneStream._shared = (key, kept, self._bits.state)

    def choices(self, rows: int, n: int) -> npt.NDArray[np.intp]:
        """`rows` x `n` positions in [0, n): row r is `Random.choices(range(n), k=n)` of the r-th call.

        `choices` takes `floor(random() * n)`, and `random()` is (a >> 5) * 2**26 + (b >> 6)
        over 2**53 for two consecutive words a, b: all exact in float64.
        """
        pairs = self._words(2 * rows * n).reshape(rows * n, 2)
        uniform = (pairs[:, 0] >> np.uint64(5)).astype(np.float64)
        uniform *= float(1 << 26)
        uniform += pairs[:, 1] >> np.uint64(6)
        # (k / 2**53) * n and k * (n / 2**53) round alike: the powers of two scale exactly.
        uniform *= n * 2.0**-53
        return uniform.astype(np.intp).reshape(rows, n)

    def getrandbits(self, rows: int, n: int) -> npt.NDArray[np.uint8]:
        """`rows` x 4 ceil(n / 32) bytes: row r is the r-th `Random.getrandbits(n)`, little-endian.

        `getrandbits(n)` fills ceil(n / 32) words, least significant first, the last one shifted
        right to keep only its top n mod 32 bits.
        """
        per_row = (n + 31) // 32
        words = self._words(rows * per_row).astype("<u4").reshape(rows, per_row)
        if n % 32:
            words[:, -1] >>= np.uint32(32 - n % 32)
        return words.view(np.uint8)


class ExactSums:
    """Sums of chosen values of `values`, each equal to `math.fsum` of the chosen values."""

    def __init__(self, values: npt.NDArray[np.float64]) -> None:
        self.values = values
        self._byte_sums: npt.NDArray[np.float64] | None = None
        magnitudes = np.abs(values)
        nonzero = magnitudes[magnitudes > 0]
        self._fast = nonzero.size == 0 or (
            float(nonzero.min()) >= _SMALLEST_FAST and float(nonzero.max()) * max(1, values.size) <= _LARGEST_FAST
        )
        if not self._fast or nonzero.size == 0:
            self._limbs = np.zeros((0, values.size))
            self._base = self._width = 0
            return
        # values = significand * 2**exponent, the significand an odd integer below 2**53 (its
        # trailing zero bits moved into the exponent, so 0/1 scores need one limb, not two).
        fractions, exponents = np.frexp(np.where(magnitudes > 0, magnitudes, 1.0))
        significands = (fractions * 2.0**_FLOAT_BITS).astype(np.uint64)
        trailing = _bit_length(significands & (~significands + np.uint64(1))) - 1
        significands >>= trailing.astype(np.uint64)
        exponents = exponents.astype(np.int64) - _FLOAT_BITS + trailing
        significands[magnitudes == 0] = 0
        self._base = int(exponents[magnitudes > 0].min())
        shifts = np.where(magnitudes > 0, exponents - self._base, 0)
        # Each limb holds `width` bits, so n of them add up below 2**52: exact in float64, any order.
        self._width = 52 - values.size.bit_length()
        top = int((shifts + _bit_length(significands)).max())
        limbs = []
        mask = np.uint64((1 << self._width) - 1)
        for start in range(0, top, self._width):
            # Bits [start, start + width) of significand << shift.
            left = shifts - start  # > 0: shift left by this; <= 0: shift right by its opposite
            shifted_left = significands << np.minimum(np.maximum(left, 0), 63).astype(np.uint64)
            shifted_right = significands >> np.minimum(np.maximum(-left, 0), 63).astype(np.uint64)
            limb = np.where(left > 0, np.where(left >= self._width, 0, shifted_left & mask), shifted_right & mask)
            limbs.append(np.where(values < 0, -limb.astype(np.float64), limb.astype(np.float64)))
        self._limbs = np.array(limbs)

    def _rounded(self, totals: npt.NDArray[np.float64]) -> list[float]:
        """Per column of exact limb totals (limbs x rows), the correctly rounded sum."""
        scales = [math.ldexp(1.0, self._base + limb * self._width) for limb in range(totals.shape[0])]
        scaled = totals * np.array(scales)[:, None]  # exact: a power of two times an integer below 2**53
        return [math.fsum(column) for column in scaled.T.tolist()]

    def of_choices(self, picks: npt.NDArray[Any]) -> list[float]:
        """Per row of `picks` (positions into `values`), `math.fsum` of the values picked."""
        if not self._fast:
            return [math.fsum(row) for row in self.values[picks].tolist()]
        if self._limbs.shape[0] == 0:
            return [0.0] * picks.shape[0]
        totals = np.stack([limb[picks].sum(axis=1) for limb in self._limbs])
        return self._rounded(totals)

    def of_signs(self, patterns: npt.NDArray[np.uint8]) -> list[float]:
        """Per row of `patterns` (integers of n bits, little-endian bytes), `math.fsum` of the values,
        value i kept where bit n-1-i is 1 (character i of `format(pattern, f"0{n}b")`), negated where 0."""
        n = self.values.size
        if not self._fast:
            bits = np.unpackbits(patterns, axis=1, bitorder="little")[:, n - 1 :: -1]
            return [math.fsum(row) for row in np.where(bits == 1, self.values, -self.values).tolist()]
        if self._limbs.shape[0] == 0:
            return [0.0] * patterns.shape[0]
        # The sum of the kept limbs, a byte at a time: byte p of a pattern picks one of 256
        # precomputed sums of the 8 limbs it covers (8 times fewer additions than bit by bit).
        positions = patterns.shape[1]
        if self._byte_sums is None or self._byte_sums.shape[1] != positions * 256:
            by_bit = np.zeros((self._limbs.shape[0], positions * 8))
            by_bit[:, :n] = self._limbs[:, ::-1]  # bit b of the pattern is value n-1-b
            self._byte_sums = (by_bit.reshape(-1, positions, 8) @ _BYTE_BITS).reshape(-1, positions * 256)
        chosen = patterns.astype(np.intp) + np.arange(positions) * 256
        kept = np.stack([byte_sums[chosen].sum(axis=1) for byte_sums in self._byte_sums])
        # sum(kept) - sum(flipped) = 2 * sum(kept) - sum(all), in integers below 2**53 (exact).
        totals = 2.0 * kept - self._limbs.sum(axis=1)[:, None]
        return self._rounded(totals)


def _bit_length(integers: npt.NDArray[np.uint64]) -> npt.NDArray[np.int64]:
    """`int.bit_length` of each integer below 2**53 (exact: such integers are exact floats)."""
    lengths: npt.NDArray[np.int64] = np.frexp(integers.astype(np.float64))[1].astype(np.int64)
    return lengths
