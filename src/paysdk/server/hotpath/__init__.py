"""The reference server's speed machinery, behind one seam: what makes the hot routes fast and nothing
else. :mod:`.lanes`: the fast lanes, the hot routes served as plain Starlette routes ahead of FastAPI's.
"""
