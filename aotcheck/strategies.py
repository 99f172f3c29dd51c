"""``aotcheck.strategies``: the public name of the fuzzer's hypothesis strategies.

They live in :mod:`aotcheck.fuzz.strategies`; this module re-exports them, so
``from aotcheck.strategies import programs`` keeps working.
"""
from .fuzz.strategies import programs

__all__ = ["programs"]
