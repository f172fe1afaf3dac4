"""``python -m jobsync_cli``: the same as the ``jobsync`` command."""

import sys

from jobsync_cli.main import main

sys.exit(main())
