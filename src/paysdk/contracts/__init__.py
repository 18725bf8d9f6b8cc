"""Wire contracts: the pydantic models of each API family, shared by the SDK and the reference server.

One module per family. Field names are snake_case in Python and camelCase (the spec's names) on the wire;
``model_dump(by_alias=True)`` gives the wire form. Money fields are ``Decimal``; parse bodies with
:func:`paysdk._json.loads` so no float ever appears.
"""
