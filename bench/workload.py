"""The simulated jobs: three length classes, each preceded by a short PENDING spell; a fifth of them fail."""

from __future__ import annotations

import random
import statistics
from dataclasses import dataclass

from jobsync.evaluation.phase import Phase

MINUTE, HOUR = 60, 3600

# (name, shortest run, longest run) in seconds: the classes the seed article
# names when it justifies its 600 s wait (small 10-30 min, medium 1-3 h, large 3-24 h).
CLASSES: tuple[tuple[str, int, int], ...] = (
    ("10-30 min", 10 * MINUTE, 30 * MINUTE),
    ("1-3 h", 1 * HOUR, 3 * HOUR),
    ("3-24 h", 3 * HOUR, 24 * HOUR),
)
PENDING_MAX_S = 10 * MINUTE
HINT_ERROR = 0.2  # the hint is the true duration times U(1 - e, 1 + e)
# Failures: job i fails when i % FAIL_EVERY == FAIL_EVERY - 1 (a fifth of the jobs, spread evenly over
# the classes). Every other failing job crashes in the first EARLY_FRACTION of its planned run
# (configuration errors, out of memory); the rest fail uniformly over the run.
FAIL_EVERY = 5
EARLY_FRACTION = 0.1
# Learned hints (jobsync.aws.hints): a recurring job's family runs D x U(1 - v, 1 + v) each time, and the
# hint is the median of the family's last LEARNED_RUNS successful runs.
FAMILY_SPREAD = 0.3
LEARNED_RUNS = 5


@dataclass(frozen=True)
class Job:
    """One job on a timeline that starts at its submission (t = 0)."""

    klass: str
    pending_s: float
    run_s: float  # time RUNNING until it ends: succeeds, or (``failed``) fails
    # expectedDurationSeconds as a caller would pass it: measured from submission
    # (pending + planned run, as the policy compares it with the time since submission), off by up to ±20 %.
    hint_s: int
    failed: bool = False
    # The learned hint: the median of LEARNED_RUNS earlier runs of its family (each ±FAMILY_SPREAD around the
    # family's typical length; this run is one more such draw).
    learned_hint_s: int = 0
    # Who the job is to the status step's jitter (``jobsync.core.wait.jittered``): its uid, else its name.
    name: str = "sim"
    uid: str | None = None

    @property
    def end_s(self) -> float:
        return self.pending_s + self.run_s

    @property
    def outcome(self) -> str:
        return "failed" if self.failed else "succeeded"

    def phase_at(self, t: float) -> Phase:
        """What a GET at time t reports (a job that ended at t is seen as ended)."""
        if t < self.pending_s:
            return Phase.PENDING
        if t < self.end_s:
            return Phase.RUNNING
        return Phase.FAILED if self.failed else Phase.SUCCEEDED


def make_workload(n: int, seed: int, failures: bool = True) -> list[Job]:
    """``n`` jobs, a third per class (job i is in class i mod 3), reproducible from ``seed``.

    The successful jobs' lengths and hints do not depend on ``failures``: the
    failure points come from a generator of their own.
    """
    rng = random.Random(seed)
    fail_rng = random.Random(seed + 1)
    family_rng = random.Random(seed + 2)
    jobs = []
    for i in range(n):
        klass, shortest, longest = CLASSES[i % len(CLASSES)]
        pending = rng.uniform(0, PENDING_MAX_S)
        run = rng.uniform(shortest, longest)
        hint = round((pending + run) * rng.uniform(1 - HINT_ERROR, 1 + HINT_ERROR))
        typical = (pending + run) / family_rng.uniform(1 - FAMILY_SPREAD, 1 + FAMILY_SPREAD)
        earlier = [typical * family_rng.uniform(1 - FAMILY_SPREAD, 1 + FAMILY_SPREAD) for _ in range(LEARNED_RUNS)]
        learned = round(statistics.median(earlier))
        failed = failures and i % FAIL_EVERY == FAIL_EVERY - 1
        if failed:
            early = (i // FAIL_EVERY) % 2 == 0
            run *= fail_rng.uniform(0, EARLY_FRACTION if early else 1.0)
        jobs.append(Job(klass, pending, run, hint, failed, learned, name=f"sim-{seed}-{i}"))
    return jobs
