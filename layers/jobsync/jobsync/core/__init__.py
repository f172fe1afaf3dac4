"""The pure core: what one look at a job decides, with no I/O.

No module here imports boto3 or the kubernetes client (an import-linter contract in
pyproject.toml holds them to it); time is an argument, so the tests need no clock.
"""
