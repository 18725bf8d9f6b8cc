"""One module per command family; each exposes a typer app that ``paysdk_cli.main`` loads lazily."""
