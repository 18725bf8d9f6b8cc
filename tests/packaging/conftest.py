"""The built distribution, made once per test session and shared by the packaging tests."""

from __future__ import annotations

from pathlib import Path

import pytest

from ._build import Dist, build_dist


@pytest.fixture(scope="session")
def dist(tmp_path_factory: pytest.TempPathFactory) -> Dist:
    """The sdist and the wheel, built by ``python -m build`` as CI builds them."""
    return build_dist(tmp_path_factory.mktemp("dist"))


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Under ``pytest -n`` (``--dist loadgroup``) the tests that use the built distribution run on one
    worker, so it is built once, not once per worker."""
    here = Path(__file__).parent
    for item in items:
        if item.path.is_relative_to(here) and "dist" in getattr(item, "fixturenames", ()):
            item.add_marker(pytest.mark.xdist_group("packaging-dist"))
