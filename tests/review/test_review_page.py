"""The review page in a real browser: headless Chromium (the distribution's), driven by Selenium.

Three items are labelled with the keyboard alone; after a reload the labels are in labels.jsonl and
the page is at item 4. The critics' verdicts are not in the page before an item is answered.

Skips, saying what is missing, without chromium, chromedriver or selenium; CI sets
`QAGEN_REQUIRE_BROWSER=1`, so there it fails instead. `QAGEN_CHROMIUM` / `QAGEN_CHROMEDRIVER`
name the executables where they are not /usr/bin/chromium and /usr/bin/chromedriver.
"""

from __future__ import annotations

import importlib.util
import os
import shutil
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from qagen.critics import CRITICS
from qagen.review.server import ReviewServer
from qagen.review.session import ReviewSession, open_items
from tests.review.page_fixtures import Reviewed, build_and_evaluate, critiques_by_draft, labels

# Without the background-networking flags Chromium reaches for the network at start-up.
CHROMIUM_FLAGS = (
    "--headless --no-sandbox --disable-gpu --disable-quic --no-first-run --disable-background-networking "
    "--disable-component-update --disable-sync --window-size=1200,900"
).split()
WAIT = 15


def _executable(variable: str, default: str, name: str) -> str | None:
    chosen = os.environ.get(variable)
    if chosen:
        return chosen if Path(chosen).exists() else None
    return default if Path(default).exists() else shutil.which(name)


def _browser_or_skip() -> tuple[str, str]:
    chromium = _executable("QAGEN_CHROMIUM", "/usr/bin/chromium", "chromium")
    driver = _executable("QAGEN_CHROMEDRIVER", "/usr/bin/chromedriver", "chromedriver")
    missing = [
        what
        for what, found in (
            ("chromium (QAGEN_CHROMIUM)", chromium),
            ("chromedriver (QAGEN_CHROMEDRIVER)", driver),
            ("selenium (pip install selenium)", importlib.util.find_spec("selenium")),
        )
        if not found
    ]
    if missing:
        message = f"the browser test needs {', '.join(missing)}"
        if os.environ.get("QAGEN_REQUIRE_BROWSER") == "1":
            pytest.fail(f"{message}; QAGEN_REQUIRE_BROWSER=1 says it must run here")
        pytest.skip(message)
    assert chromium is not None and driver is not None
    return chromium, driver


@pytest.fixture()
def browser(tmp_path: Path) -> Iterator[Any]:
    chromium, driver_path = _browser_or_skip()
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service

    options = webdriver.ChromeOptions()
    options.binary_location = chromium
    for flag in CHROMIUM_FLAGS:
        options.add_argument(flag)
    options.add_argument(f"--user-data-dir={tempfile.mkdtemp(dir=tmp_path, prefix='chromium-')}")
    driver = webdriver.Chrome(service=Service(driver_path), options=options)
    try:
        yield driver
    finally:
        driver.quit()


@pytest.fixture(scope="module")
def reviewed(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Reviewed]:
    if os.environ.get("QAGEN_REQUIRE_BROWSER") != "1":
        _browser_or_skip()  # before the build: no run is made for a test that cannot run
    with build_and_evaluate(tmp_path_factory.mktemp("page")) as built:
        yield built


def _wait(driver: Any, condition: Any) -> Any:
    from selenium.webdriver.support.ui import WebDriverWait

    return WebDriverWait(driver, WAIT).until(condition)


def _at_item(driver: Any, number: int) -> str:
    """Wait until the page shows item `number` (1-based); its draft id."""
    from selenium.webdriver.common.by import By

    def shown(d: Any) -> str | bool:
        main = d.find_element(By.ID, "review")
        return main.get_attribute("data-index") == str(number) and main.get_attribute("data-item-id")

    item_id: str = _wait(driver, shown)
    return item_id


def _press(driver: Any, *keys: str, shift: bool = False) -> None:
    from selenium.webdriver.common.action_chains import ActionChains
    from selenium.webdriver.common.keys import Keys

    chain = ActionChains(driver)
    if shift:
        chain.key_down(Keys.SHIFT)
    for key in keys:
        chain.send_keys(key)
    if shift:
        chain.key_up(Keys.SHIFT)
    chain.perform()


def _save(driver: Any) -> None:
    """Enter, and wait until the label is saved (the critics' verdicts are then on the page)."""
    from selenium.webdriver.common.by import By
    from selenium.webdriver.common.keys import Keys

    _press(driver, Keys.ENTER)
    _wait(driver, lambda d: d.find_element(By.ID, "message").text.startswith("saved"))


