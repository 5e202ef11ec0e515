"""A resumed build's flow reads its stored verdicts through the ledger's small states
(`qagen.generation.ledger`): they must decide as the whole records do, or a resumed build pays for
critics after a rejection (seen on a real model: a "Yes" at P(yes) 0.63, read back as a plain yes)."""

from __future__ import annotations

from pathlib import Path

import pytest

from qagen.config import BuildConfig, CorpusSettings
from qagen.generation.ledger import Ledger
from qagen.generation.tasks import stops_the_critics
from qagen.generation.vetting import vet
from qagen.records import Critique, Draft
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
