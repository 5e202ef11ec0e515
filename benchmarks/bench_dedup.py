"""Near-duplicate removal: the first (quadratic) version and the prefix-filtered index, side by side.

    python benchmarks/bench_dedup.py                      # 1,000 / 10,000 / 100,000 questions
    python benchmarks/bench_dedup.py --sizes 1000 20000   # others

Questions are realistic in shape: 12-13 distinct words each, drawn from a Zipfian vocabulary (so
every question shares frequent words with most others), and a tenth of them repeat an earlier
question with one word added or dropped, or in another order and case (near-duplicates at 0.9).
Each size is run through both versions (same decisions checked) and the CPU seconds printed; the old
version is skipped where its quadratic extrapolation from the last size exceeds --old-limit, and
the line says so. `compared/q` is the pairs of word sets the new version compared per question (the
old compares each with every kept question of a similar size). Ends with the log-log slope of the
new version's time over the sizes.
"""

from __future__ import annotations

import argparse
import itertools
import math
import random
import time

from qagen.generation.dedup import NearDuplicateFilter, jaccard, question_words


class QuadraticReference:
    """The first version, verbatim (tests/generation/test_dedup.py holds the same reference)."""

    def __init__(self, threshold: float = 0.9) -> None:
        self.threshold = threshold
        self._by_size: dict[int, list[tuple[frozenset[str], str]]] = {}

    def first_seen(self, question: str, item_id: str) -> str | None:
        words = question_words(question)
        size = len(words)
        low = int(size * self.threshold)
        high = int(size / self.threshold) + 1 if self.threshold > 0 else size
        for other_size in range(low, high + 1):
            for other_words, other_id in self._by_size.get(other_size, ()):
                if jaccard(words, other_words) >= self.threshold:
                    return other_id
        self._by_size.setdefault(size, []).append((words, item_id))
        return None


def realistic_questions(count: int, seed: int = 1, vocabulary_size: int = 20_000) -> list[str]:
    rng = random.Random(seed)
    vocabulary = [f"word{rank}" for rank in range(vocabulary_size)]
    cumulative = list(itertools.accumulate(1 / (rank + 1) for rank in range(vocabulary_size)))  # Zipf, s = 1
    questions: list[str] = []
    for _ in range(count):
        if questions and rng.random() < 0.1:
            words = rng.choice(questions).rstrip("?").split()
            change = rng.randrange(3)
            if change == 0:
                words.pop(rng.randrange(len(words)))
            elif change == 1:
                words.insert(rng.randrange(len(words)), rng.choices(vocabulary, cum_weights=cumulative)[0])
            else:
                rng.shuffle(words)
                words = [word.upper() for word in words]
        else:
            words, distinct = [], rng.choice([12, 13])
            while len(set(words)) < distinct:
                words += rng.choices(vocabulary, cum_weights=cumulative)
        questions.append(" ".join(words) + "?")
    return questions


def timed(dedup: NearDuplicateFilter | QuadraticReference, questions: list[str]) -> tuple[float, list]:
    started = time.process_time()  # CPU seconds: wall time on a shared machine measures the neighbours
    outcome = [dedup.first_seen(question, str(number)) for number, question in enumerate(questions)]
    return time.process_time() - started, outcome


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--sizes", type=int, nargs="+", default=[1_000, 10_000, 100_000])
    parser.add_argument("--threshold", type=float, default=0.9)
    parser.add_argument(
        "--vocabulary",
        type=int,
        default=20_000,
        help="distinct words; a small one makes rare words recur (pessimistic)",
    )
    # 120 s: the old version runs at 10,000 (36 s measured for the issue; up to ~90 s of CPU on a busy
    # shared machine) and is skipped at 100,000 (its estimate is hours).
    parser.add_argument("--old-limit", type=float, default=120.0, help="skip the old version past this many seconds")
    parser.add_argument("--repeat", type=int, default=3, help="best of this many runs of the new version")
    args = parser.parse_args()

    print(f"{'questions':>10} {'kept':>8} {'old s':>10} {'new s':>8} {'speed-up':>9} {'compared/q':>10}")
    new_times: list[tuple[int, float]] = []
    last_old: tuple[int, float] | None = None
    for size in sorted(args.sizes):
        questions = realistic_questions(size, vocabulary_size=args.vocabulary)
        filters = [NearDuplicateFilter(args.threshold) for _ in range(args.repeat)]
        new_seconds, outcome = min((timed(dedup, questions) for dedup in filters), key=lambda run: run[0])
        compared = filters[0].comparisons / size
        new_times.append((size, new_seconds))
        kept = outcome.count(None)
        estimate = last_old[1] * (size / last_old[0]) ** 2 if last_old else 0.0
        if estimate > args.old_limit:
            old_cell, ratio = f"~{estimate:.0f} est.", f"~{estimate / new_seconds:.0f}x"
            note = f"  old skipped: quadratic estimate {estimate:.0f} s > {args.old_limit:.0f} s"
        else:
            old_seconds, old_outcome = timed(QuadraticReference(args.threshold), questions)
            if old_outcome != outcome:
                raise SystemExit(f"decisions differ at {size} questions")
            last_old = (size, old_seconds)
            old_cell, ratio, note = f"{old_seconds:.2f}", f"{old_seconds / new_seconds:.0f}x", "  same decisions"
        print(
            f"{size:>10,} {kept:>8,} {old_cell:>10} {new_seconds:>8.3f} {ratio:>9} {compared:>10.2f}{note}", flush=True
        )

    if len(new_times) >= 2:
        (first_size, first_time), (last_size, last_time) = new_times[0], new_times[-1]
        slope = math.log(last_time / first_time) / math.log(last_size / first_size)
        steps = ", ".join(
            f"{a:,}->{b:,}: {math.log(tb / ta) / math.log(b / a):.2f}"
            for (a, ta), (b, tb) in itertools.pairwise(new_times)
        )
        print(f"new version log-log slope {first_size:,}->{last_size:,}: {slope:.2f} ({steps})")


if __name__ == "__main__":
    main()
