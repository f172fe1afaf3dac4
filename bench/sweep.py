"""`python -m bench --sweep`: alternative WaitBounds and policy constants side by side.

Runs the real jobsync.core.wait with module constants overridden for the duration
of each variant (bench.simulate.policy_constants); policy.py is never written.
"""

from __future__ import annotations

import itertools
from collections.abc import Sequence
from dataclasses import replace
from typing import Any

from bench.prices import Prices
from bench.simulate import Policy, evaluate_policy
from bench.statemachine import CostModel
from bench.workload import Job
from jobsync.core import wait as jobsync_policy
from jobsync.core.wait import WaitBounds

SHORT_CLASS = "10-30 min"


def _variant(hint: bool, min_s: int, pending_max: int, running_max: int, **constants: float) -> Policy:
    bounds = WaitBounds(min_seconds=min_s, pending_max_seconds=pending_max, running_max_seconds=running_max)
    if "hint_tolerance" in constants:
        bounds = replace(bounds, hint_tolerance=constants.pop("hint_tolerance"))
    label = f"min={min_s} pending_max={pending_max} running_max={running_max}" + "".join(
        f" {k}={v:g}" for k, v in constants.items()
    )
    if bounds.hint_tolerance != WaitBounds.hint_tolerance:
        label += f" hint_tolerance={bounds.hint_tolerance:g}"
    return Policy(label, "sweep variant", "jobsync", bounds=bounds, hint=hint, constants=tuple(constants.items()))


def variants() -> tuple[list[Policy], list[Policy]]:
    """(no-hint variants, hint variants); the shipped defaults first in each.

    The grid spans what moves the no-hint trade-off (fewer ramp-up polls: a
    larger min_seconds, a smaller RUNNING_SQRT_FACTOR; the running_max cap) and what
    sets the hint's spacing inside its window (NEAR_FACTOR, hint_tolerance).
    """
    shipped = (WaitBounds.min_seconds, WaitBounds.pending_max_seconds, WaitBounds.running_max_seconds)
    no_hint = [_variant(False, *shipped, RUNNING_SQRT_FACTOR=jobsync_policy.RUNNING_SQRT_FACTOR)]
    for (min_s, pending_max), factor, running_max in itertools.product(
        ((10, 60), (30, 60), (30, 120), (60, 120)), (3.0, 3.5, 4.0), (360, 420, 480)
    ):
        if (min_s, pending_max, running_max) != shipped or factor != jobsync_policy.RUNNING_SQRT_FACTOR:
            no_hint.append(_variant(False, min_s, pending_max, running_max, RUNNING_SQRT_FACTOR=factor))
    hint = [_variant(True, *shipped, NEAR_FACTOR=jobsync_policy.NEAR_FACTOR)]
    for near, tolerance, (min_s, pending_max) in itertools.product(
        (1.5, 1.75, 2.0), (0.2, 0.25), ((10, 60), (60, 120), (90, 120))
    ):
        if (near, tolerance, min_s) != (jobsync_policy.NEAR_FACTOR, WaitBounds.hint_tolerance, WaitBounds.min_seconds):
            hint.append(
                _variant(
                    True, min_s, pending_max, WaitBounds.running_max_seconds, NEAR_FACTOR=near, hint_tolerance=tolerance
                )
            )
    return no_hint, hint


def sweep(
    jobs: Sequence[Job], model: CostModel, seed: dict[str, Any], prices: Prices
) -> dict[str, list[dict[str, Any]]]:
    """Each variant's delay and transitions as ratios to ``seed`` (the seed-600 result), and the targets it meets."""
    no_hint, hint = variants()
    out: dict[str, list[dict[str, Any]]] = {"default": [], "hint": []}
    for group, policies in (("default", no_hint), ("hint", hint)):
        for policy in policies:
            r = evaluate_policy(policy, jobs, model, prices, cap_check=False)
            delay = r["mean_delay_s"] / seed["mean_delay_s"]
            transitions = r["transitions_per_job"] / seed["transitions_per_job"]
            short = r["by_class"].get(SHORT_CLASS, {}).get("mean_delay_s", float("nan"))
            meets = (
                delay <= 0.5 and transitions <= 1.5 and short <= 60
                if group == "default"
                else delay <= 0.25 and transitions <= 1.0
            )
            out[group].append(
                {
                    "variant": policy.name,
                    "mean_delay_s": r["mean_delay_s"],
                    "delay_ratio": delay,
                    "transitions_per_job": r["transitions_per_job"],
                    "transitions_ratio": transitions,
                    "short_mean_delay_s": short,
                    "meets_targets": meets,
                }
            )
    return out


def render(result: dict[str, list[dict[str, Any]]]) -> str:
    lines = []
    for group, goal in (
        ("default", "no hint; targets: delay <= 0.5x, transitions <= 1.5x, 10-30 min jobs <= 60 s"),
        ("hint", "±20 % hint; targets: delay <= 0.25x, transitions <= 1.0x"),
    ):
        lines += [f"\nSweep, {goal} (first row: shipped constants; then those that meet, by delay)", ""]
        lines.append("| variant | mean delay (s) | delay / seed | transitions / seed | 10-30 min delay (s) | meets |")
        lines.append("| --- | --- | --- | --- | --- | --- |")
        rows = result[group]
        for r in [rows[0], *sorted(rows[1:], key=lambda r: (not r["meets_targets"], r["delay_ratio"]))]:
            lines.append(
                f"| {r['variant']} | {r['mean_delay_s']:.1f} | {r['delay_ratio']:.3f} | {r['transitions_ratio']:.3f} "
                f"| {r['short_mean_delay_s']:.1f} | {'yes' if r['meets_targets'] else 'no'} |"
            )
    return "\n".join(lines)
