"""The ``paysdk`` command line: merchant calls, the callback listener, the reference server's control plane.

Entry point: :func:`paysdk_cli.main.run`. Heavy libraries (httpx, pydantic, rich, keyring, platformdirs and
the ``paysdk`` package itself) are imported inside commands, so ``paysdk --help`` costs little more than
importing typer.
"""
