"""`make bench`: detection delay and cost of jobsync's wait policies against the fixed 10-minute loop.

    python -m bench [--jobs N] [--seed S] [--quick] [--sweep] [--no-write]
    python -m bench --throughput [--throughput-max N] [--no-write]
    python -m bench --container [--no-write]     (under python -m lambda_runtime run: make bench-container)
    python -m bench --report-only
    python -m bench --notifier [--notifier-sizes 1000,10000,20000] [--no-write]     (make bench-notifier)

Prints the tables, and writes bench/results.json, docs/performance.md and
docs/performance.png (unless --no-write). --throughput measures only the
throughput of RunJobs in the local run (bench/throughput.py) and updates the
``throughput`` key of bench/results.json and the docs/performance.md rendered
from it, leaving every other key as it was; --container likewise measures only
the cold start of each function in the Lambda runtime (bench/container.py, key
``container_cold_start``). --report-only measures nothing: it judges the recorded
figures of bench/results.json against the targets again (its ``targets`` key) and
redraws docs/performance.md and docs/performance.png from them.
``container_cold_start``); --notifier the notifier process at 1,000 to 20,000
retained jobs (bench/notifier.py, key ``notifier``, and the targets it is held to).
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from dataclasses import asdict, dataclass, replace
from pathlib import Path
from typing import Any

from bench import report
from bench.prices import BilledDuration, LambdaAssumptions, Prices
from bench.simulate import evaluate_all, standard_policies, with_event_latency
from bench.statemachine import ROOT, cost_models
from bench.workload import make_workload

RESULTS = ROOT / "bench" / "results.json"
MARKDOWN = ROOT / "docs" / "performance.md"
PLOT = ROOT / "docs" / "performance.png"
TEMPLATE = ROOT / "template.yaml"


@dataclass(frozen=True)
class Config:
    jobs: int = 3000
    seed: int = 20250101
    import_runs: int = 7
    latency_calls: int = 200
    crosscheck: bool = True
    cap_check: bool = True
    e2e_runs: int = 8  # jobs per mode (watch, callback) through the local service on the wall clock
    dead_notifier_jobs: int = 24  # callback jobs the sweeper alone sees end (the notifier dead), in the local run


THROUGHPUT_MAX = 100  # the 1,000-job runs are opt-in: --throughput-max 1000
QUICK = Config(jobs=300, import_runs=1, latency_calls=20, crosscheck=False, e2e_runs=2, dead_notifier_jobs=4)


def lambda_memory_mb(template: Path = TEMPLATE) -> int:
    """MemorySize from the template's Globals (read as text: the YAML holds CloudFormation tags)."""
    for line in template.read_text().splitlines():
        if line.strip().startswith("MemorySize:"):
            return int(line.split(":", 1)[1])
    raise ValueError(f"no MemorySize in {template.name}")


