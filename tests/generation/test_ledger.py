"""A resumed build's flow reads its stored verdicts through the ledger's small states
(`qagen.generation.ledger`): they must decide as the whole records do, or a resumed build pays for
critics after a rejection (seen on a real model: a "Yes" at P(yes) 0.63, read back as a plain yes)."""

from __future__ import annotations

from pathlib import Path
from unittest import mock

import pytest

from qagen.config import BuildConfig, CorpusSettings
from qagen.generation import ledger as ledger_module
from qagen.generation.ledger import Ledger
from qagen.generation.tasks import stops_the_critics
from qagen.generation.vetting import vet
from qagen.records import Critique, Draft
from qagen.runs.scratch import KeySet
from qagen.runs.store import RecordLog

# Each verdict's written score says the opposite of what its measurement says.
VERDICTS = (
    Critique(id="c1", model="m", draft_id="d", criterion="supported", prompt_hash="p", score=5, probability=0.63),
    Critique(id="c2", model="m", draft_id="d", criterion="supported", prompt_hash="p", score=1, probability=0.81),
    Critique(id="c3", model="m", draft_id="d", criterion="reader", prompt_hash="p", score=5, agreement=0.2),
    Critique(id="c4", model="m", draft_id="d", criterion="first_alone", prompt_hash="p", score=5, agreement=0.9),
)


@pytest.mark.parametrize("verdict", VERDICTS, ids=lambda verdict: f"{verdict.criterion}-{verdict.id}")
def test_a_stored_verdict_read_back_decides_as_the_whole_record(tmp_path: Path, verdict: Critique) -> None:
    critiques = tmp_path / "critiques.jsonl"
    critiques.write_text(verdict.model_dump_json() + "\n", encoding="utf-8")
    ledger = Ledger(RecordLog(tmp_path / "drafts.jsonl", Draft), RecordLog(critiques, Critique))
    ledger.scan()
    try:
        read_back = ledger.critique_store.get(verdict.id)
    finally:
        ledger.close()
    assert read_back is not None
    assert (read_back.probability, read_back.agreement) == (verdict.probability, verdict.agreement)
    config = BuildConfig(
        corpus=CorpusSettings(path="."), question_types={"factoid": 50, "multi_hop": 50}, critics=("reader",)
    )
    decided, read_back_decided = vet(config, verdict), vet(config, read_back)
    assert decided is not None and read_back_decided is not None
    assert read_back_decided.passed == decided.passed != (verdict.score == 5)
    assert stops_the_critics(read_back, config) == stops_the_critics(verdict, config)


def test_the_calls_paid_for_are_counted_as_the_records_say(tmp_path: Path) -> None:
    """`paid_for` (summed from the index's states) against a plain count over the records: the calls with a
    reply, readable or not, of the drafts asked for (every draft: None) and of their critiques, those in
    the batch journal apart; a call that got no reply, or a pair read from a reply of several, is not paid."""
    from qagen.failures import Failure, FailureKind
    from qagen.generation.ledger import Paid, Tokens
    from qagen.records import Usage

    def usage(n: int) -> Usage:
        return Usage(input_tokens=100 + n, output_tokens=10 + n, cached_input_tokens=n % 3)

    refused, timed_out = Failure.of(FailureKind.REFUSAL), Failure.of(FailureKind.RATE_LIMITED)
    drafts = [
        Draft(id=f"d{n}", chunk_id="c", model="m", prompt_hash="p", usage=usage(n), raw="r",
              failure=(refused, timed_out, None, None)[n % 4], reply_id="d0" if n == 6 else None)
        for n in range(8)
    ]  # fmt: skip
    critiques = [
        Critique(id=f"k{n}", model="m", draft_id=f"d{n % 8}", criterion="supported", prompt_hash="p", usage=usage(n),
                 score=5, failure=timed_out if n == 3 else None)
        for n in range(12)
    ]  # fmt: skip
    (tmp_path / "drafts.jsonl").write_text("".join(d.model_dump_json() + "\n" for d in drafts), encoding="utf-8")
    (tmp_path / "critiques.jsonl").write_text("".join(c.model_dump_json() + "\n" for c in critiques), encoding="utf-8")
    ledger = Ledger(RecordLog(tmp_path / "drafts.jsonl", Draft), RecordLog(tmp_path / "critiques.jsonl", Critique))
    ledger.scan()

    def expected(records: list[Draft] | list[Critique], asked: set[str] | None, batched: set[str]) -> Paid:
        sums = {True: [0, 0, 0, 0], False: [0, 0, 0, 0]}
        for record in records:
            draft_id = record.id if isinstance(record, Draft) else record.draft_id
            from_reply = isinstance(record, Draft) and record.reply_id is not None
            no_reply = record.failure is not None and record.failure.is_call_failure
            if from_reply or no_reply or (asked is not None and draft_id not in asked):
                continue
            u = record.usage
            for place, value in enumerate((1, u.input_tokens, u.output_tokens, u.cached_input_tokens)):
                sums[record.id in batched][place] += value
        return Paid(online=Tokens(*sums[False]), batched=Tokens(*sums[True]))

    try:
        for asked, batched in ((None, set()), ({"d0", "d2", "d3", "d5", "d6"}, {"d2", "k2", "k6"})):
            drafts_paid, critiques_paid = ledger.paid_for(asked, batched)
            assert drafts_paid == expected(drafts, asked, batched)
            assert critiques_paid == expected(critiques, asked, batched)
            if asked is not None:  # the final write's ids are a set on disk, asked a batch of records at a time
                on_disk = KeySet("the drafts asked for")
                for draft_id in asked:
                    on_disk.add(draft_id)
                with mock.patch.object(ledger_module, "_ASKED_AT_ONCE", 3):
                    assert ledger.paid_for(on_disk, batched) == (drafts_paid, critiques_paid)
        # d1 and d5 got no reply, d6 is a pair of d0's reply (a refusal is a reply: paid for).
        assert ledger.paid_for(None, set())[0].online.calls == 5
    finally:
        ledger.close()
