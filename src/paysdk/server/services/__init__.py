"""Services of the reference server: the logic and storage of each API family (no HTTP here)."""
