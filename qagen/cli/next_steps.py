"""The commands a user runs next, printed after `build` and `evaluate`: each with why, in one aligned block."""

from __future__ import annotations

__all__ = ["next_steps"]


def next_steps(steps: list[tuple[str, str]]) -> str:
    """`steps` (command, why) as the block the commands print last, the reasons aligned."""
    width = max(len(command) for command, _ in steps)
    return "\nnext:\n" + "\n".join(f"  {command:<{width}}  # {why}" for command, why in steps)
