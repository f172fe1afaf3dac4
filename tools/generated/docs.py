"""The docs' tables and figures, rendered from what they describe: template.yaml's parameters, the chart's
Roles, the IAM statements of the template as SAM translates it, and bench/results.json."""

from __future__ import annotations

import json
import textwrap
from typing import Any

import yaml

from tools.generated.sections import ROOT, Section

DEPLOYMENT = ROOT / "docs" / "deployment.md"
RELIABILITY = ROOT / "docs" / "reliability.md"
STATE_MACHINE = ROOT / "docs" / "state-machine.md"
README = ROOT / "README.md"
NOTIFIER = ROOT / "docs" / "notifier.md"
RESULTS = ROOT / "bench" / "results.json"


def _table(header: list[str], rows: list[list[str]]) -> str:
    lines = ["| " + " | ".join(header) + " |", "| " + " | ".join("---" for _ in header) + " |"]
    return "\n".join(lines + ["| " + " | ".join(row) + " |" for row in rows]) + "\n"


def _cell(text: Any) -> str:
    return " ".join(str(text).split()).replace("|", "\\|")


# ---------------------------------------------------------------- template.yaml's parameters


class _IgnoreTags(yaml.SafeLoader):
    pass


_IgnoreTags.add_multi_constructor("!", lambda loader, suffix, node: None)


def parameters() -> str:
    declared = yaml.load((ROOT / "template.yaml").read_text(), Loader=_IgnoreTags)["Parameters"]
    rows = []
    for name, spec in declared.items():
        default = spec.get("Default")
        shown = "(required)" if default is None else "empty" if default == "" else f"`{default}`"
        allowed = spec.get("AllowedValues")
        description = _cell(spec.get("Description", ""))
        if allowed and len(allowed) <= 6:
            description += " One of " + ", ".join(f"`{v}`" for v in allowed) + "."
        rows.append([f"`{name}`", shown, description])
    return _table(["parameter", "default", "what"], rows)


# ---------------------------------------------------------------- the chart's Roles


def rbac() -> str:
    from jobsync.settings import parse_allowed_kinds
    from jobsync_cli.preflight import grants
    from tests.support.chart import CALLBACK, by_kind, render

    defaults = by_kind(render())
    role = grants.of_role(defaults["Role", "jobsync"])
    why = {g.key(): g.used_by for g in grants.functions(parse_allowed_kinds("PyTorchJob,TrainJob"), "watch")}
    rows = [
        [f"`{verb}`", f"`{res}`" + (f" (`{group}`)" if group else ""), _cell(why[(verb, group, res)])]
        for verb, group, res in sorted(role, key=lambda g: (g[2], g[0]))
    ]
    watch = grants.of_role(by_kind(render({"completionMode": "watch"}))["Role", "jobsync"]) - role
    trainjob = grants.of_role(by_kind(render({"allowedKinds": "PyTorchJob,TrainJob"}))["Role", "jobsync"]) - role
    owners = sorted(f"`{res}` (`{group}`)" for verb, group, res in trainjob if verb == "get" and res != "trainjobs")
    kueue = grants.of_role(by_kind(render({"kueueEnabled": True}))["Role", "jobsync"]) - role
    notifier = grants.of_role(by_kind(render(CALLBACK))["Role", "jobsync-notifier"])
    lines = [
        f"The functions' Role, as the chart renders it for the template's defaults (AllowedKinds `PyTorchJob`, "
        f"CompletionMode `poll`): {len(role)} grants, in namespace `ml-training`, bound to the group `jobsync`.",
        "",
        _table(["verb", "resource", "used by"], rows).rstrip("\n"),
        "",
        f"CompletionMode `watch` adds {', '.join(f'`{v}` on `{r}`' for v, _, r in sorted(watch))} (each allowed "
        "kind). More AllowedKinds add their resources, one rule per API group. A TrainJob adds `get` on "
        f"{' and '.join(owners)}: its pods' owners, read to check that they lead to it. KueueEnabled adds "
        + " and ".join(f"`{v}` on `{r}` (`{g}`)" for v, g, r in sorted(kueue))
        + ": a queued job's Workload, and once its LocalQueue (never a list). In callback mode the "
        f"notifier's own Role (ServiceAccount `jobsync-notifier`) has {len(notifier)} grants: "
        + ", ".join(f"`{v}` on `{r}`" for v, _, r in sorted(notifier))
        + " (each allowed kind), and nothing else.",
    ]
    return "\n".join(lines) + "\n"


