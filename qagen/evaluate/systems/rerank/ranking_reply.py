"""Reading a listwise ranking reply (`[3] > [1] > [2]`) the way real models write it.

The rule, decided once:

1. The ranking is a *chain*: identifiers one after another with nothing but separators between
   them (`>`, commas, arrows, spaces and line breaks, Markdown emphasis, list numbers like `2.`).
   Prose between two identifiers ends a chain, so an explanation that mentions passages after the
   ranking ("[1] is about...") is never read as more ranking.
2. Identifiers are the bracketed numbers the prompt asks for (`[3]`). Only a reply with none of
   them is read for bare numbers (`3 > 1 > 2`, `Passage 3, Passage 1`), which then need a `>`,
   `,` or `;` between them (one bare number counts only as the whole reply).
3. Of several chains the one with the most distinct valid identifiers wins, the first on a tie:
   passages cited in reasoning before the ranking, or in an explanation after it, are not a
   chain. A reply whose identifiers all stand apart ("[3] is the most relevant, then [1], and
   finally [2]") is a ranking in prose: read in the order the identifiers are first mentioned.
4. Identifiers outside 1..count and repeats are dropped (the first mention counts); candidates
   the chain leaves out keep their retrieval order after the ranked ones (`complete_order`).
5. A reply with no valid identifier is a failure (empty, refusal, or `parse_failure`), never the
   retrieval order passed off as the model's ranking.

Passages reach the prompt with their own bracketed numbers (citations like `[12]`) made `(12)`
(`defuse_ids`), so a model quoting a passage cannot add identifiers to its ranking.
"""

from __future__ import annotations

import re

from qagen.failures import Failure
from qagen.llm.reply_rules import MAX_DIGITS, no_verdict

__all__ = ["defuse_ids", "read_ranking"]

_BRACKETED = re.compile(rf"\[(\d{{1,{MAX_DIGITS}}})\]")
# What may stand between two identifiers of one chain (rule 1): no word, only list numbers.
_GAP = re.compile(r"(?:[\s>,;|*_`'\"\u2013\u2014\u2192\u00bb.:-]|\d{1,3}[.)](?=\s))*")
# A bare identifier, optionally named as a passage (rule 2).
_ID_NAME = r"(?:(?:passages?|documents?|docs?|ids?)\s*)?#?"
_BARE_NUMBER = re.compile(rf"{_ID_NAME}(\d{{1,{MAX_DIGITS}}})", re.I)
_BARE_CHAIN = re.compile(rf"{_ID_NAME}\d{{1,{MAX_DIGITS}}}(?:\s*[>,;]\s*{_ID_NAME}\d{{1,{MAX_DIGITS}}})+", re.I)
_ONLY_ID = re.compile(rf"\W*{_ID_NAME}(\d{{1,{MAX_DIGITS}}})\W*", re.I)


def defuse_ids(text: str) -> str:
    """`text` with every bracketed number `[n]` written `(n)`: no identifier to a ranking reader."""
    return _BRACKETED.sub(r"(\1)", text)


def _bracketed_chains(reply: str) -> list[list[int]]:
    chains: list[list[int]] = []
    end = -1
    for match in _BRACKETED.finditer(reply):
        if chains and _GAP.fullmatch(reply, end, match.start()):
            chains[-1].append(int(match.group(1)))
        else:
            chains.append([int(match.group(1))])
        end = match.end()
    return chains


def _bare_chains(reply: str) -> list[list[int]]:
    only = _ONLY_ID.fullmatch(reply)
    if only is not None:
        return [[int(only.group(1))]]
    return [[int(n) for n in _BARE_NUMBER.findall(chain.group())] for chain in _BARE_CHAIN.finditer(reply)]


def _valid(chain: list[int], count: int) -> list[int]:
    """The chain's identifiers within 1..count, each once (its first mention), as 0-based positions."""
    positions: list[int] = []
    for identifier in chain:
        if 1 <= identifier <= count and identifier - 1 not in positions:
            positions.append(identifier - 1)
    return positions


def read_ranking(reply: str, count: int) -> list[int] | Failure:
    """The 0-based positions a ranking reply puts first, best first (see the module's rule)."""
    chains = _bracketed_chains(reply) or _bare_chains(reply)
    best: list[int] = []
    if all(len(chain) == 1 for chain in chains):
        best = _valid([chain[0] for chain in chains], count)  # prose: in order of first mention
    for chain in chains:
        positions = _valid(chain, count)
        if len(chain) > 1 and len(positions) > len(best):
            best = positions
    if not best:
        kind = no_verdict(reply)
        return Failure.of(kind, f"no passage identifier between 1 and {count} in the reply")
    return best
