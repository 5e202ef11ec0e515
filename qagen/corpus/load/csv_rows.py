"""CSV records read block by block, each field built once: what `csv.reader` returns for the file
opened with `newline=""` (the excel dialect: `,` between fields, `"` around them, `""` for a quote
inside), without its cost on a huge cell.

Why not `csv.reader`: it reads a whole physical line first, then copies every character of a field
into a buffer of 4 bytes per character before making the string, so a 200 MB cell of ASCII text
peaked at 5x its size (benchmarks/bench_table_memory.py). Here a field is a list of slices of
1 MiB blocks joined once: about 2x its size at the peak, the slices and the string.

The state machine is `csv.reader`'s (Modules/_csv.c) for the excel dialect, and its results are
checked equal to it on generated input (tests/corpus/load/test_csv_rows.py):

- a field that starts with `"` is quoted up to the next lone `"`; `""` inside is one `"`; anything
  after the closing quote, up to the next `,` or line end, is kept as text (`"ab"cd` -> `abcd`);
- a `"` inside an unquoted field is text (`x"y` -> `x"y`);
- a record ends at `\\r\\n`, `\\r` or `\\n` outside quotes; a blank line is an empty record;
- at the end of the file an unterminated quoted field is kept as it is (csv's non-strict mode).
"""

from __future__ import annotations

import codecs
import re
from collections.abc import Iterator
from typing import BinaryIO

BLOCK_BYTES = 2**20
_FIELD_END = re.compile(r"[,\r\n]")
# A whole field and what ends it, when both are in the block: quoted (`""` inside) or plain (no `"`).
# Most fields are read with this one match; the rest (a field running past the block, `"ab"cd`,
# `x"y`) go through the state machine.
_WHOLE_FIELD = re.compile(r'"([^"]*(?:""[^"]*)*)"(?=[,\r\n])|([^,"\r\n]*)(?=[,\r\n])')
# The text of a quoted field up to its closing quote, `""` included (unrolled: no backtracking).
_QUOTED_RUN = re.compile(r'[^"]*(?:""[^"]*)*')

# States, named as in _csv.c.
_START_RECORD, _START_FIELD, _IN_FIELD, _IN_QUOTED_FIELD, _QUOTE_IN_QUOTED_FIELD, _EAT_LF = range(6)


class CsvRecords:
    """The records of a CSV file, in order (blank lines included, as empty lists).

    `line` is the number of the physical line being read; after a UnicodeDecodeError, the line of
    the bytes that are not text in `encoding`.
    """

    def __init__(self, handle: BinaryIO, encoding: str = "utf-8-sig", block_bytes: int = BLOCK_BYTES) -> None:
        self._handle = handle
        self._decoder = codecs.getincrementaldecoder(encoding)()
        self._block_bytes = block_bytes
        self.line = 1

    def _blocks(self) -> Iterator[str]:
        """The file's text, decoded a block of bytes at a time (a character split between two
        blocks is decoded whole, with the second)."""
        while True:
            raw = self._handle.read(self._block_bytes)
            try:
                block = self._decoder.decode(raw, final=not raw)
            except UnicodeDecodeError as exc:
                self.line += raw[: exc.start].count(b"\n")
                raise
            if block:
                yield block
            if not raw:
                return

    def __iter__(self) -> Iterator[list[str]]:
        state = _START_RECORD
        record: list[str] = []
        field: list[str] = []
        for block in self._blocks():
            position, end = 0, len(block)
            while position < end:
                char = block[position]
                if state == _EAT_LF:
                    # The `\n` of a `\r\n` split across two blocks belongs to the line ending.
                    state = _START_RECORD
                    if char == "\n":
                        position += 1
                    continue
                if state in (_START_RECORD, _START_FIELD):
                    if char in "\r\n":
                        if state == _START_FIELD:
                            record.append("")
                        yield record
                        record = []
                        state, position = self._line_end(block, position)
                        continue
                    whole = _WHOLE_FIELD.match(block, position)
                    if whole is not None:
                        quoted = whole.group(1)
                        if quoted is None:
                            record.append(whole.group(2))
                        else:
                            self.line += quoted.count("\n")
                            record.append(quoted.replace('""', '"'))
                        stop = whole.end()
                        if block[stop] == ",":
                            state, position = _START_FIELD, stop + 1
                            continue
                        yield record
                        record = []
                        state, position = self._line_end(block, stop)
                        continue
                    if char == '"':
                        state = _IN_QUOTED_FIELD
                        position += 1
                        continue
                    state = _IN_FIELD
                if state == _IN_FIELD:
                    found = _FIELD_END.search(block, position)
                    stop = found.start() if found else end
                    if stop > position:
                        field.append(block[position:stop])
                    if found is None:
                        position = end
                        continue
                    record.append("".join(field))
                    field = []
                    if block[stop] == ",":
                        state, position = _START_FIELD, stop + 1
                        continue
                    yield record
                    record = []
                    state, position = self._line_end(block, stop)
                    continue
                if state == _IN_QUOTED_FIELD:
                    run = _QUOTED_RUN.match(block, position)
                    stop = run.end() if run is not None else position
                    if stop > position:
                        piece = block[position:stop]
                        self.line += piece.count("\n")
                        field.append(piece.replace('""', '"'))
                    # At a lone quote: the closing one, or the first of a pair split across blocks.
                    if stop < end:
                        state = _QUOTE_IN_QUOTED_FIELD
                    position = stop + 1
                    continue
                # _QUOTE_IN_QUOTED_FIELD: what follows a closing (or a doubled) quote.
                if char == '"':
                    field.append('"')
                    state = _IN_QUOTED_FIELD
                    position += 1
                elif char == ",":
                    record.append("".join(field))
                    field = []
                    state = _START_FIELD
                    position += 1
                elif char in "\r\n":
                    record.append("".join(field))
                    field = []
                    yield record
                    record = []
                    state, position = self._line_end(block, position)
                else:
                    state = _IN_FIELD  # text after the closing quote is kept, as csv does
        if state in (_START_FIELD, _IN_FIELD, _IN_QUOTED_FIELD, _QUOTE_IN_QUOTED_FIELD):
            record.append("".join(field))
            yield record

    def _line_end(self, block: str, position: int) -> tuple[int, int]:
        """The state and position after the line ending at `position` (`\\r\\n`, `\\r` or `\\n`)."""
        self.line += 1
        if block[position] == "\n":
            return _START_RECORD, position + 1
        if position + 1 < len(block):
            return _START_RECORD, position + (2 if block[position + 1] == "\n" else 1)
        return _EAT_LF, position + 1
