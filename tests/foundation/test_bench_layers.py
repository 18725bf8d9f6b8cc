"""``benchmarks/bench_layers.py`` (D768) names the server's ASGI layers as ``create_app`` stacks them, and
``benchmarks._servers.reference_app`` leaves out exactly the ones ``PAYSDK_BENCH_DROP`` names: the
ablation cannot drift from the app it measures."""

from __future__ import annotations

from pathlib import Path

import pytest
from benchmarks._servers import reference_app
from benchmarks.bench_layers import LAYERS, variants


def _layers(app: object) -> list[str]:
    return [
        m.cls.__name__
        for m in app.user_middleware  # type: ignore[attr-defined]
        if m.cls.__module__.startswith("paysdk.server.asgi.")
    ]


def _app(monkeypatch: pytest.MonkeyPatch, tmp_path: Path, drop: str) -> object:
    monkeypatch.setenv("PAYSDK_BENCH_DB", f"sqlite:///{tmp_path / 'bench.db'}")
    monkeypatch.setenv("PAYSDK_BENCH_DROP", drop)
    app = reference_app()
    app.state.paysdk.db.dispose()
    return app


def test_the_layers_are_the_apps_outermost_first(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    assert _layers(_app(monkeypatch, tmp_path, "")) == list(LAYERS)


def test_a_variant_leaves_out_exactly_its_layers(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    assert variants()["without all eight"] == LAYERS
    kept = _layers(_app(monkeypatch, tmp_path, "RequestLog,Faults"))
    assert kept == [layer for layer in LAYERS if layer not in ("RequestLog", "Faults")]
    assert _layers(_app(monkeypatch, tmp_path, ",".join(LAYERS))) == []
