"""What CreateStateMachine refuses that moto accepts: the checks a local run needs so that a
definition it runs is one AWS would create.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterator
from typing import Any

from botocore.exceptions import ClientError


def _states(machine: dict[str, Any], path: str) -> Iterator[tuple[str, str]]:
    """Every state's name and where it is, Map processors and Parallel branches included."""
    for name, state in machine.get("States", {}).items():
        yield name, f"{path}/States/{name}"
        for key in ("ItemProcessor", "Iterator"):
            if isinstance(state.get(key), dict):
                yield from _states(state[key], f"{path}/States/{name}/{key}")
        for index, branch in enumerate(state.get("Branches", [])):
            yield from _states(branch, f"{path}/States/{name}/Branches/{index}")


def check_definition(definition: dict[str, Any]) -> None:
    """Raise InvalidDefinition as CreateStateMachine does for a state name used twice.

    The Amazon States Language: state names "MUST be unique within the scope of the whole
    state machine", a Map's processor and a Parallel's branches included.
    """
    found = list(_states(definition, ""))
    counts = Counter(name for name, _ in found)
    duplicates = [f"'{name}' at {where}" for name, where in found if counts[name] > 1]
    if duplicates:
        names = ", ".join(duplicates)
        message = f"Invalid State Machine Definition: 'DUPLICATE_STATE_NAME: Duplicate State name: {names}'"
        raise ClientError({"Error": {"Code": "InvalidDefinition", "Message": message}}, "CreateStateMachine")
