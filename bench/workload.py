"""The simulated jobs: three length classes, each preceded by a short PENDING spell."""

from __future__ import annotations

import random
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


@dataclass(frozen=True)
class Job:
    """One job on a timeline that starts at its submission (t = 0)."""

    klass: str
    pending_s: float
    run_s: float
    # expectedDurationSeconds as a caller would pass it: measured from submission
    # (pending + run, as the policy compares it with the time since submission), off by up to ±20 %.
    hint_s: int

    @property
    def end_s(self) -> float:
        return self.pending_s + self.run_s

    def phase_at(self, t: float) -> Phase:
        """What a GET at time t reports (a job that ended at t is seen as ended)."""
        if t < self.pending_s:
            return Phase.PENDING
        if t < self.end_s:
            return Phase.RUNNING
        return Phase.SUCCEEDED


def make_workload(n: int, seed: int) -> list[Job]:
    """``n`` jobs, a third per class (job i is in class i mod 3), reproducible from ``seed``."""
    rng = random.Random(seed)
    jobs = []
    for i in range(n):
        klass, shortest, longest = CLASSES[i % len(CLASSES)]
        pending = rng.uniform(0, PENDING_MAX_S)
        run = rng.uniform(shortest, longest)
        hint = round((pending + run) * rng.uniform(1 - HINT_ERROR, 1 + HINT_ERROR))
        jobs.append(Job(klass, pending, run, hint))
    return jobs
