"""Draw the README's picture of the Space demo: serve an exported model's Space on loopback, translate one sentence in
headless Chromium and save the screenshot.

    python scripts/space_screenshot.py runs/demo_ja_en/exported --sentence "彼は医者です。" --out docs/space_demo.png
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import tempfile
from pathlib import Path

from hf_syntax.serving import browser
from hf_syntax.serving.space import write_space


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("model", type=Path, help="an exported model folder (hf-syntax export)")
    parser.add_argument("--sentence", required=True, help="the sentence typed into the demo")
    parser.add_argument("--out", type=Path, default=Path("docs/space_demo.png"))
    parser.add_argument("--port", type=int, default=7861)
    options = parser.parse_args(argv)
    with tempfile.TemporaryDirectory() as scratch:
        space = write_space(Path(scratch) / "space", options.model.name, options.model, [options.sentence])
        app = subprocess.Popen([sys.executable, "app.py", "--model", str(options.model.resolve()),
                                "--port", str(options.port)], cwd=space, stdout=subprocess.DEVNULL,
                               stderr=subprocess.PIPE, text=True)
        driver = None
        try:
            url = f"http://127.0.0.1:{options.port}/"
            browser.wait_for_server(app, url)
            driver = browser.chromium_driver()
            page = browser.translate_in_browser(driver, url, options.sentence, options.out)
        except (browser.BrowserUnavailable, RuntimeError, TimeoutError) as error:
            print(f"error: {error}", file=sys.stderr)
            return 1
        finally:
            if driver is not None:
                driver.quit()
            app.terminate()
            app.wait(timeout=30)
    print(f"{options.out}: {options.sentence} -> {page.translation}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
