"""Benchmarks, run by hand from the repository's root as modules: `python -m benchmarks.<name>`
(see `benchmarks/prelude.py`, which every one of them imports first)."""
