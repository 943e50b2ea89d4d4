"""Screenshot the emulator's page once it has rendered (README "### The page").

Usage::

    python scripts/screenshot_page.py "http://127.0.0.1:PORT/#CHANNEL_ID" docs/emulator-page.png

Headless Chromium (``bash scripts/install_browser.sh``) opens the page and the picture is taken
when the page says it is ready (``<body data-ready="true">``: channels listed, the selected
channel's messages rendered) and ``--wait-for`` matches (default: a rendered message), never
after a fixed sleep, so a slow machine gets the same picture. Exits 1 naming what never came.
"""

from __future__ import annotations

import argparse
import shutil
import sys
import time
from pathlib import Path

from selenium import webdriver
from selenium.webdriver.chrome.service import Service

READY = "return document.body && document.body.dataset.ready === 'true'"
COUNT = "return document.querySelectorAll(arguments[0]).length"
FLAGS = ("--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage", "--no-first-run")


def _until(driver: webdriver.Chrome, script: str, *args: object, timeout: float, what: str) -> object:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = driver.execute_script(script, *args)
        if value:
            return value
        time.sleep(0.05)  # polling the page, not waiting for it: the condition decides
    raise TimeoutError(f"the page never showed {what} within {timeout:g} s")


def capture(
    driver: webdriver.Chrome, url: str, out: Path, *, wait_for: str = "#messages .msg", timeout: float = 30.0
) -> int:
    """Open *url*, wait for ``data-ready`` and *wait_for*, save the PNG; returns how many matched."""
    driver.get(url)
    _until(driver, READY, timeout=timeout, what='<body data-ready="true">')
    count = _until(driver, COUNT, wait_for, timeout=timeout, what=f"an element matching {wait_for!r}")
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_bytes(driver.get_screenshot_as_png())
    return int(str(count))


def _driver(width: int, height: int) -> webdriver.Chrome:
    options = webdriver.ChromeOptions()
    binary = shutil.which("chromium") or shutil.which("chromium-browser")
    if binary:
        options.binary_location = binary
    for flag in (*FLAGS, f"--window-size={width},{height}"):
        options.add_argument(flag)
    driver = shutil.which("chromedriver")
    service = Service(executable_path=driver) if driver else Service()
    return webdriver.Chrome(options=options, service=service)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("url", help="the page's address, e.g. http://127.0.0.1:PORT/#CHANNEL_ID")
    parser.add_argument("out", type=Path, help="where to write the PNG")
    parser.add_argument("--wait-for", default="#messages .msg", help="a CSS selector that must match")
    parser.add_argument("--timeout", type=float, default=30.0, help="seconds before giving up")
    parser.add_argument("--size", default="1400x900", help="the window, WIDTHxHEIGHT")
    args = parser.parse_args(argv)
    width, height = (int(part) for part in args.size.split("x", 1))
    driver = _driver(width, height)
    try:
        count = capture(driver, args.url, args.out, wait_for=args.wait_for, timeout=args.timeout)
    except TimeoutError as exc:
        print(f"screenshot_page: {exc}", file=sys.stderr)
        return 1
    finally:
        driver.quit()
    print(f"{args.out}: {count} element(s) matching {args.wait_for!r}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
