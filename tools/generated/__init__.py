"""Files and doc sections generated from their source of truth, each with a check that fails on drift.

``python -m tools.generated`` (``make generated``) rewrites them all; ``--check`` only compares and
names what drifted. tests/unit/test_generated.py runs the same comparisons.
"""
