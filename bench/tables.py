"""The benchmark's tables, as printed and as docs/performance.md shows them."""

from __future__ import annotations

from typing import Any

SHORT_CLASS = "10-30 min"


# --------------------------------------------------------------------------- formatting


def _s(value: float) -> str:
    return f"{value:,.3f}" if abs(value) < 1 else f"{value:,.1f}"


def _opt(value: float | None) -> str:
    return "-" if value is None else _s(value)


def _duration(value: float | str | None) -> str:
    if value is None:
        return "not checked"
    if isinstance(value, str):
        return "unbounded (up to the 30-day maximum deadline)"
    if value >= 86_400:
        return f"{value / 86_400:.1f} d ({value:,.0f} s)"
    return f"{value / 3600:.1f} h ({value:,.0f} s)"


def _table(header: list[str], rows: list[list[str]]) -> str:
    lines = ["| " + " | ".join(header) + " |", "|" + "|".join(" --- " for _ in header) + "|"]
    lines += ["| " + " | ".join(row) + " |" for row in rows]
    return "\n".join(lines)


def policies(results: dict[str, Any]) -> list[str]:
    return [name for name in results["meta"]["policies"] if name in results]


def policy_table(results: dict[str, Any]) -> str:
    header = [
        "policy",
        "mean delay (s)",
        "mean delay, succeeded / failed (s)",
        "p95 delay (s)",
        f"mean delay, {SHORT_CLASS} jobs (s)",
        "polls / job",
        "state transitions / job",
        "history events / job",
        "longest job within 25,000 events",
        "Lambda GB-s / job",
        "USD / 1,000 jobs",
    ]
    rows = []
    for name in policies(results):
        r = results[name]
        rows.append(
            [
                f"`{name}`",
                _s(r["mean_delay_s"]),
                f"{_opt(r.get('mean_delay_succeeded_s'))} / {_opt(r.get('mean_delay_failed_s'))}",
                _s(r["p95_delay_s"]),
                _s(r["by_class"][SHORT_CLASS]["mean_delay_s"]) if SHORT_CLASS in r["by_class"] else "-",
                _s(r["polls_per_job"]),
                _s(r["transitions_per_job"]),
                _s(r["history_events_per_job"]),
                _duration(r["longest_job_within_history_cap_s"]),
                f"{r['lambda_gb_s_per_job']:.5f}",
                f"{r['cost_per_1000_jobs_usd']:.3f}",
            ]
        )
    return _table(header, rows)


def class_table(results: dict[str, Any]) -> str:
    names = policies(results)
    classes = list(results[names[0]]["by_class"])
    header = ["policy", *(f"{k}: mean delay (s) / polls" for k in classes)]
    rows = [
        [
            f"`{n}`",
            *(
                f"{_s(results[n]['by_class'][k]['mean_delay_s'])} / {_s(results[n]['by_class'][k]['polls_per_job'])}"
                for k in classes
            ),
        ]
        for n in names
    ]
    return _table(header, rows)


