"""Prompts are files (one per prompt), loaded by name, rendered strictly, and hashed.

The hash of a prompt's text goes into every record made with it, so a changed prompt is never
silently mixed with results of the old one (resume keys and the run fingerprint include it).
The bundled files are in `prompts/`; a folder of the user's own files can replace any of them
(`load_prompts`).
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Iterable, Mapping
from functools import cache, lru_cache
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
        return _variables(self.text)

    def render(self, **values: str) -> str:
        """Fill every `{name}`; a missing or unexpected variable is an error, never a blank.

        Values are inserted verbatim in one pass, so braces or `{name}` inside a chunk's text are
        never interpreted as placeholders (unlike `str.format`).
        """
        if values.keys() != self.variables:
            missing = self.variables - values.keys()
            extra = values.keys() - self.variables
            raise ConfigError(
                f"Prompt '{self.name}' needs {sorted(self.variables)}; "
                f"missing {sorted(missing)}, unexpected {sorted(extra)}."
            )
        pieces = list(_pieces(self.text))
        pieces[1::2] = [values[name] for name in pieces[1::2]]
        return "".join(pieces)


@lru_cache(maxsize=256)
def _variables(text: str) -> frozenset[str]:
    """A prompt text's placeholders: read for every request made with it, so found once per text."""
    return frozenset(_PLACEHOLDER.findall(text))


@lru_cache(maxsize=256)
def _pieces(text: str) -> tuple[str, ...]:
    """A prompt text cut at its placeholders, once per text: its text before the first, the first's
    name, the text up to the next, and so on, its text after the last at the end."""
    return tuple(_PLACEHOLDER.split(text))


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


def load_prompts(
    names: Iterable[str],
    folder: Path | None = None,
    *,
    own: Iterable[str] = (),
    defaults_in: Mapping[str, Path] | None = None,
) -> dict[str, Prompt]:
    """The prompts `names`, each from `folder` when it holds `<name>.txt`, else the bundled one (or the
    one in `defaults_in[name]`, for a prompt that ships outside qagen, a registered critic's), and the
    prompts `own`, which only `folder` has (a critic of your own: its user checks its placeholders).

    A file in `folder` that is none of `names` is refused (a typo would otherwise leave the bundled
    prompt in use without a word), and so is a replacement whose placeholders are not the bundled
    prompt's: a missing `{context}` would ask about no text at all, an unknown one could never be
    filled. Files are read on every call, never cached: an edited prompt is a new prompt, with a new
    hash.
    """
    wanted, own_names = list(names), list(own)
    bundled = {name: load_prompt(name, (defaults_in or {}).get(name)) for name in wanted}
    if folder is None:
        if own_names:
            raise ConfigError(
                f"The prompts {', '.join(own_names)} are your own: give the folder holding them as `prompts_dir`.",
                settings=("prompts_dir",),
            )
        return bundled
    replacements = _replacements(folder, [*wanted, *own_names])
    absent = [f"{name}.txt" for name in own_names if name not in replacements]
    if absent:
        raise ConfigError(
            f"`prompts_dir` {folder} has no {', '.join(absent)}, the prompt of a critic of your own; add the file "
            "or take the critic's name out of `critics`.",
            settings=("prompts_dir", "critics"),
        )
    prompts = dict(bundled)
    for name, path in replacements.items():
        prompt = _read(name, path)
        if name in bundled:
            _check_placeholders(prompt, bundled[name], path)
        prompts[name] = prompt
    return prompts


def _replacements(folder: Path, names: list[str]) -> dict[str, Path]:
    """The prompt files in `folder`, by name; anything else there is refused."""
    known = ", ".join(f"{name}.txt" for name in sorted(names))
    if not folder.is_dir():
        raise ConfigError(
            f"`prompts_dir` {folder} is not a folder; give a folder holding prompt files named as the bundled "
            f"ones ({known}).",
            settings=("prompts_dir",),
        )
    found: dict[str, Path] = {}
    unknown: list[str] = []
    for path in sorted(folder.iterdir()):
        if path.name.startswith("."):
            continue  # .DS_Store, editor swap files: not meant as prompts
        if path.suffix == ".txt" and path.stem in names and path.is_file():
            found[path.stem] = path
        else:
            unknown.append(path.name)
    if unknown:
        other_bundled = {p.name for p in prompts_dir().glob("*.txt") if p.stem not in names}
        unasked = [name for name in unknown if name in other_bundled]
        note = (
            f" ({', '.join(unasked)}: bundled prompts not asked here; a critic's prompt is asked when the build asks "
            "the critic, as `critics` names it, and an evaluation's only by an evaluation)"
            if unasked
            else ""
        )
        raise ConfigError(
            f"`prompts_dir` {folder} holds {', '.join(unknown)}, which replace no prompt{note}; the prompts "
            f"that can be replaced are {known}. Rename or remove the others.",
            settings=("prompts_dir",),
        )
    return found


def _read(name: str, path: Path) -> Prompt:
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise ConfigError(f"Cannot read the prompt file {path}: {exc}.") from exc
    return Prompt(name=name, text=text, sha256=hashlib.sha256(text.encode("utf-8")).hexdigest())


OPTIONAL_PLACEHOLDERS = frozenset({"document", "second_document"})
"""Placeholders a replacement prompt may leave out (or use) whether or not the bundled one has them: the
name of the passage's document is a help to the model, not an input a prompt must read, so prompt
files written before it was offered still work."""


def _check_placeholders(prompt: Prompt, bundled: Prompt, path: Path) -> None:
    missing = sorted(bundled.variables - prompt.variables - OPTIONAL_PLACEHOLDERS)
    unknown = sorted(prompt.variables - bundled.variables - OPTIONAL_PLACEHOLDERS)
    if missing or unknown:
        problems = [
            f"lacks {_braced(missing)}" if missing else "",
            f"has unknown {_braced(unknown)}" if unknown else "",
        ]
        raise ConfigError(
            f"The prompt file {path} {' and '.join(p for p in problems if p)}; it must have exactly the placeholders "
            f"of the bundled {bundled.name}.txt: {_braced(sorted(bundled.variables))}.",
        )


def _braced(names: list[str]) -> str:
    return ", ".join(f"{{{name}}}" for name in names)
