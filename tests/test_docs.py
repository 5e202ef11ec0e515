"""The documentation: the site in docs/ builds with `mkdocs build --strict`, and the README's links resolve.

The commands and snippets of the pages are run by tests/test_readme.py. The site needs the `dev`
extra (mkdocs and its theme); without it the build test skips, saying so, and under
QAGEN_REQUIRE_DOCS=1 (CI) it fails instead.
"""

from __future__ import annotations

import importlib.util
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
DOCS = ROOT / "docs"
# The README's relative links: [text](target), the target without its #anchor; web addresses aside.
LINK = re.compile(r"\]\((?!https?://)([^)#\s]+)(?:#[^)\s]*)?\)")


def _require_mkdocs() -> None:
    missing = [name for name in ("mkdocs", "material") if importlib.util.find_spec(name) is None]
    if missing:
        message = f"{' and '.join(missing)} not installed (the site's builder and theme): pip install -e '.[dev]'"
        if os.environ.get("QAGEN_REQUIRE_DOCS") == "1":
            pytest.fail(f"{message}; QAGEN_REQUIRE_DOCS=1 says the site must be built here")
        pytest.skip(message)


@pytest.mark.slow
def test_the_documentation_site_builds_strict(tmp_path: Path) -> None:
    _require_mkdocs()
    site = tmp_path / "site"
    done = subprocess.run(
        [sys.executable, "-m", "mkdocs", "build", "--strict", "-f", str(ROOT / "mkdocs.yml"), "-d", str(site)],
        cwd=ROOT,
        # The theme prints a banner about its successor on every build; it is not a warning of the site's.
        env={**os.environ, "NO_MKDOCS_2_WARNING": "1"},
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    # Every page became a page of the site (--strict already refuses a page left out of the nav).
    for page in DOCS.glob("*.md"):
        built = site / "index.html" if page.stem == "index" else site / page.stem / "index.html"
        assert built.is_file(), f"{page.name} was not built"
    assert (site / "images" / "review_page.png").is_file()


def test_the_readme_links_resolve() -> None:
    """The README is not a page of the site, so --strict does not check it: its links to the pages are checked here."""
    targets = LINK.findall((ROOT / "README.md").read_text(encoding="utf-8"))
    assert any(target.startswith("docs/") for target in targets)
    missing = [target for target in targets if not (ROOT / target).exists()]
    assert not missing, f"the README links to files that do not exist: {missing}"


def test_the_readme_is_a_first_page() -> None:
    """A newcomer reads it in five minutes: at most 200 lines, opening with the two commands CI runs."""
    lines = (ROOT / "README.md").read_text(encoding="utf-8").splitlines()
    assert len(lines) <= 200, f"the README has {len(lines)} lines: move the detail to a page of docs/"
    first_section = next(index for index, line in enumerate(lines) if line.startswith("## "))
    opening = lines[:first_section]
    assert "<!-- ci:install-and-run -->" in opening and "<!-- ci:test -->" in opening
