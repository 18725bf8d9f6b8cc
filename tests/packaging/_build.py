"""The wheel and sdist as CI and a release build them, for the packaging tests and the footprint bench.

``python -m build`` makes the sdist and, from it, the wheel, in an isolated build environment.
:func:`build_dist` returns both files; :func:`make_venv` makes a fresh virtual environment and installs
a requirement into it with this interpreter's pip (its dependencies from the package index, pip's cache
making a second run quick); :func:`clean_env` is the environment a child process gets so that nothing
puts this source tree on its path.
"""

from __future__ import annotations

import os
import subprocess
import sys
import zipfile
from dataclasses import dataclass
from email.message import Message
from email.parser import Parser
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
BUILD_TIMEOUT = 600
INSTALL_TIMEOUT = 600


@dataclass(frozen=True)
class Dist:
    wheel: Path
    sdist: Path

    def _message(self) -> Message:
        with zipfile.ZipFile(self.wheel) as wheel:
            (name,) = [n for n in wheel.namelist() if n.endswith(".dist-info/METADATA")]
            return Parser().parsestr(wheel.read(name).decode())

    def metadata(self) -> dict[str, list[str]]:
        """The wheel's ``METADATA`` fields, each with every value it has."""
        fields: dict[str, list[str]] = {}
        for key, value in self._message().items():
            fields.setdefault(key, []).append(value)
        return fields

    def description(self) -> str:
        """The long description (the body of ``METADATA``): what the index shows on the package page."""
        payload = self._message().get_payload()
        assert isinstance(payload, str)
        return payload

    @property
    def name(self) -> str:
        """The distribution's name as the wheel declares it (``Name:``), what ``pip install`` takes."""
        return self.metadata()["Name"][0]


def clean_env(**extra: str) -> dict[str, str]:
    """The environment without anything that would put this source tree on a child's path."""
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "VIRTUAL_ENV", "PYTHONHOME")}
    env["PIP_NO_INPUT"] = "1"
    env.update(extra)
    return env


def build_dist(out: Path) -> Dist:
    """Build the sdist and, from it, the wheel into ``out``; fail with the build's output if it fails."""
    proc = subprocess.run(
        [sys.executable, "-m", "build", "--outdir", str(out), str(ROOT)],
        capture_output=True,
        text=True,
        timeout=BUILD_TIMEOUT,
        env=clean_env(),
    )
    if proc.returncode != 0:
        raise RuntimeError(f"python -m build failed:\n{proc.stdout[-3000:]}{proc.stderr[-3000:]}")
    wheels = list(out.glob("*.whl"))
    sdists = list(out.glob("*.tar.gz"))
    if len(wheels) != 1 or len(sdists) != 1:
        raise RuntimeError(f"expected one wheel and one sdist in {out}: {sorted(out.iterdir())}")
    return Dist(wheel=wheels[0], sdist=sdists[0])


def make_venv(path: Path, requirement: str, *, compile_bytecode: bool = False) -> Path:
    """A fresh virtual environment at ``path`` with ``requirement`` installed; its ``bin`` directory.

    The environment has no pip of its own (``--without-pip``): this interpreter's pip installs into it
    (``--python``), so its ``site-packages`` holds the requirement and its dependencies only.
    """
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(path)], check=True, timeout=120)
    pip_install(path, requirement, compile_bytecode=compile_bytecode)
    return path / "bin"


def pip_install(venv: Path, requirement: str, *, compile_bytecode: bool = False) -> None:
    """Install ``requirement`` into the environment at ``venv``; fail with pip's output if it fails.

    ``compile_bytecode``: byte-compile every installed module as pip does by default (what a user's
    install holds: the footprint benchmark). The tests install with ``--no-compile``: the modules a test
    imports are compiled as it imports them, and compiling every installed module up front (SQLAlchemy,
    pydantic, FastAPI...) was a third of an install's CPU."""
    python = str(venv / "bin" / "python")
    compiling = [] if compile_bytecode else ["--no-compile"]
    proc = subprocess.run(
        [sys.executable, "-m", "pip", "--python", python, "install", "-q", *compiling, requirement],
        capture_output=True,
        text=True,
        timeout=INSTALL_TIMEOUT,
        env=clean_env(),
    )
    if proc.returncode != 0:
        raise RuntimeError(f"pip install {requirement} failed:\n{proc.stderr[-3000:]}")