def run(config: Config, progress: Any = print) -> dict[str, Any]:
    """Every measurement, as the dict bench/results.json holds."""
    from bench import lambdas

    started = time.perf_counter()
    lam = lambdas.measure(config.import_runs, config.latency_calls, progress)
    # Billed per invocation: the status handler measured in EKS mode over HTTPS, plus what
    # cannot be measured here (the VPC round trips, the runtime's own start), assumed.
    assumed = LambdaAssumptions()
    billed = BilledDuration.model(
        warm_handler_ms=lam["warm_eks_https_ms"],
        requests_per_poll=lam["api_requests_per_running_poll"],
        cold_import_ms=lam["cold_import_lambda_like_ms"],
        first_invocation_ms=lam["first_invocation_eks_ms"],
        assumed=assumed,
    )
    lam["billed_ms_model"] = billed.as_dict()
    lam["assumptions"] = assumed.as_dict()
    prices = Prices(lambda_memory_mb=lambda_memory_mb(), lambda_billed_ms=billed.mean_ms)
    models = cost_models()
    jobs = make_workload(config.jobs, config.seed)
    policies = standard_policies()
    e2e: dict[str, Any] = {}
    if config.e2e_runs:
        from bench import endtoend

        progress(f"end to end: watch and callback mode on the wall clock ({config.e2e_runs} jobs each)")
        e2e = endtoend.measure(config.e2e_runs)
        policies = with_event_latency(policies, {mode: r["delays_s"] for mode, r in e2e.items()})
    progress(f"policies: simulating {len(jobs):,} jobs")
    results: dict[str, Any] = evaluate_all(policies, jobs, models, prices, cap_check=config.cap_check)
    results["end_to_end"] = e2e
    if config.e2e_runs:
        from bench import resume

        progress("callback mode: what a job's end costs from the notifier's event on")
        results["callback"]["resume"] = resume.measure()
    if config.dead_notifier_jobs:
        from bench import dead_notifier

        progress(f"callback mode, the notifier dead: {config.dead_notifier_jobs} jobs the sweeper sees end")
        down = dead_notifier.measure(config.dead_notifier_jobs)
        results["callback"]["notifier_down"] = down
        results["callback"]["notifier_down_delay_s"] = down["max_delay_s"]
    if config.crosscheck:
        from bench.crosscheck import crosscheck, delay_agreement

        progress("cross-check: the real state machine end to end")
        results["crosscheck"] = crosscheck(models["jobsync"])
        progress("cross-check: the simulator's mean delay against the real state machine's, jitter included")
        results["crosscheck"]["delay_agreement"] = delay_agreement()
    results["lambda"] = lam
    results["cost_model"] = {name: model.summary() for name, model in models.items()}
    results["prices"] = prices.as_dict()
    results["meta"] = {
        "policies": [p.name for p in standard_policies()],
        "watch": report.WATCH_NOTE,
        "callback": report.CALLBACK_NOTE,
        "callback-no-sweeper": report.CALLBACK_NO_SWEEPER_NOTE,
        "learned-hint30": report.LEARNED_NOTE,
        "jobs": config.jobs,
        "seed": config.seed,
        "config": asdict(config),
        "longest_job_within_history_cap_s": 'a number of seconds, or "unbounded": every length up to the '
        "30-day maximum deadline fits (checked with deadlines of 8 and 30 days)",
        "machine": report.machine(),
    }
    from bench.scale import scale

    results["scale"] = scale(results)
    results["targets"] = report.targets(results)
    results["meta"]["run_seconds"] = time.perf_counter() - started
    return results


def measured_apart(previous: dict[str, Any]) -> dict[str, Any]:
    """The figures of bench/results.json that their own options (and bench.runjobs) measure: a whole run keeps them."""
    apart = ("throughput", "container_cold_start", "notifier", "callback_containers")
    return {key: value for key, value in previous.items() if key in apart or key.startswith("runjobs_")}


def read_results(path: Path = RESULTS) -> dict[str, Any]:
    """bench/results.json as it is, or {} when there is none yet."""
    if not path.exists():
        return {}
    results = json.loads(path.read_text())
    if not isinstance(results, dict):
        raise ValueError(f"{path.name}: expected a JSON object, got {type(results).__name__}")
    return results


def throughput_main(
    largest: int,
    write: bool = True,
    progress: Any = print,
    results_path: Path = RESULTS,
    markdown_path: Path = MARKDOWN,
) -> int:
    """Measure RunJobs' throughput; update the ``throughput`` key and docs/performance.md, nothing else."""
    from bench import throughput

    sizes = [n for n in throughput.SIZES if n <= largest] or [largest]
    measured = throughput.measure_all(sizes, throughput.MODES, progress)
    measured["sizes_not_run"] = [n for n in throughput.SIZES if n > largest]
    measured["machine"] = report.machine()
    print(report.throughput_table(measured["rows"]))
    if write:
        results = read_results(results_path)
        results["throughput"] = measured
        results_path.write_text(json.dumps(results, indent=2, default=str) + "\n")
        if "meta" in results:  # the rest of the page needs a full run's results
            markdown_path.write_text(report.markdown(results, PLOT.name))
            progress(f"wrote {results_path.name} and {markdown_path.name}")
        else:
            progress(f"wrote {results_path.name}; run `make bench` once for {markdown_path.name}")
    failed = [r for r in measured["rows"] if r["status"] != "SUCCEEDED"]
    return 1 if failed else 0


