"""Prompts are files (one per prompt), loaded by name, rendered strictly, and hashed.

The hash of a prompt's text goes into every record made with it, so a changed prompt is never
silently mixed with results of the old one (resume keys and the run fingerprint include it).
"""

from __future__ import annotations

import hashlib
import re
from functools import cache
from importlib import resources
from pathlib import Path

from pydantic import BaseModel, ConfigDict

from qagen.errors import ConfigError

_PLACEHOLDER = re.compile(r"\{([a-z_]+)\}")


class Prompt(BaseModel):
    """A prompt template and its identity."""

    model_config = ConfigDict(frozen=True)

    name: str
    text: str
    sha256: str

    @property
    def hash(self) -> str:
        """Short form of the content hash, stored with every output made with this prompt."""
        return self.sha256[:12]

    @property
    def variables(self) -> frozenset[str]:
        return frozenset(_PLACEHOLDER.findall(self.text))

    def render(self, **values: str) -> str:
        """Fill every `{name}`; a missing or unexpected variable is an error, never a blank.

        Values are inserted verbatim in one pass, so braces or `{name}` inside a chunk's text are
        never interpreted as placeholders (unlike `str.format`).
        """
        missing = self.variables - values.keys()
        extra = values.keys() - self.variables
        if missing or extra:
            raise ConfigError(
                f"Prompt '{self.name}' needs {sorted(self.variables)}; "
                f"missing {sorted(missing)}, unexpected {sorted(extra)}."
            )
        return _PLACEHOLDER.sub(lambda m: values[m.group(1)], self.text)


def prompts_dir() -> Path:
    """Where the prompt files are: inside the installed wheel, or at the top of a source checkout."""
    packaged = Path(str(resources.files("qagen"))) / "prompts"
    if packaged.is_dir():
        return packaged
    # An editable install maps the package to the checkout, where prompts/ sits beside qagen/.
    return Path(__file__).resolve().parents[2] / "prompts"


@cache
def load_prompt(name: str, folder: Path | None = None) -> Prompt:
    """Load `<name>.txt` from `folder` (default: qagen's own `prompts/`)."""
    path = (folder or prompts_dir()) / f"{name}.txt"
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError as exc:
        raise ConfigError(f"Prompt file not found: {path}.") from exc
    return Prompt(name=name, text=text, sha256=hashlib.sha256(text.encode("utf-8")).hexdigest())
