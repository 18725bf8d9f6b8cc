"""The built distribution, made once per test session and shared by the packaging tests."""

from __future__ import annotations

import pytest

from ._build import Dist, build_dist


@pytest.fixture(scope="session")
def dist(tmp_path_factory: pytest.TempPathFactory) -> Dist:
    """The sdist and the wheel, built by ``python -m build`` as CI builds them."""
    return build_dist(tmp_path_factory.mktemp("dist"))
