"""Use a running Space demo as a person does, in headless Chromium: type a sentence, press Translate, read what the
page shows. The browser test asserts on what this returns; ``scripts/space_screenshot.py`` keeps the picture for the
README. Chromium and its driver come from Debian (no browser download at run time), selenium from PyPI.
"""

from __future__ import annotations

import json
import os
import time
import urllib.request
from dataclasses import dataclass
from pathlib import Path

CHROMIUM, CHROMEDRIVER = Path("/usr/bin/chromium"), Path("/usr/bin/chromedriver")
BROWSER_INSTALL = "apt-get install -y chromium chromium-driver (as root; .ci/run does it)"
SELENIUM_INSTALL = "pip install -e '.[dev]' (the dev extra, which scripts/bootstrap.sh installs, carries it)"


class BrowserUnavailable(RuntimeError):
    """Chromium, its driver or selenium is missing; the message is the install command."""


@dataclass
class PageReading:
    """What the page showed after one translation."""

    heading: str
    """The page's title line (the model's readable name)."""
    translation: str
    tree_words: list[str]
    """The words of the drawn source tree (the tree the model was given); empty when the model reads none."""
    predicted_tree_note: str
    """The text of the predicted-tree panel (DBSA's own tree, or why there is none)."""
    requested_urls: list[str]
    """Every URL the page requested, to check that nothing left loopback."""


def chromium_driver(window: tuple[int, int] = (1200, 1300)):
    """A headless Chromium that never fetches a browser, a driver or component updates."""
    if not (CHROMIUM.is_file() and CHROMEDRIVER.is_file()):
        raise BrowserUnavailable(f"needs Debian's chromium and its driver: {BROWSER_INSTALL}")
    try:
        from selenium import webdriver
    except ImportError as error:
        raise BrowserUnavailable(f"needs selenium: {SELENIUM_INSTALL}") from error
    os.environ.setdefault("SE_OFFLINE", "true")  # selenium-manager must never try to download a browser or driver
    options = webdriver.ChromeOptions()
    options.binary_location = str(CHROMIUM)
    for argument in ("--headless=new", "--no-sandbox", "--disable-dev-shm-usage", f"--window-size={window[0]},{window[1]}",
                     "--disable-background-networking", "--disable-component-update", "--no-first-run"):
        options.add_argument(argument)
    options.set_capability("goog:loggingPrefs", {"performance": "ALL"})
    return webdriver.Chrome(options=options, service=webdriver.ChromeService(executable_path=str(CHROMEDRIVER)))


def wait_for_server(process, url: str, timeout: float = 600) -> None:
    """Wait until the app answers on ``url`` (it loads the model and, for feature models, the parser first)."""
    deadline = time.monotonic() + timeout
    opener = urllib.request.build_opener(urllib.request.ProxyHandler({}))
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise RuntimeError(f"the app exited with {process.returncode}:\n{process.stderr.read()[-4000:]}")
        try:
            with opener.open(url, timeout=5) as response:
                if response.status == 200:
                    return
        except OSError:
            time.sleep(1)
    raise TimeoutError(f"the app did not answer on {url} within {timeout} s")


def _click_once_free(*locator):
    """A wait condition that clicks the element as soon as nothing covers it (gradio lays a loading overlay over the
    page while it starts; a person waits for it too)."""
    from selenium.common.exceptions import ElementClickInterceptedException

    def click(page):
        try:
            page.find_element(*locator).click()
        except ElementClickInterceptedException:
            return False
        return True

    return click


def translate_in_browser(driver, url: str, sentence: str, screenshot: Path, timeout: float = 300) -> PageReading:
    """Open the demo at ``url``, translate ``sentence``, wait for the tree and the heat map, save a screenshot."""
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support.ui import WebDriverWait

    driver.get(url)
    wait = WebDriverWait(driver, timeout)
    wait.until(lambda page: page.find_element(By.CSS_SELECTOR, "#source textarea")).send_keys(sentence)
    wait.until(_click_once_free(By.CSS_SELECTOR, "#run"))
    translation = wait.until(lambda page: page.find_element(By.CSS_SELECTOR, "#translation textarea")
                             .get_attribute("value"))
    heat_map = wait.until(lambda page: page.find_elements(By.CSS_SELECTOR, "#attention img"))
    wait.until(lambda page: heat_map[0].get_attribute("naturalWidth") not in (None, "0"))
    # The tree arrives with the heat map; a model that reads no tree shows a note there instead of a drawing.
    tree_words = [element.text for element in driver.find_elements(By.CSS_SELECTOR, "#given-tree svg text tspan")]
    note = driver.find_element(By.CSS_SELECTOR, "#predicted-tree").text
    heading = driver.find_element(By.CSS_SELECTOR, "h1").text
    driver.execute_script("document.body.style.zoom = '0.8'")
    driver.save_screenshot(str(screenshot))
    requested = []
    for entry in driver.get_log("performance"):
        message = json.loads(entry["message"])["message"]
        if message["method"] == "Network.requestWillBeSent":
            requested.append(message["params"]["request"]["url"])
    return PageReading(heading, translation, tree_words, note, requested)
