"""Reading why a job is stuck or failed from pod objects as the API returns them."""

from __future__ import annotations

from jobsync.core.diagnostics import MAX_FINDINGS, failed_container, pod_findings, stuck_reason, tail


def pod(name, phase="Pending", conditions=(), containers=()):
    return {
        "metadata": {"name": name},
        "status": {"phase": phase, "conditions": list(conditions), "containerStatuses": list(containers)},
    }


# Shapes as kubectl get pod -o json shows them for these failures.
IMAGE_PULL = pod(
    "j-master-0",
    containers=[
        {
            "name": "pytorch",
            "ready": False,
            "state": {
                "waiting": {"reason": "ImagePullBackOff", "message": 'Back-off pulling image "bad/image:latest"'}
            },
        }
    ],
)
UNSCHEDULABLE = pod(
    "j-worker-0",
    conditions=[
        {
            "type": "PodScheduled",
            "status": "False",
            "reason": "Unschedulable",
            "message": "0/3 nodes are available: 3 Insufficient nvidia.com/gpu.",
        }
    ],
)
CRASHED = pod(
    "j-worker-1",
    phase="Failed",
    containers=[{"name": "pytorch", "state": {"terminated": {"reason": "Error", "exitCode": 1}}}],
)
OOM_RESTARTED = pod(
    "j-worker-2",
    phase="Running",
    containers=[
        {
            "name": "pytorch",
            "state": {
                "waiting": {"reason": "CrashLoopBackOff", "message": "back-off 5m0s restarting failed container"}
            },
            "lastState": {"terminated": {"reason": "OOMKilled", "exitCode": 137}},
        }
    ],
)
HEALTHY = pod("j-master-1", phase="Running", containers=[{"name": "pytorch", "state": {"running": {}}}])


def test_each_cause_is_reported_with_its_reason():
    findings = pod_findings([HEALTHY, IMAGE_PULL, UNSCHEDULABLE, CRASHED, OOM_RESTARTED])
    assert [(f["pod"], f["reason"]) for f in findings] == [
        ("j-master-0", "ImagePullBackOff"),
        ("j-worker-0", "Unschedulable"),
        ("j-worker-1", "Error"),
        ("j-worker-2", "CrashLoopBackOff"),
    ]
    assert findings[1]["message"].startswith("0/3 nodes are available")
    assert findings[2]["exitCode"] == 1


def test_stuck_means_it_will_not_start_by_itself():
    assert stuck_reason(pod_findings([IMAGE_PULL]))["reason"] == "ImagePullBackOff"
    assert stuck_reason(pod_findings([UNSCHEDULABLE]))["reason"] == "Unschedulable"
    assert stuck_reason(pod_findings([OOM_RESTARTED, HEALTHY])) is None


def test_failed_container_finds_the_last_crash_too():
    assert failed_container([HEALTHY, CRASHED]) == ("j-worker-1", "pytorch")
    assert failed_container([OOM_RESTARTED]) == ("j-worker-2", "pytorch")
    assert failed_container([HEALTHY]) is None


def test_findings_stay_few_and_short():
    many = [pod(f"p{i}", conditions=UNSCHEDULABLE["status"]["conditions"]) for i in range(50)]
    long = pod("p", containers=[{"name": "c", "state": {"waiting": {"reason": "ErrImagePull", "message": "x" * 5000}}}])
    assert len(pod_findings(many)) == MAX_FINDINGS
    assert len(pod_findings([long])[0]["message"]) <= 300


def test_tail_is_bounded_and_starts_at_a_line():
    log = "".join(f"line {i}\n" for i in range(2000))
    cut = tail(log, 100)
    assert len(cut.encode()) <= 100
    assert cut.startswith("line ") and cut.endswith("line 1999\n")
    assert tail("short\n", 100) == "short\n"
