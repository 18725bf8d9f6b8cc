"""Tests of paysdk.callbacks (the merchant-side callback receiver)."""
