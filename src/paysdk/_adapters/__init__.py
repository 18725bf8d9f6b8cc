"""The SDK's adapters: the only modules that touch private parts of httpx and httpcore (D530).

The SDK never imports server code; the server has its own adapters (:mod:`paysdk.server.adapters`).
"""