def container_main(write: bool = True, progress: Any = print, results_path: Path = RESULTS) -> int:
    """Measure each function's cold start in the container; update ``container_cold_start`` and the page."""
    from bench import container

    measured = container.measure(progress=progress)
    measured["machine"] = report.machine()
    results = read_results(results_path)
    results["container_cold_start"] = measured
    print("\n".join(container.section(results)))
    if write:
        save_with_page(results, progress, results_path)
    return 0


def save_with_page(
    results: dict[str, Any], progress: Any, results_path: Path = RESULTS, markdown_path: Path = MARKDOWN
) -> None:
    """Write ``results`` after one command's own figures changed; with a full run's results there, the targets
    and docs/performance.md again (the plot draws only what a full run measures)."""
    if "meta" in results:
        results["targets"] = report.targets(results)
    results_path.write_text(json.dumps(results, indent=2, default=str) + "\n")
    if "meta" in results:
        markdown_path.write_text(report.markdown(results, PLOT.name))
    progress(f"wrote {results_path.name}" + (f" and {markdown_path.name}" if "meta" in results else ""))


def e2e_callback_main(
    measured: Path, progress: Any = print, results_path: Path = RESULTS, markdown_path: Path = MARKDOWN
) -> int:
    """Record the e2e tier's callback figures (``callback_containers``), judge the targets again, redraw the page."""
    if not measured.exists():
        print(f"{measured}: no figures: run `make bench-e2e-callback`", file=sys.stderr)
        return 2
    results = read_results(results_path)
    results["callback_containers"] = {**json.loads(measured.read_text()), "machine": report.machine()}
    save_with_page(results, progress, results_path, markdown_path)
    return 0


def report_main(
    progress: Any = print, results_path: Path = RESULTS, markdown_path: Path = MARKDOWN, plot_path: Path = PLOT
) -> int:
    """The targets, docs/performance.md and its plot from the figures bench/results.json holds; nothing measured."""
    results = read_results(results_path)
    if "meta" not in results:
        print(f"{results_path.name} holds no full run's results: run `make bench` first", file=sys.stderr)
        return 2
    results["targets"] = report.targets(results)
    results_path.write_text(json.dumps(results, indent=2, default=str) + "\n")
    report.write(results, markdown_path, plot_path, progress)
    return 0


def notifier_main(
    sizes: tuple[int, ...],
    write: bool = True,
    progress: Any = print,
    results_path: Path = RESULTS,
    markdown_path: Path = MARKDOWN,
) -> int:
    """Measure the notifier at ``sizes`` retained jobs; update ``notifier``, the targets and the page."""
    from bench import notifier, notifier_report

    measured = notifier.measure(sizes, progress)
    measured["machine"] = report.machine()
    results = read_results(results_path)
    results["notifier"] = measured
    print("\n".join(notifier_report.notifier_section(results)))
    if write:
        save_with_page(results, progress, results_path, markdown_path)
    return 0