# ---------------------------------------------------------------- IAM, from the translated template

OPTIONS = {
    "TemplateBucket": {"TemplateBucket": "<TemplateBucket>"},
    "CreateNotifierIdentity": {"CreateNotifierIdentity": "true"},
    "AlarmEmail": {"AlarmEmail": "ops@example.com"},
    "ScheduleTarget=RunJobs": {"ScheduleTarget": "RunJobs"},
}
POLICY_TYPES = (
    "AWS::IAM::Role",
    "AWS::IAM::RolePolicy",
    "AWS::IAM::ManagedPolicy",
    "AWS::SQS::QueuePolicy",
    "AWS::KMS::Key",
)


def iam_statements(parameters: dict[str, str]) -> list[tuple[str, str, str, str, str]]:
    """(resource, statement, actions, resources or principal, condition keys) of every policy statement."""
    from tests.support.stack import render, statements, translated

    stack = render(translated(), "<stack>", {"ClusterName": "<ClusterName>", **parameters})
    found = []
    for rid, resource in sorted(stack.resources.items()):
        if resource["Type"] not in POLICY_TYPES:
            continue
        for where, statement in statements(resource.get("Properties", {}), rid):
            trust = "AssumeRolePolicyDocument" in where
            sid = statement.get("Sid") or ("trust" if trust else "")
            actions = statement.get("Action", [])
            actions = actions if isinstance(actions, list) else [actions]
            target = (
                statement.get("Principal")
                if trust or ("Principal" in statement and resource["Type"] != "AWS::IAM::Role")
                else statement.get("Resource")
            )
            conditions = sorted(k for tests in (statement.get("Condition") or {}).values() for k in tests)
            found.append(
                (
                    rid,
                    sid,
                    ", ".join(f"`{a}`" for a in actions),
                    _shorten(target),
                    ", ".join(f"`{c}`" for c in conditions),
                )
            )
    return found


def _shorten(value: Any) -> str:
    text = json.dumps(value, sort_keys=True) if not isinstance(value, str) else value
    from tests.support.stack import ACCOUNT, REGION, SUFFIX

    text = text.replace(ACCOUNT, "<account>").replace(REGION, "<region>").replace(SUFFIX, "<id>")
    return f"`{_cell(text)}`"


def iam() -> str:
    base = iam_statements({})
    rows = [[f"`{r}`", s or "-", a, t, c or "-", "always"] for r, s, a, t, c in base]
    seen = set(base)
    for option, parameters in OPTIONS.items():
        for item in iam_statements(parameters):
            if item not in seen:
                seen.add(item)
                r, s, a, t, c = item
                rows.append([f"`{r}`", s or "-", a, t, c or "-", f"with {option}"])
    header = ["resource", "statement", "actions", "resource or principal", "conditions on", "when"]
    return f"{len(rows)} statements.\n\n" + _table(header, rows)


def counts() -> str:
    from jobsync_cli.preflight import grants
    from tests.support.chart import by_kind, render

    statements = len(iam().split("\n\n", 1)[1].strip().splitlines()) - 2
    role = grants.of_role(by_kind(render())["Role", "jobsync"])
    return f"{statements} IAM statements, {len(role)} RBAC grants"


# ---------------------------------------------------------------- bench/results.json


def _results() -> dict[str, Any]:
    return dict(json.loads(RESULTS.read_text()))


TIMES = "\u00d7"


def _paragraph(text: str) -> str:
    return textwrap.fill(" ".join(text.split()), width=78, break_on_hyphens=False) + "\n"


