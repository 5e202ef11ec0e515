"""Scratch databases: a set of keys on disk that counts and finds as a set does, and a failed write
said as what to do."""

from __future__ import annotations

import sqlite3
import tracemalloc

import pytest

from qagen.errors import RunWriteError
from qagen.runs import scratch
from qagen.runs.scratch import KeySet, scratch_writes


def test_a_key_set_counts_each_key_once_and_finds_it_across_batches() -> None:
    keys = KeySet("test keys")
    added = [f"key-{number % 2500}" for number in range(3 * scratch._KEY_BATCH + 7)]
    for key in added:
        keys.add(key)
    assert len(keys) == len(set(added)) == 2500
    assert "key-0" in keys and "key-2499" in keys
    assert "key-2500" not in keys
    assert 7 not in keys  # not a string: never a key
    keys.add("key-2500")  # found and counted right after it is added, before its batch is written
    assert "key-2500" in keys
    assert len(keys) == 2501


def test_the_keys_among_others_are_those_the_set_finds_one_by_one() -> None:
    keys = KeySet("test keys")
    for number in range(scratch._KEY_BATCH + 3):
        keys.add(f"key-{2 * number}")
    asked = [f"key-{number}" for number in range(0, 2 * scratch._KEY_BATCH + 20, 3)] + ["", "kéy-2", 'key-"4"']
    assert keys.among(asked) == {key for key in asked if key in keys}
    assert keys.among([]) == set()
    keys.add("kéy-2")  # an added key not written yet is among them
    assert keys.among(["kéy-2", "key-1"]) == {"kéy-2"}


def test_a_key_set_holds_its_keys_on_disk() -> None:
    keys = KeySet("test keys")
    tracemalloc.start()
    try:
        for number in range(20_000):
            keys.add(f"a sampled draft's id {number:020d}")
        held = tracemalloc.get_traced_memory()[0]
    finally:
        tracemalloc.stop()
    assert len(keys) == 20_000
    # In a set they would take about 2.5 MB; here only the batch not yet written is in memory.
    assert held < 300_000


def test_a_failed_scratch_write_says_what_it_was_keeping_and_what_to_do() -> None:
    with pytest.raises(RunWriteError) as raised, scratch_writes("the index of the kept questions"):
        raise sqlite3.OperationalError("database or disk is full")
    message = str(raised.value)
    assert message.startswith(
        "Cannot keep the index of the kept questions in a temporary file: database or disk is full."
    )
    assert "TMPDIR" in message and "run the same command again" in message
