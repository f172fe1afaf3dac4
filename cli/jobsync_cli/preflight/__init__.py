"""``jobsync preflight``: is this account and cluster ready for the stack, before and after ``sam deploy``?

One line per check, ``ok`` or the exact command that fixes it (``jobsync_cli.preflight.report``).
"""
