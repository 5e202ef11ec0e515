"""HTML to readable text: blocks separated by a blank line, no markup, scripts or styles."""

from __future__ import annotations

import re
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from bs4.element import Tag

# Elements whose content is never readable prose.
_DROP_TAGS = ["script", "style", "noscript", "template", "meta", "link", "base", "svg", "iframe"]
# A site's navigation around a page's own text: tables of contents, "Previous topic", "Report a Bug",
# breadcrumbs, search boxes, copyright footers. Marked by HTML5 (`nav`, `footer`, ARIA roles) or, in
# generators older than that, by names: Sphinx's `sphinxsidebar`, `related` and `footer`, AsciiDoc's
# (git's manual pages) `toc` and `footer`. In the chunks they would be drafted from as if the page said them.
_NAVIGATION_TAGS = ["nav", "footer"]
_NAVIGATION_ROLES = {"navigation", "search", "banner", "contentinfo"}
_NAVIGATION_NAMES = {"sphinxsidebar", "related", "footer", "toc", "toctitle"}
# Inline elements are unwrapped so that "a <b>bold</b> word" stays one line of text.
_INLINE_TAGS = [
    "a", "abbr", "b", "bdi", "bdo", "cite", "code", "data", "del", "dfn", "em", "font", "i", "ins",
    "kbd", "label", "mark", "q", "s", "samp", "small", "span", "strong", "sub", "sup", "time", "u",
    "var",
]  # fmt: skip
# Private-use characters mark structure while whitespace is collapsed; stripped from input first.
_PARA, _LINE, _PRE = "\ue000", "\ue001", "\ue002"
_PARA_RUN = re.compile(f"[ {_LINE}]*{_PARA}[ {_PARA}{_LINE}]*")
_LINE_RUN = re.compile(f" ?{_LINE} ?")
_PRE_REF = re.compile(f"{_PRE}(\\d+){_PRE}")


def html_to_text(markup: str) -> str:
    """Readable text of an HTML page: blocks separated by a blank line, no markup or scripts."""
    # Imported here: a sixth of a second of every build's start-up, for corpora without HTML too.
    from bs4 import BeautifulSoup
    from bs4.element import Comment, Declaration, Doctype, NavigableString, ProcessingInstruction

    markup = markup.translate({ord(c): None for c in (_PARA, _LINE, _PRE)})
    soup = BeautifulSoup(markup, "html.parser")
    for tag in soup(_DROP_TAGS):
        tag.decompose()
    # Where a page marks its own text (HTML5 `main`, or Sphinx's `role="main"`), the rest is its site's.
    main = soup.find("main") or soup.find(role="main")
    if main is not None and soup.body is not None and main is not soup.body:
        soup.body.replace_with(main.extract())  # the title stays, as the page's first line
    for tag in soup.find_all(_is_navigation):
        tag.decompose()
    for node in soup.find_all(string=True):
        if isinstance(node, (Comment, Declaration, Doctype, ProcessingInstruction)):
            node.extract()
    # Preformatted blocks are set aside verbatim while the rest of the whitespace is collapsed.
    blocks: list[str] = []
    for pre in soup("pre"):
        blocks.append(pre.get_text().strip("\n"))
        pre.replace_with(NavigableString(f"{_PARA}{_PRE}{len(blocks) - 1}{_PRE}{_PARA}"))
    for br in soup("br"):
        br.replace_with(NavigableString(_LINE))
    for tag in soup(_INLINE_TAGS):
        tag.unwrap()
    soup.smooth()
    # With inline elements gone, a boundary between two strings is a boundary between blocks.
    text = re.sub(r"\s+", " ", soup.get_text(_PARA))
    text = _LINE_RUN.sub("\n", _PARA_RUN.sub("\n\n", text))
    return _PRE_REF.sub(lambda ref: blocks[int(ref[1])], text).strip()


def _is_navigation(tag: Tag) -> bool:
    """Whether an element is the site's navigation, not the page's text (see `_NAVIGATION_TAGS`)."""
    if tag.name in _NAVIGATION_TAGS or tag.get("role") in _NAVIGATION_ROLES:
        return True
    names = {*tag.get_attribute_list("class"), tag.get("id")}
    return bool(names & _NAVIGATION_NAMES)
