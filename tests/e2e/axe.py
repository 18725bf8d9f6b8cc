"""axe-core, the accessibility engine, from the npm registry, run inside a page by a browser test (D740).

:func:`axe_source` answers the text of ``axe.min.js`` of the pinned :data:`AXE_VERSION`. The first call
on a machine fetches the package with ``npm pack`` into a cache directory outside the repository
(``$PAYSDK_AXE_CACHE``, default ``$XDG_CACHE_HOME/paysdk/axe-core`` or ``~/.cache/paysdk/axe-core``),
checks the tarball against the registry's pinned :data:`AXE_INTEGRITY` (SHA-512) and keeps only
``axe.min.js``; later runs read the cached file. No network and no cache is a test FAILURE naming the
command to run, never a skip: an accessibility check that silently did not run proves nothing.

:func:`axe_violations` injects axe into a Playwright page and answers its violations of the given
impacts. A page whose Content-Security-Policy forbids inline scripts (the console's does) refuses the
injected script, so callers run axe in a browser context made with ``bypass_csp=True``, and check the
CSP itself in a normal context.
"""

from __future__ import annotations

import base64
import hashlib
import io
import os
import shutil
import subprocess
import tarfile
import tempfile
from pathlib import Path
from typing import Any

import pytest
from playwright.sync_api import Page

__all__ = ["AXE_INTEGRITY", "AXE_VERSION", "axe_source", "axe_violations", "describe"]

AXE_VERSION = "4.14.1"
#: ``npm view axe-core@4.14.1 dist.integrity``: the tarball fetched must be exactly this one.
AXE_INTEGRITY = (
    "sha512-FHfa+lmNjQZfJz1q8wKqIDwC6DExcHt/pkjNQb09a3NPjCKg2rhu5qb2S4r76ASyFNNtuFooJpZe37OgudVGtQ=="
)
#: The impacts that fail a test.
SERIOUS = ("serious", "critical")


def _cache_dir() -> Path:
    if explicit := os.environ.get("PAYSDK_AXE_CACHE"):
        return Path(explicit)
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "paysdk" / "axe-core"


def _integrity(data: bytes) -> str:
    return "sha512-" + base64.b64encode(hashlib.sha512(data).digest()).decode()


def _fetch(target: Path) -> None:
    npm = shutil.which("npm")
    if npm is None:
        pytest.fail(
            f"axe-core {AXE_VERSION} is not cached at {target} and npm is not installed: install Node.js "
            f"and npm, or place axe.min.js of axe-core@{AXE_VERSION} there",
            pytrace=False,
        )
    with tempfile.TemporaryDirectory() as folder:
        done = subprocess.run(
            [npm, "pack", f"axe-core@{AXE_VERSION}", "--pack-destination", folder, "--silent"],
            capture_output=True,
            text=True,
            timeout=180,
            check=False,
        )
        tarballs = list(Path(folder).glob("axe-core-*.tgz"))
        if done.returncode != 0 or len(tarballs) != 1:
            pytest.fail(
                f"could not fetch axe-core@{AXE_VERSION} from the npm registry (is this machine offline?): "
                f"`npm pack axe-core@{AXE_VERSION}` said: {(done.stderr or done.stdout).strip()[-500:]}. "
                f"Run it once with network access, or place axe.min.js at {target}",
                pytrace=False,
            )
        data = tarballs[0].read_bytes()
    if (found := _integrity(data)) != AXE_INTEGRITY:
        pytest.fail(f"axe-core@{AXE_VERSION} from npm has integrity {found}, expected {AXE_INTEGRITY}")
    with tarfile.open(fileobj=io.BytesIO(data), mode="r:gz") as archive:
        member = archive.extractfile("package/axe.min.js")
        assert member is not None, "axe-core's tarball has no package/axe.min.js"
        script = member.read()
    target.parent.mkdir(parents=True, exist_ok=True)
    partial = target.with_suffix(".part")
    partial.write_bytes(script)
    partial.replace(target)  # atomic: a parallel worker reads a whole file or none


def axe_source() -> str:
    """The text of ``axe.min.js`` of axe-core :data:`AXE_VERSION`, fetched once with npm (module doc)."""
    target = _cache_dir() / AXE_VERSION / "axe.min.js"
    if not target.exists():
        _fetch(target)
    return target.read_text(encoding="utf-8")


def axe_violations(page: Page, source: str, impacts: tuple[str, ...] = SERIOUS) -> list[dict[str, Any]]:
    """Run axe on ``page`` (already loaded; its context made with ``bypass_csp=True``) against the WCAG 2
    A/AA rules and best practices; answer the violations whose impact is in ``impacts``."""
    page.add_script_tag(content=source)
    result: dict[str, Any] = page.evaluate(
        """async () => await axe.run(document, {
            runOnly: {type: 'tag', values: ['wcag2a', 'wcag2aa', 'wcag21a', 'wcag21aa', 'best-practice']},
            resultTypes: ['violations'],
        })"""
    )
    return [v for v in result["violations"] if v.get("impact") in impacts]


def describe(violations: list[dict[str, Any]]) -> str:
    """A readable list of violations: rule, impact, help, and the first nodes' selectors and HTML."""
    lines = []
    for violation in violations:
        lines.append(
            f"- {violation['id']} ({violation['impact']}): {violation['help']} [{violation['helpUrl']}]"
        )
        for node in violation["nodes"][:5]:
            lines.append(f"    {node['target']}: {node['html'][:200]}")
    return "\n".join(lines)
