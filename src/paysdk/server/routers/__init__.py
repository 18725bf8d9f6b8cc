"""HTTP routers of the reference server, one per API family (parsing and answers only; logic is in services).

Each router belongs to one family's registration (:data:`paysdk.server.families.FAMILIES`), which says
where it is mounted: base address ``/`` (payment links, alternative payments), ``/checkout`` (hosted
pages), ``/rest`` (wallet), ``/_sandbox`` (control plane); :func:`paysdk.server.app.create_app` mounts
what the registrations list.
"""
