"""Take the screenshots of the sandbox console for docs/console.md (``docs/images/console-*.png``).

    PYTHONPATH=src python scripts/console_screenshots.py [--out docs/images]

Starts the reference server on a fresh SQLite file, fills it with data of every family through the SDK
(``tests/e2e/console_data.py``, the data the browser tests use), opens each console page in Chromium
(``/usr/bin/chromium``, headless) at 1280 px wide, and a transaction's page at 390 px too
(``console-transaction-390.png``), and writes each as a PNG reduced to a 256-colour palette so it stays
small (each under 150 KB). Each is the top of its page (at most 1280 x 900, 390 x 844 for the narrow
one), what a new user sees first.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
from pathlib import Path

from PIL import Image
from playwright.sync_api import FloatRect, ViewportSize, sync_playwright

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests"))
sys.path.insert(0, str(ROOT / "src"))

from e2e.conftest import CHROMIUM, CHROMIUM_ARGS  # noqa: E402
from e2e.console_data import CONSOLE, PAGES, ConsoleData, Receiver, fill_sandbox, serve  # noqa: E402

#: The size limit of each PNG (bytes).
MAX_BYTES = 150_000
WIDE = ViewportSize(width=1280, height=900)
NARROW = ViewportSize(width=390, height=844)
#: The pages also shot at 390 px.
NARROW_PAGES = ("transaction",)


def _shrink(path: Path) -> int:
    """Reduce the PNG at ``path`` to a 256-colour palette (lossless for the console's flat colours)."""
    with Image.open(path) as image:
        reduced = image.convert("RGB").quantize(
            colors=256, method=Image.Quantize.MEDIANCUT, dither=Image.Dither.NONE
        )
        reduced.save(path, optimize=True)
    return path.stat().st_size


def shoot(base_url: str, data: ConsoleData, out: Path) -> list[Path]:
    """Screenshot every page of :data:`PAGES` at 1280 px, and the first at 390 px, into ``out``."""
    out.mkdir(parents=True, exist_ok=True)
    written: list[Path] = []
    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS, headless=True)
        try:
            narrow = tuple(spec for spec in PAGES if spec.name in NARROW_PAGES)
            for name, viewport, pages in (("", WIDE, PAGES), ("-390", NARROW, narrow)):
                context = browser.new_context(viewport=viewport, locale="en-US")
                page = context.new_page()
                for spec in pages:
                    page.goto(base_url + spec.url(data) + "?lang=en", wait_until="load")
                    path = out / f"console-{spec.name}{name}.png"
                    content = int(page.evaluate("document.documentElement.scrollHeight"))
                    height = min(content, viewport["height"])
                    clip = FloatRect(x=0, y=0, width=viewport["width"], height=height)
                    page.screenshot(path=str(path), clip=clip)
                    size = _shrink(path)
                    if size > MAX_BYTES:
                        raise SystemExit(f"{path} is {size} bytes, over {MAX_BYTES}")
                    written.append(path)
                context.close()
        finally:
            browser.close()
    return written


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=ROOT / "docs" / "images")
    args = parser.parse_args(argv)
    receiver = Receiver()
    try:
        with tempfile.TemporaryDirectory() as folder, serve(f"sqlite:///{folder}/console.db") as url:
            data = fill_sandbox(url, receiver)
            for path in shoot(url, data, args.out):
                shown = path.relative_to(ROOT) if path.is_relative_to(ROOT) else path
                print(f"{shown}: {path.stat().st_size} bytes")
    finally:
        receiver.close()
    print(f"console at {CONSOLE}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
