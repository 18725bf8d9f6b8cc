"""HTTP routers of the reference server, one per API family (parsing and answers only; logic is in services).

Mounted by :func:`paysdk.server.app.create_app`: base address ``/`` (payment links, alternative payments),
``/checkout`` (hosted pages), ``/_sandbox`` (control plane). Wallet (``/rest``) and backoffice
(``/cms/rest``) routers are added to :data:`paysdk.server.app.FAMILY_ROUTERS` when those families land.
"""
