"""The jobsync command line's own modules, beside the library (``pip install .`` installs both).

The Lambda layer does not ship them: nothing here runs in a function.
"""
