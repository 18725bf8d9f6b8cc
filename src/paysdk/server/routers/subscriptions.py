"""Subscriptions on ``{base_url}/v1/subscriptions`` (spec 4.2; decisions D138-D165): HTTP only, the logic
is in :mod:`paysdk.server.services.subscriptions` (and ``batch_charges`` for the CSV upload)."""

from __future__ import annotations

from fastapi import APIRouter

__all__ = ["router"]

router = APIRouter(tags=["subscriptions"])
