"""One execution's steps: ``submit``, ``poll`` and ``cleanup`` (over ``loop``), with the
``inputs`` they take, the ``manifests`` they prepare, the wait ``policy``, the pods'
``diagnostics`` and the ``execution_events`` of executions that ended elsewhere."""
