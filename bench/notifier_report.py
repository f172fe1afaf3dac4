"""docs/performance.md's notifier-at-scale section and the notifier's targets (figures: bench.notifier)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

Add = Callable[[str, str, bool | None, str], None]
TARGET_SIZE = "10000"  # the targets hold at 10,000 retained jobs; the other sizes are held to them too, in the table


def _at_most(limit: float) -> Callable[[float], bool]:
    return lambda value: value <= limit


def _at_least(limit: float) -> Callable[[float], bool]:
    return lambda value: value >= limit


# (figure, the goal as the table says it, the test, the unit, why it can miss)
TARGETS: tuple[tuple[str, str, Callable[[float], bool], str, str], ...] = (
    (
        "rss_steady_mib",
        "steady RSS <= 128 MiB",
        _at_most(128),
        "MiB",
        "the interpreter with the kubernetes client, boto3 and Powertools is most of it; per job it keeps the uid, "
        "name, execution and phase of the jobs that have not ended",
    ),
    (
        "rss_peak_mib",
        "peak RSS during its LIST or a relist <= 200 MiB",
        _at_most(200),
        "MiB",
        "a page of 500 jobs is parsed at a time",
    ),
    ("ready_s", "ready <= 5 s after its LIST", _at_most(5), "s", "ready once the LIST is read; publishing goes on"),
    (
        "events_per_s_at_20ms",
        ">= 500 events/s at a 20 ms round trip",
        _at_least(500),
        "events/s",
        "PutEvents of 10 entries, 8 calls at once",
    ),
    (
        "burst_1000_s",
        "1,000 jobs ending together published within 3 s",
        _at_most(3),
        "s",
        "the emulator writes the 1,000 statuses one after another, within the measured time",
    ),
)


def sizes(results: dict[str, Any]) -> list[str]:
    return sorted((k for k in (results.get("notifier") or {}) if k.isdigit()), key=int)


def verdict(key: str, row: dict[str, Any]) -> bool | None:
    """Whether ``row``'s figure meets its target; None when it was not measured."""
    value = row.get(key)
    if value is None:
        return None
    test = next(t for k, _, t, _, _ in TARGETS if k == key)
    return test(float(value))


def notifier_targets(results: dict[str, Any], add: Add) -> None:
    """The notifier's targets at 10,000 retained jobs, when measured (``python -m bench --notifier``)."""
    row = (results.get("notifier") or {}).get(TARGET_SIZE)
    if not row:
        return
    for key, goal, _, unit, why in TARGETS:
        ok = verdict(key, row)
        figure = "not measured" if row.get(key) is None else f"{row[key]:g} {unit}"
        if key == "ready_s":
            figure += f" ({row['ready_from_start_s']:g} s from the process's start, its LIST {row['list_s']:g} s)"
        if key == "rss_peak_mib":
            figure += f" (LIST {row['rss_list_peak_mib']:g}, relist {row['rss_relist_peak_mib']:g})"
        add(f"notifier, {int(TARGET_SIZE):,} jobs of 2.5 KB: {goal}", figure, ok, why)


def _cell(key: str, row: dict[str, Any], text: str) -> str:
    ok = verdict(key, row)
    return text if ok is None else f"{text} {'met' if ok else '**missed**'}"


def notifier_section(results: dict[str, Any]) -> list[str]:
    """The table of the notifier's figures per size, each held to its target; nothing when not measured."""
    notifier = results.get("notifier") or {}
    measured = sizes(results)
    if not measured:
        return [
            "The notifier's memory, readiness and publishing at 1,000 to 20,000 jobs are not measured yet: "
            "`make bench-notifier`.",
            "",
        ]
    header = [
        "jobs (running)",
        "RSS steady (<= 128 MiB)",
        "RSS peak: LIST / relist (<= 200 MiB)",
        "ready after its LIST (<= 5 s)",
        "events/s at 20 ms (>= 500) / at 0 ms",
        "1,000 jobs ending together (<= 3 s)",
        "a start republishes",
    ]
    rows = []
    for size in measured:
        r = notifier[size]
        rows.append(
            [
                f"{r['jobs']:,} ({r['running']:,})",
                _cell("rss_steady_mib", r, f"{r['rss_steady_mib']:.0f} MiB"),
                _cell("rss_peak_mib", r, f"{r['rss_list_peak_mib']:.0f} / {r['rss_relist_peak_mib']:.0f} MiB"),
                _cell(
                    "ready_s",
                    r,
                    f"{r['ready_s']:.2f} s (LIST {r['list_s']:.1f} s, {r['ready_from_start_s']:.1f} s from its start)",
                ),
                _cell("events_per_s_at_20ms", r, f"{r['events_per_s_at_20ms']:,.0f} / {r['events_per_s_at_0ms']:,.0f}"),
                _cell("burst_1000_s", r, "-" if r["burst_1000_s"] is None else f"{r['burst_1000_s']:.2f} s"),
                f"{r['restart_events']:,} events",
            ]
        )
    table = ["| " + " | ".join(header) + " |", "|" + " --- |" * len(header)]
    table += ["| " + " | ".join(row) + " |" for row in rows]
    skipped = notifier.get("sizes_not_run") or []
    machine = notifier.get("machine") or {}
    return [
        "The real notifier process (`python -m jobsync_notifier` with the Deployment's environment, INFO logs) "
        "against the Kubernetes API emulator over HTTP, its EventBridge (moto) behind a proxy that adds a 20 ms "
        "round trip to every call (`make bench-notifier`, bench/notifier.py). Each job is about 2.5 KB of JSON, "
        "managedFields included; all but 1,000 have succeeded and stay (the default cleanup keeps them), 1,000 "
        "run and their executions wait. RSS steady: VmRSS once all is quiet; peak: VmHWM while it lists at start, "
        "and again after a 410 on its watch. Ready: from its LIST's last request (the API's request log) to "
        "`/readyz` answering 200. Events/s: a start that finds every job ended and every execution waiting (the "
        "worst a restart can meet), from the first event PutEvents took to the last. 1,000 jobs ending together: "
        "from the first of their status writes to the last event taken. A start republishes: what it publishes "
        "with only the running jobs' executions waiting. Targets apply at 10,000 jobs; every size is held to them"
        + (f" ({machine.get('cpu_count', '?')} CPUs, shared with other work)." if machine else "."),
        "",
        *table,
        "",
        *([f"Not run: {', '.join(f'{int(n):,}' for n in skipped)} jobs.", ""] if skipped else []),
    ]