def sizes_arg(text: str) -> tuple[int, ...]:
    """``1000,10000``: the notifier's sizes, each a whole number of jobs from 1 to 100,000."""
    try:
        sizes = tuple(int(part) for part in text.split(","))
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected sizes such as 1000,10000, got {text!r}") from None
    if not sizes or any(not 1 <= n <= 100_000 for n in sizes):
        raise argparse.ArgumentTypeError(f"each size must be 1 to 100000 jobs, got {text!r}")
    return sizes


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench", description=__doc__.split("\n\n")[0])
    parser.add_argument("--jobs", type=int, help=f"simulated jobs (default {Config.jobs})")
    parser.add_argument("--seed", type=int, default=Config.seed, help="workload RNG seed")
    parser.add_argument("--quick", action="store_true", help="a small run: fewer jobs and samples, no cross-check")
    parser.add_argument(
        "--import-runs", type=int, help=f"fresh processes per import timing (default {Config.import_runs})"
    )
    parser.add_argument("--sweep", action="store_true", help="also compare alternative WaitBounds and policy constants")
    parser.add_argument("--no-write", action="store_true", help="print only; leave results.json and docs/ alone")
    parser.add_argument(
        "--throughput",
        action="store_true",
        help="only the throughput of RunJobs in the local run: 1, 10, 100 jobs per completion mode",
    )
    parser.add_argument(
        "--throughput-max",
        type=int,
        default=THROUGHPUT_MAX,
        metavar="N",
        help=f"the largest run of --throughput (default {THROUGHPUT_MAX}; 1000 adds the 1,000-job runs, tens of "
        "minutes each)",
    )
    parser.add_argument(
        "--container",
        action="store_true",
        help="only each function's cold start in the Lambda runtime (sam local start-lambda; needs Docker)",
    )
    parser.add_argument(
        "--report-only",
        action="store_true",
        help="measure nothing: judge bench/results.json's figures against the targets again and redraw "
        "docs/performance.md and docs/performance.png from them",
    )
    parser.add_argument(
        "--notifier",
        action="store_true",
        help="only the notifier process at cluster scale: memory, readiness, publishing (minutes per size)",
    )
    parser.add_argument(
        "--e2e-callback",
        type=Path,
        metavar="FILE",
        help="only record the figures make bench-e2e-callback measured in the e2e tier (callback mode, the "
        "functions in containers): FILE is what e2e/tests/test_callback_latency.py wrote",
    )
    parser.add_argument(
        "--notifier-sizes",
        type=sizes_arg,
        default=(1000, 10_000, 20_000),
        metavar="N,N",
        help="retained jobs per --notifier run (default 1000,10000,20000)",
    )
    args = parser.parse_args(argv)
    if args.throughput_max < 1:
        parser.error(f"--throughput-max must be >= 1, got {args.throughput_max}")

    def progress(message: str) -> None:
        print(f"... {message}", file=sys.stderr, flush=True)

    if args.throughput:
        return throughput_main(args.throughput_max, write=not args.no_write, progress=progress)
    if args.container:
        return container_main(write=not args.no_write, progress=progress)
    if args.report_only:
        return report_main(progress=progress)
    if args.notifier:
        return notifier_main(args.notifier_sizes, write=not args.no_write, progress=progress)
    if args.e2e_callback:
        return e2e_callback_main(args.e2e_callback, progress=progress)

    config = QUICK if args.quick else Config()
    config = replace(config, seed=args.seed)
    if args.jobs:
        config = replace(config, jobs=args.jobs)
    if args.import_runs is not None:
        config = replace(config, import_runs=args.import_runs)

    results = run(config, progress)
    print(
        report.policy_table(results),
        "",
        report.lambda_table(results),
        "",
        report.targets_table(results["targets"]),
        sep="\n",
    )
    if not args.no_write:
        previous = read_results()
        results.update(measured_apart(previous))
        results["targets"] = report.targets(results)  # the kept notifier figures' targets too
        RESULTS.write_text(json.dumps(results, indent=2, default=str) + "\n")
        MARKDOWN.parent.mkdir(exist_ok=True)
        report.write(results, MARKDOWN, PLOT, progress)
    if args.sweep:
        from bench.sweep import render, sweep

        progress("sweep: alternative constants")
        jobs = make_workload(config.jobs, config.seed)
        # The sweep compares delay and transitions only; prices do not enter it.
        print(render(sweep(jobs, cost_models()["jobsync"], results["seed-600"], Prices())))
    print(f"\nbenchmark: {results['meta']['run_seconds']:.0f} s", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
