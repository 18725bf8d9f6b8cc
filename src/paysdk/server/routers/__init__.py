"""HTTP routers of the reference server, one per API family (parsing and answers only; logic is in services).

Mounted by :func:`paysdk.server.app.create_app`: the public families from
:data:`paysdk.server.app.FAMILY_ROUTERS` (base address ``/``: payment links, alternative payments and the
hosted ``/checkout`` pages; wallet ``/rest``), and the control plane ``/_sandbox``. The backoffice
(``/cms/rest``) has no router yet.
"""
