"""The python3.11 runtime: AWS's runtime interface client (awslambdaric) runs the handler named by _HANDLER.

Lambda's search path for a Python function: the function's code, then its layers' python/lib/python3.11/
site-packages and python/, then the runtime (this folder, first on sys.path as the script's own).
"""

import os
import sys

task_root = os.environ.get("LAMBDA_TASK_ROOT", "/var/task")
sys.path[0:0] = [task_root, "/opt/python/lib/python3.11/site-packages", "/opt/python"]

from awslambdaric.__main__ import main  # noqa: E402

main([sys.argv[0], os.environ["_HANDLER"]])
