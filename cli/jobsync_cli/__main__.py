"""``python -m jobsync``: the same as the ``jobsync`` command."""

import sys

from jobsync.cli import main

sys.exit(main())