def headline() -> str:
    r = _results()
    seed, default, hint, e2e = r["seed-600"], r["default"], r["default-hint20"], r["end_to_end"]
    sooner = seed["mean_delay_s"] / default["mean_delay_s"]
    hinted = seed["mean_delay_s"] / hint["mean_delay_s"]
    cost = r["callback"]["cost_per_1000_jobs_usd"] / seed["cost_per_1000_jobs_usd"]
    return _paragraph(
        f"""**Headline** ([docs/performance.md](docs/performance.md), from `make bench`): over
        {default["jobs"]:,} simulated jobs of 10 minutes to 24 hours, a fifth of them failing, the default
        policy notices a finished job {sooner:.1f}{TIMES} sooner than the fixed 10-minute loop
        ({default["mean_delay_s"]:.0f} s against {seed["mean_delay_s"]:.0f} s on average; failures in
        {default["mean_delay_failed_s"]:.0f} s). Given `expectedDurationSeconds` it is {hinted:.1f}{TIMES} sooner
        ({hint["mean_delay_s"]:.0f} s), and a failure is noticed in {hint["mean_delay_failed_s"]:.0f} s. Measured
        end to end on the local run, watch mode notices within {e2e["watch"]["p95_delay_s"] * 1000:.0f} ms (p95)
        and callback mode within {e2e["callback"]["p95_delay_s"] * 1000:.0f} ms, callback at {cost:.2f}{TIMES} the
        seed loop's cost per job. What those cost in transitions, and the targets still missed, are in the table."""
    )


def watch_figures() -> str:
    r = _results()
    default, watch = r["default"], r["watch"]
    per_hour = watch["lambda_usd_per_job_hour"]
    local = f"{watch['mean_delay_s'] * 1000:.0f} ms on the local run, plus Lambda's and Step Functions' own latency"
    rows = [
        ["mean detection delay", f"{default['mean_delay_s']:.0f} s", local],
        ["state transitions per job", f"{default['transitions_per_job']:.0f}", f"{watch['transitions_per_job']:.0f}"],
        [
            "Lambda cost",
            f"USD {default['lambda_usd_per_job_hour'] * 1e6:.1f} per million job-hours",
            f"USD {per_hour:.3f} per job-hour (billed while the watch is held)",
        ],
    ]
    intro = f"What it changes, from `docs/performance.md` ({default['jobs']:,} simulated jobs, 840 s watches, 256 MB):"
    return (
        intro
        + "\n\n"
        + _table(["", "default policy", "watch mode"], rows)
        + f"\nIt is worth it when minutes after the end cost more than about {per_hour * 100:.1f} cents an hour:\n"
    )


def notifier_figures() -> str:
    """The notifier's figures per size, each held to its target (``make bench-notifier``)."""
    from bench.notifier_report import sizes, verdict

    r = _results()
    measured = sizes(r)
    if not measured:
        return "Not measured yet: `make bench-notifier`.\n"

    def cell(key: str, row: dict[str, Any], text: str) -> str:
        ok = verdict(key, row)
        return text if ok is None else f"{text} ({'met' if ok else 'missed'})"

    rows = []
    for size in measured:
        row = r["notifier"][size]
        burst = row.get("burst_1000_s")
        rows.append(
            [
                f"{row['jobs']:,}",
                cell("rss_steady_mib", row, f"{row['rss_steady_mib']:.0f} MiB"),
                cell("rss_peak_mib", row, f"{row['rss_peak_mib']:.0f} MiB"),
                cell("ready_s", row, f"{row['ready_s']:.2f} s"),
                cell("events_per_s_at_20ms", row, f"{row['events_per_s_at_20ms']:,.0f}"),
                cell("burst_1000_s", row, "-" if burst is None else f"{burst:.2f} s"),
            ]
        )
    intro = (
        "Measured on the process against the local API (`make bench-notifier`; how, and every figure, in "
        "`docs/performance.md`), 1,000 of the jobs running, the rest succeeded and kept; the targets hold at "
        "10,000 jobs:"
    )
    header = [
        "jobs of 2.5 KB",
        "RSS steady (<= 128 MiB)",
        "RSS peak, LIST or relist (<= 200 MiB)",
        "ready after its LIST (<= 5 s)",
        "events/s at a 20 ms round trip (>= 500)",
        "1,000 jobs ending together (<= 3 s)",
    ]
    return _paragraph(intro) + "\n" + _table(header, rows)


def sections() -> list[Section]:
    return [
        Section(DEPLOYMENT, "parameters", "template.yaml", parameters),
        Section(DEPLOYMENT, "rbac", "charts/jobsync", rbac),
        Section(RELIABILITY, "rbac", "charts/jobsync", rbac),
        Section(RELIABILITY, "iam", "template.yaml as SAM translates it", iam),
        Section(RELIABILITY, "counts", "template.yaml and charts/jobsync", counts),
        Section(README, "headline", "bench/results.json", headline),
        Section(STATE_MACHINE, "watch-figures", "bench/results.json", watch_figures),
        Section(NOTIFIER, "notifier-figures", "bench/results.json", notifier_figures),
    ]
