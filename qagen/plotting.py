"""matplotlib for the charts of `qagen profile` and `qagen compare`, or one sentence saying why there is none."""

from __future__ import annotations

import importlib.util
from types import ModuleType

from qagen.errors import QagenError

__all__ = ["pyplot"]


def pyplot() -> ModuleType:
    """matplotlib's pyplot, drawing to files only (the Agg backend: no display needed).

    Raises `QagenError` naming the way forward when matplotlib is not installed, or is installed
    but cannot be imported (a broken install, a numpy it was not built for). Called before any
    work by whoever is asked for a chart, and again by each chart.
    """
    if importlib.util.find_spec("matplotlib") is None:
        raise QagenError("The chart needs matplotlib, which is not installed: pip install 'qagen[plot]'.")
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError as exc:
        raise QagenError(
            f"The chart needs matplotlib, which is installed but cannot be imported ({exc}): reinstall it with "
            "pip uninstall matplotlib, then pip install 'qagen[plot]'."
        ) from exc
    return plt
