"""Tests of paysdk.testing: ASGI portal, sandbox server, callback inbox, seed and pytest plugin."""
