"""`CsvRecords` returns what `csv.reader` returns, whatever the input and wherever its blocks end."""

from __future__ import annotations

import csv
import io
import random
from pathlib import Path

import pytest

from qagen.corpus.load.csv_rows import CsvRecords

# Every character the state machine treats apart, plus ordinary text, NUL and a non-ASCII letter.
ALPHABET = ["a", "b", ",", '"', '"', "\r", "\n", " ", "\x00", "é", "名"]


def with_csv(text: str) -> list[list[str]]:
    return list(csv.reader(io.StringIO(text, newline="")))


def with_records(text: str, block_bytes: int) -> list[list[str]]:
    return list(CsvRecords(io.BytesIO(text.encode()), block_bytes=block_bytes))


@pytest.mark.parametrize(
    "text",
    [
        "",
        "a,b\r\nc,d\r\n",
        "a,b\nc,d",  # no line end after the last record
        'a,"b\nc",d\r\n',  # a line end inside quotes
        '"a""b",c',  # a doubled quote
        '"ab"cd,e\n',  # text after the closing quote is kept
        'x"y,z\n',  # a quote inside an unquoted field is text
        "a,b\r\r\nc\n",  # a lone \r ends a line; a blank line is an empty record
        'a,"unterminated\n',  # the end of the file inside quotes keeps the field
        "a,\n,\n",  # empty last and first fields
        '""\n"",""\n',  # empty quoted fields
        ' "a",b\n"a" ,b\n',  # spaces around quotes are text
    ],
)
def test_known_cases(text: str) -> None:
    for block_bytes in (1, 2, 3, 1024):
        assert with_records(text, block_bytes) == with_csv(text), (text, block_bytes)


def test_generated_input_at_every_block_boundary() -> None:
    rng = random.Random(12)
    for _ in range(3000):
        text = "".join(rng.choice(ALPHABET) for _ in range(rng.randint(0, 40)))
        expected = with_csv(text)
        for block_bytes in (1, 2, 3, 5, 8, 64):
            assert with_records(text, block_bytes) == expected, (text, block_bytes)


def test_a_table_written_by_the_csv_module_reads_back_whole() -> None:
    rng = random.Random(5)
    words = ["alpha", "beta,", '"gamma"', "delta\n", "eps\r\n", "", "ζ"]
    rows = [[str(i), " ".join(rng.choice(words) for _ in range(rng.randint(0, 30)))] for i in range(2000)]
    out = io.StringIO(newline="")
    csv.writer(out).writerows(rows)
    assert with_records(out.getvalue(), 4096) == rows


def test_line_counts_physical_lines_for_messages(tmp_path: Path) -> None:
    path = tmp_path / "t.csv"
    path.write_bytes(b'text\n"two\nlines"\nok\n' + b"caf\xe9\n")  # Latin-1 on line 5
    with path.open("rb") as handle:
        records = CsvRecords(handle, block_bytes=4)
        with pytest.raises(UnicodeDecodeError):
            for _ in records:
                pass
        assert records.line == 5