def test_three_items_labelled_with_the_keyboard_are_kept_across_a_reload(
    reviewed: Reviewed, browser: Any, tmp_path: Path
) -> None:
    from selenium.webdriver.common.by import By
    from selenium.webdriver.common.keys import Keys

    run = Path(shutil.copytree(reviewed.run, tmp_path / "run"))
    items, thresholds = open_items(run, size=12, seed=0)
    critiques = critiques_by_draft(run)
    with ReviewServer(ReviewSession(run, items, reviewer="ana", thresholds=thresholds)).start() as server:
        browser.get(server.url)
        expected: list[dict[str, Any]] = [
            # 1 once: groundedness passes; 2 twice: relevance passes, then fails; k: keep.
            {"keys": ["1", "2", "2", "k"], "criteria": {"groundedness": {"pass": True, "score": None},
             "relevance": {"pass": False, "score": None}}, "keep": True, "note": ""},
            # standalone chosen, scored 2 with Shift (below the run's threshold of 4: a fail), rejected, a note.
            {"keys": ["3"], "score": "2", "then": ["r", "n", "asks for <b>two</b> facts", Keys.ESCAPE],
             "criteria": {"standalone": {"pass": False, "score": 2}}, "keep": False,
             "note": "asks for <b>two</b> facts"},
            # 1 twice: groundedness fails; nothing else.
            {"keys": ["1", "1"], "criteria": {"groundedness": {"pass": False, "score": None}}, "keep": None,
             "note": ""},
        ]  # fmt: skip
        for number, wanted in enumerate(expected, start=1):
            item_id = _at_item(browser, number)
            assert item_id == items[number - 1].id
            # The critics the early stop skipped were asked for the sample: every item has all three.
            assert set(critiques[item_id]) == {"groundedness", "relevance", "standalone"}
            rationales = [c["rationale"] for c in critiques[item_id].values() if c["rationale"]]
            assert rationales
            # Before answering: no verdict, no critic's rationale anywhere in the page.
            assert browser.find_elements(By.CSS_SELECTOR, "[data-verdict]") == []
            assert not any(text in browser.page_source for text in rationales)
            _press(browser, *wanted["keys"])
            if "score" in wanted:
                _press(browser, wanted["score"], shift=True)
            _press(browser, *wanted.get("then", []))
            _save(browser)
            # After: every critic's verdict, its score and its rationale.
            shown = {
                row.get_attribute("data-verdict"): row.text
                for row in browser.find_elements(By.CSS_SELECTOR, "[data-verdict]")
            }
            assert set(shown) == {"groundedness", "relevance", "standalone"}
            for criterion, critique in critiques[item_id].items():
                assert shown[criterion].startswith(f"{criterion} {critique['score']} ")
                assert critique["rationale"] in shown[criterion]
            _press(browser, Keys.ENTER)  # Enter again: the next item
            _at_item(browser, number + 1)

        browser.refresh()
        assert _at_item(browser, 4) == items[3].id
        assert "3 of 12 labelled" in browser.find_element(By.ID, "progress-text").text

    saved = labels(run)
    assert [(line["item_id"], line["reviewer"], line["via"]) for line in saved] == [
        (item.id, "ana", "page") for item in items[:3]
    ]
    for line, wanted, item in zip(saved, expected, items, strict=False):
        assert (line["criteria"], line["keep"], line["note"]) == (wanted["criteria"], wanted["keep"], wanted["note"])
        assert line["prompt_hashes"] == item.prompt_hashes


HOSTILE = '<img src="x" onerror="window.pwned = true">'


def test_untrusted_text_is_shown_as_text_and_never_runs(browser: Any, tmp_path: Path) -> None:
    from selenium.webdriver.common.by import By

    from qagen.review.items import ReviewItem, Verdict, answer_spans

    chunk = f"Before {HOSTILE} the answer is <b>42</b>.\n<script>window.pwned = true</script>"
    spans, match = answer_spans(chunk, "<B>42</B>")
    verdict = Verdict(name="groundedness", score=2, rationale=HOSTILE, failure="", passes=False, threshold=">= 4")
    item = ReviewItem(
        kind="draft", id="d" * 20, source=HOSTILE, question=f"What is {HOSTILE}?", answer="<B>42</B>", chunk=chunk,
        spans=spans, match=match, verdicts=[verdict], prompt_hashes={"generation": "0" * 12},
    )  # fmt: skip
    # The run's critics and thresholds, as `open_items` gives them: the page lists those critics.
    thresholds = dict.fromkeys(CRITICS.names(), 4)
    with ReviewServer(ReviewSession(tmp_path, [item], reviewer="ana", thresholds=thresholds)).start() as server:
        browser.get(server.url)
        _at_item(browser, 1)
        assert browser.find_element(By.ID, "chunk").text == chunk
        assert [mark.text for mark in browser.find_elements(By.CSS_SELECTOR, "#chunk mark")] == ["<b>42</b>"]
        assert browser.find_element(By.ID, "question").text == f"What is {HOSTILE}?"
        _press(browser, "1", "1", "r")
        _save(browser)
        assert browser.find_element(By.CSS_SELECTOR, "[data-verdict] .rationale").text == HOSTILE
        # Nothing of it became markup, and nothing ran.
        assert browser.find_elements(By.CSS_SELECTOR, "main img, main script, main b, header img") == []
        assert browser.execute_script("return window.pwned === undefined")
    [line] = labels(tmp_path)
    assert (line["criteria"], line["keep"]) == ({"groundedness": {"pass": False, "score": None}}, False)


