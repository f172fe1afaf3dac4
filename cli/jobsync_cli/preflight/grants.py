"""What the functions and the notifier must be allowed in the cluster: every (verb, API group, resource)
the code calls, for a stack's AllowedKinds and CompletionMode.

The chart (charts/jobsync) renders the Roles that grant them; this is the list they are checked
against, by the tests (tests/integration/test_rbac.py derives it from the requests the functions make,
tests/integration/test_chart.py compares the chart's Roles with it) and by ``jobsync preflight`` on a
live cluster (a SubjectAccessReview per grant).
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from jobsync.evaluation.kinds import KindSpec

#: Why the functions call each verb on the job kinds.
JOB_VERBS = {
    "create": "submit",
    "get": "status; submit (adopt its own job after a 409); cleanup",
    "list": "cleanup: names the jobs labelled for an execution whose Submit never answered (deletes none)",
    "delete": "cleanup, by the uid Submit returned",
}
WATCH = "status in watch mode: holds a watch on the job"
OWNER = "status: is a pod really the job's? (its owner references, through this object)"
POD_GRANTS = (
    ("list", "", "pods", "status: the job's pods, for diagnostics and the result"),
    ("get", "", "pods/log", "status: the log tail of a failed container"),
    ("list", "", "events", "status: the events of a stuck pod (is capacity coming? can its image be pulled?)"),
)
NOTIFIER_VERBS = {"list": "the notifier: lists the jobs on start and after a 410", "watch": "the notifier"}


@dataclass(frozen=True, order=True)
class Grant:
    verb: str
    group: str
    resource: str
    used_by: str = field(default="", compare=False)

    def key(self) -> tuple[str, str, str]:
        return (self.verb, self.group, self.resource)

    def __str__(self) -> str:
        return f"{self.verb} {self.resource}" + (f".{self.group}" if self.group else "")


def functions(kinds: Iterable[KindSpec], completion_mode: str = "poll") -> list[Grant]:
    """The functions' grants (bound to the stack's KubernetesGroup)."""
    kinds = [k for k in kinds if k.plural]
    verbs = dict(JOB_VERBS)
    if completion_mode == "watch":
        verbs["watch"] = WATCH
    grants = {Grant(verb, k.group, k.plural or "", why) for k in kinds for verb, why in verbs.items()}
    allowed = {(k.group, k.plural) for k in kinds}
    grants |= {
        Grant("get", part.group, part.plural or "", OWNER)
        for k in kinds
        for part in k.owners
        if (part.group, part.plural) not in allowed
    }
    grants |= {Grant(*grant) for grant in POD_GRANTS}
    return sorted(grants)


def notifier(kinds: Iterable[KindSpec]) -> list[Grant]:
    """The notifier's grants (its ServiceAccount jobsync-notifier)."""
    return sorted(
        {Grant(verb, k.group, k.plural or "", why) for k in kinds if k.plural for verb, why in NOTIFIER_VERBS.items()}
    )


def of_role(role: dict[str, Any]) -> set[tuple[str, str, str]]:
    """The (verb, group, resource) a rendered Role grants."""
    return {
        (verb, group, resource)
        for rule in role.get("rules") or []
        for verb in rule["verbs"]
        for group in rule["apiGroups"]
        for resource in rule["resources"]
    }
