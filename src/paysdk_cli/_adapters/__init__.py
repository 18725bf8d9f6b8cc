"""The command line's one reach into each library's private parts (D530, D532): :mod:`.typer`."""