def lambda_table(results: dict[str, Any]) -> str:
    lam = results["lambda"]
    rows = []
    like = lam.get("lambda_like_imports") or {}
    if lam.get("ratio_lambda_like") is not None:
        bare = lam["bare_kubernetes_client_lambda_like_ms"]
        for label, key, ms in (
            ("tracing as deployed (Active)", "ratio_lambda_like", lam["cold_import_lambda_like_ms"]),
            (
                "tracing disabled",
                "ratio_lambda_like_tracing_disabled",
                lam["cold_import_lambda_like_tracing_disabled_ms"],
            ),
        ):
            rows.append(
                [
                    f"cold import, Lambda-like environment, {label}: status handler / bare `import kubernetes.client`",
                    f"{lam[key]:.2f} ({_s(ms)} ms / {_s(bare)} ms, median of {like['runs_each']} interleaved fresh "
                    f"processes each; CPU time {lam[key + '_cpu']:.2f})",
                ]
            )
    if lam.get("import_ratio") is not None:
        rows.append(
            [
                "cold import outside Lambda (POWERTOOLS_TRACE_DISABLED, no Lambda variables): status handler / bare "
                "`import kubernetes.client`",
                f"{lam['import_ratio']:.2f} ({_s(lam['status_handler_import_ms'])} ms / "
                f"{_s(lam['bare_kubernetes_client_import_ms'])} ms, median of {lam['runs_each']} fresh processes each)",
            ]
        )
    else:
        rows.append(["cold import ratio", "not measured (--import-runs 0)"])
    cold = lam.get("cold_starts")
    if cold:
        for mode, how in (("url", "HTTP, no AWS call"), ("eks", "moto's DescribeCluster over HTTP, STS token, HTTPS")):
            c = cold[mode]
            boto3 = "imported by the first call" if "boto3" in c["loaded_after_first_call"] else "never imported"
            rows.append(
                [
                    f"cold start, {mode} mode ({how}), tracing Active: import + first invocation",
                    f"{_s(c['cold_start_ms'])} ms ({_s(c['import_ms'])} + {_s(c['first_invocation_ms'])} ms; "
                    f"boto3 {boto3}; "
                    f"median of {cold['runs']} fresh processes)",
                ]
            )
        rows.append(
            [
                "warm poll, eks mode over HTTPS with a token (status handler)",
                f"{lam['warm_eks_https_ms']:.2f} ms median, p95 {lam['warm_eks_https_p95_ms']:.2f} ms "
                f"({cold['calls']} calls a process)",
            ]
        )
    rows.append(["peak RSS, one invocation in a fresh process", f"{lam['peak_rss_mb_one_invocation']:.1f} MB"])
    for name, r in lam["api_requests_per_poll"].items():
        rows.append(
            [
                f"API requests per poll: {name.replace('_', ' ')} ({r['phase']}, {r['reason']})",
                f"{r['requests_per_poll']:g} ({', '.join(r['requests'])}"
                + (f"; {r['polls']} polls)" if r["polls"] > 1 else ")"),
            ]
        )
    rows.append(
        [
            "warm poll latency: status handler / one bare GET",
            f"{lam['latency_ratio']:.2f} ({lam['handler_median_ms']:.2f} ms / {lam['bare_get_median_ms']:.2f} ms, "
            f"median of {lam['latency_calls']} interleaved calls; "
            f"p95 {lam['handler_p95_ms']:.2f} / {lam['bare_get_p95_ms']:.2f} ms)",
        ]
    )
    billed, assumed = lam.get("billed_ms_model"), lam.get("assumptions")
    if billed and assumed:
        rows.append(
            [
                "billed ms per status poll (model: measured + assumed, rounded up to 1 ms)",
                f"warm {billed['warm_ms']} ms; cold start: INIT {billed['cold_init_ms']} ms + first invocation "
                f"{billed['cold_first_invocation_ms']} ms; mean {billed['mean_ms_per_invocation']:.2f} ms per "
                f"invocation with one cold start per {assumed['assumed_invocations_per_cold_start']}",
            ]
        )
        rows.append(
            [
                "assumed, not measured",
                f"assumed_vpc_rtt_ms {assumed['assumed_vpc_rtt_ms']:g} per API request; "
                f"{assumed['assumed_cold_extra_round_trips']} more round trips on a cold start (TLS to the API, "
                f"DescribeCluster); assumed_runtime_init_ms {assumed['assumed_runtime_init_ms']:g}; "
                f"INIT billed: {'yes' if assumed['init_phase_billed'] else 'no'}",
            ]
        )
    return _table(["measurement", "value"], rows)


# --------------------------------------------------------------------------- the targets, as a table


def targets_table(rows: list[dict[str, str]]) -> str:
    return _table(
        ["target", "measured", "status", "why (where missed)"],
        [[r["target"], r["measured"], f"**{r['status']}**", r["why"]] for r in rows],
    )
