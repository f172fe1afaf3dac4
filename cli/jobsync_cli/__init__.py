"""jobsync's terminal client: ``jobsync evaluate``, ``preflight``, ``run``, ``status``, ``list``, ``wait``,
``logs``, ``stop``, ``submit``.

It ships with ``pip install .`` beside the library, never in the Lambda layer:
``main`` (the parser and the commands), ``follow`` (starting and following an
execution from its history), ``input_file`` (a JSON or YAML document read
within the bounds an execution accepts), ``preflight`` (a deployment's
prerequisites checked, each with the command that fixes it), and one module per
daily command (``wait``, ``logs``, ``stop``, ``submit``; ``runjobs`` and
``live`` follow a RunJobs run job by job).
"""