SCREENSHOT = Path(__file__).parents[2] / "docs" / "images" / "review_page.png"


def test_a_realistic_item_as_the_readme_shows_it(browser: Any, tmp_path: Path) -> None:
    """The screenshot of docs/review.md: a chunk of the bundled example corpus, answered, the critics shown.
    `QAGEN_WRITE_SCREENSHOT=1` writes it to docs/images/review_page.png; otherwise to a temp file."""
    from selenium.webdriver.common.by import By
    from selenium.webdriver.common.keys import Keys

    from qagen.review.items import ReviewItem, Verdict, answer_spans
    from qagen.review.labels import Label, LabelStore

    chunk = (Path(__file__).parents[2] / "examples" / "corpus" / "tides.md").read_text(encoding="utf-8").strip()
    answer = "the Bay of Fundy in Canada"
    spans, match = answer_spans(chunk, answer)
    verdicts = [
        Verdict(name="groundedness", score=5, rationale="The context states plainly that the Bay of Fundy in Canada "
                "has the largest tidal range in the world, so the question is answered without ambiguity.",
                failure="", passes=True, threshold=">= 4"),
        Verdict(name="relevance", score=3, rationale="A geography fact about one bay: of some use to readers "
                "learning about tides, but few users would need to ask it.", failure="", passes=False,
                threshold=">= 4"),
        Verdict(name="standalone", score=5, rationale="The question names everything it asks about and makes "
                "sense without the document.", failure="", passes=True, threshold=">= 4"),
    ]  # fmt: skip
    item = ReviewItem(
        kind="draft", id="3f2a9c41d07be5a86c12", source="tides.md",
        question="Which bay has the largest tidal range in the world?", answer=answer, chunk=chunk, spans=spans,
        match=match, verdicts=verdicts, prompt_hashes={"generation": "76fb9e4e0a97"},
    )  # fmt: skip
    # As it looks 12 items into a sample of 150: the others stand in for the rest of the sample.
    others = [item.model_copy(update={"id": f"{number:020x}"}) for number in range(149)]
    run = tmp_path / "run"
    run.mkdir()
    with LabelStore(run) as store:
        for done in others[:12]:
            store.append(Label(kind="draft", item_id=done.id, reviewer="ana", keep=True, via="page"))
    thresholds = {"groundedness": 4, "relevance": 4, "standalone": 4}
    session = ReviewSession(run, [*others[:12], item, *others[12:]], reviewer="ana", thresholds=thresholds)
    with ReviewServer(session).start() as server:
        browser.set_window_size(1200, 1000)
        browser.get(server.url)
        assert _at_item(browser, 13) == item.id
        assert [mark.text for mark in browser.find_elements(By.CSS_SELECTOR, "#chunk mark")] == [
            "The Bay of Fundy in Canada"
        ]
        assert "other case or spacing" in browser.find_element(By.ID, "match").text
        # groundedness passes; relevance chosen, then scored 4 with Shift (a pass at the threshold);
        # standalone passes; keep; a note.
        _press(browser, "1", "2")
        _press(browser, "4", shift=True)
        _press(browser, "3", "k", "n", "Fine for a tides FAQ.", Keys.ESCAPE)
        _save(browser)
        disagreement = browser.find_element(By.CSS_SELECTOR, '[data-verdict="relevance"]')
        assert "disagree" in (disagreement.get_attribute("class") or "")
        target = SCREENSHOT if os.environ.get("QAGEN_WRITE_SCREENSHOT") == "1" else tmp_path / "review_page.png"
        target.parent.mkdir(parents=True, exist_ok=True)
        browser.execute_script("document.activeElement.blur(); window.scrollTo(0, 0)")
        assert "13 of 150 labelled" in browser.find_element(By.ID, "progress-text").text
        assert browser.save_screenshot(str(target))
    from PIL import Image  # matplotlib's dependency, in the test extra

    # 256 colours: a third of the size, the text as sharp (a page has few colours besides its grey ramps).
    with Image.open(target) as shot:
        assert shot.width == 1200
        shot.convert("RGB").quantize(colors=256).save(target, optimize=True)
    line = labels(run)[-1]
    assert line["item_id"] == item.id
    assert line["criteria"] == {
        "groundedness": {"pass": True, "score": None},
        "relevance": {"pass": True, "score": 4},
        "standalone": {"pass": True, "score": None},
    }
    assert (line["keep"], line["note"]) == (True, "Fine for a tides FAQ.")
    assert target.stat().st_size < 200_000
