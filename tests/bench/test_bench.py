"""The benchmark (bench/) on a tiny workload: the structure and the sanity of what it reports."""

from __future__ import annotations

import itertools
import json
import math
from dataclasses import replace
from pathlib import Path

import pytest

from bench import report
from bench.__main__ import Config, run
from bench.prices import BilledDuration, LambdaAssumptions
from bench.simulate import (
    SAFETY_POLL_SECONDS,
    SWEEP_SECONDS,
    Policy,
    _fixed_poll_times,
    job_ref,
    policy_settings,
    poll_times,
    standard_policies,
    sweep_offset,
    sweeper_looks,
)
from bench.statemachine import (
    JOBSYNC_POLL_STATE,
    SEED_600,
    SEED_POLL_STATE,
    CostModel,
    cost_models,
    lambda_invocations,
    load_jobsync_definition,
    walk,
    with_completion_mode,
)
from bench.workload import Job, make_workload
from jobsync.core.wait import PollState, Starting, WaitBounds, callback_wait, poll_wait
from jobsync.evaluation.phase import Phase

POLICIES = (
    "seed-600",
    "fixed-60",
    "default",
    "default-hint20",
    "watch",
    "callback",
    "callback-no-sweeper",
    "learned-hint30",
)


@pytest.fixture(scope="module")
def results():
    # Tiny: 30 jobs, no fresh-process import timing, no end-to-end cross-check (moto is slow to import), and two
    # jobs the sweeper alone sees end.
    config = Config(jobs=30, import_runs=0, latency_calls=5, crosscheck=False, e2e_runs=0, dead_notifier_jobs=2)
    return run(config, progress=lambda _m: None)


def test_cost_model_is_read_off_the_real_definition():
    models = cost_models()
    jobsync = models["jobsync"]
    assert set(jobsync.loop) == {"Wait", "Status", "IsDone"}
    assert (jobsync.transitions_per_poll, jobsync.events_per_poll, jobsync.lambda_per_poll) == (3, 9, 1)
    assert list(jobsync.fixed_path) == [
        "CheckInput",
        "Submit",
        "IsDone",
        "Wait",
        "Status",
        "IsDone",
        "Cleanup",
        "Outcome",
        "Succeeded",
    ]
    assert jobsync.transitions_fixed == 6  # CheckInput, Submit, IsDone, Cleanup, Outcome, Succeeded
    seed = models["seed"]
    assert (seed.transitions_per_poll, seed.events_per_poll, seed.lambda_per_poll) == (4, 11, 0)


def test_walk_follows_the_phase_through_choices():
    path = walk(SEED_600, SEED_POLL_STATE, ["RUNNING", "FAILED"])
    assert path[-1] == "Training Failed"
    assert path.count(SEED_POLL_STATE) == 2


def test_the_cost_model_follows_the_definition_it_is_given():
    variant = json.loads(json.dumps(SEED_600))
    # One more Pass in the loop: one more transition and two more history events per poll.
    variant["States"]["Prepare Next Query"]["Next"] = "Log Poll"
    variant["States"]["Log Poll"] = {"Type": "Pass", "Next": "Wait Polling Interval"}
    model = CostModel.from_definition("variant", variant, SEED_POLL_STATE)
    assert (model.transitions_per_poll, model.events_per_poll) == (5, 13)
    # ... which the last poll (it sees the end) does not take: the fixed part is one lower.
    assert model.transitions_fixed == cost_models()["seed"].transitions_fixed - 1


def test_fixed_wait_shortcut_equals_the_poll_loop():
    job = Job("x", 123.4, 2000.0, 0)
    seed = standard_policies()[0]
    times = _fixed_poll_times(job, seed, 7 * 86_400)
    assert times[0] == 0 and all(b - a == 600 for a, b in itertools.pairwise(times))
    assert times[-1] >= job.end_s > times[-2]
    fixed_60 = standard_policies()[1]
    assert _fixed_poll_times(job, fixed_60, 7 * 86_400)[:2] == [60.0, 120.0]
    # Past the deadline, jobsync's Status ends the loop at the first poll at or after it.
    assert _fixed_poll_times(Job("x", 0, 10_000, 0), fixed_60, 1000)[-1] == 1020.0


def test_policy_polls_as_runs_poll_would():
    job = Job("x", 90, 1500, 0)
    times = poll_times(job, Policy("default", "", "jobsync"))
    # Submit's wait is min_seconds with the job's jitter, as the status step's rule gives it (never less, at
    # most a tenth more); the job is noticed at the first poll at or after its end.
    submit = PollState(Phase.PENDING, 0.0, 0.0, 0.0, 7 * 86_400, 0)
    assert times[0] == poll_wait(submit, WaitBounds(), job_ref(job))
    assert WaitBounds().min_seconds <= times[0] <= 1.1 * WaitBounds().min_seconds
    assert times[-1] >= job.end_s > times[-2]
    assert all(isinstance(t, float) and t == int(t) for t in times)


def test_a_fifth_of_the_jobs_fail_half_of_them_early():
    jobs = make_workload(300, 7)
    failed = [j for j in jobs if j.failed]
    assert len(failed) == 60
    assert [sum(j.klass == k for j in failed) for k in ("10-30 min", "1-3 h", "3-24 h")] == [20, 20, 20]
    # The successful jobs are the same with or without failures; a failing job ends earlier, its hint unchanged.
    plain = make_workload(300, 7, failures=False)
    for with_failures, without in zip(jobs, plain, strict=True):
        assert with_failures.hint_s == without.hint_s and with_failures.pending_s == without.pending_s
        assert with_failures.run_s == without.run_s if not with_failures.failed else with_failures.run_s < without.run_s
    early = [j for j, p in zip(jobs, plain, strict=True) if j.failed and j.run_s <= 0.1 * p.run_s]
    assert len(early) >= 30
    assert failed[0].phase_at(failed[0].end_s) is Phase.FAILED


def test_a_failure_ends_the_simulated_execution():
    job = Job("x", 60, 900, 7200, failed=True)
    times = poll_times(job, Policy("hint", "", "jobsync", hint=True))
    assert times[-1] >= job.end_s > times[-2]
    assert times[-1] - job.end_s < 150  # no 2,800 s first wait before the hint's window


def test_workload_is_reproducible_and_split_in_thirds():
    jobs = make_workload(30, 7)
    assert jobs == make_workload(30, 7)
    assert [sum(j.klass == k for j in jobs) for k in ("10-30 min", "1-3 h", "3-24 h")] == [10, 10, 10]
    assert all(
        0 <= j.pending_s <= 600 and 0.8 * j.end_s - 1 <= j.hint_s <= 1.2 * j.end_s + 1 for j in jobs if not j.failed
    )


def test_results_have_every_policy_with_sane_numbers(results):
    for name in POLICIES:
        r = results[name]
        for key in (
            "mean_delay_s",
            "p95_delay_s",
            "transitions_per_job",
            "lambda_gb_s_per_job",
            "longest_job_within_history_cap_s",
            "polls_per_job",
            "history_events_per_job",
            "cost_per_1000_jobs_usd",
            "mean_delay_succeeded_s",
            "mean_delay_failed_s",
        ):
            assert key in r, (name, key)
        assert 0 <= r["mean_delay_s"] <= r["p95_delay_s"] <= r["max_delay_s"]
        assert r["polls_per_job"] >= 1 and r["timed_out_jobs"] == 0
        assert r["cost_per_1000_jobs_usd"] > 0
        longest = r["longest_job_within_history_cap_s"]
        assert longest == "unbounded" or longest > 0
    watch = results["watch"]
    assert watch["p95_delay_s"] <= 2 * 1.0  # unmeasured here (e2e_runs=0): the 1 s default latency
    callback = results["callback"]
    assert callback["p95_delay_s"] <= 2 * 1.0 and callback["lambda_gb_s_per_job"] < watch["lambda_gb_s_per_job"] / 100
    assert set(results["scale"]["modes"]) >= {"watch", "callback", "default"}
    # The template's callback stack has the sweeper: its Awaits only back it up, so fewer transitions than without.
    assert callback["transitions_per_job"] < results["callback-no-sweeper"]["transitions_per_job"]
    assert callback["sweeper_looks_per_job"] > 0 and "sweeper_looks" in callback["cost_per_1000_jobs_breakdown_usd"]
    down = callback["notifier_down"]
    assert down["jobs"] == 2 and down["executions_resumed_by_the_sweeper"] == 2
    assert 0 <= down["mean_delay_s"] <= callback["notifier_down_delay_s"] == down["max_delay_s"]
    assert down["max_delay_s"] <= down["sweep_seconds"] + down["clock_step_s"]
    assert watch["lambda_gb_s_per_job"] > results["default"]["lambda_gb_s_per_job"]  # held watches are billed
    seed, fixed = results["seed-600"], results["fixed-60"]
    assert seed["lambda_gb_s_per_job"] == 0 and results["default"]["lambda_gb_s_per_job"] > 0
    assert seed["mean_delay_s"] < 600 and fixed["mean_delay_s"] < 60
    assert math.isclose(seed["transitions_per_job"], 1 + 4 * seed["polls_per_job"])
    assert results["default"]["longest_job_within_history_cap_s"] == "unbounded"


def test_lambda_measurements(results):
    lam = results["lambda"]
    assert lam["api_requests_per_running_poll"] == 1
    per_poll = lam["api_requests_per_poll"]
    assert per_poll["pending_with_diagnostics"]["requests_per_poll"] == 2
    assert per_poll["failed_with_logs"]["requests"] == ["GET pytorchjobs", "LIST pods", "GET pods/log"]
    # The poll that sees SUCCEEDED lists the pods once, for the result.
    assert per_poll["succeeded"]["requests"] == ["GET pytorchjobs", "LIST pods"]
    assert lam["import_ratio"] is None  # not measured in this run
    assert lam["peak_rss_mb_one_invocation"] > 10
    assert lam["handler_median_ms"] > 0 and lam["latency_ratio"] > 0


def test_cold_starts_in_a_lambda_like_process(results):
    """Each cluster mode's first invocation works in a fresh process; only EKS mode imports boto3, on that call."""
    cold = results["lambda"]["cold_starts"]
    assert cold["url"]["loaded_after_first_call"] == ["aws_xray_sdk.core"]  # tracing as deployed, no AWS call
    assert cold["eks"]["loaded_after_import"] == ["aws_xray_sdk.core"]
    assert cold["eks"]["loaded_after_first_call"] == ["boto3", "botocore.client", "aws_xray_sdk.core"]
    for mode in ("url", "eks"):
        assert cold[mode]["first_invocation_ms"] > 0 and cold[mode]["warm_median_ms"] > 0
    lam = results["lambda"]
    assert lam["ratio_lambda_like"] is None  # --import-runs 0: the cold start's own import stands in
    assert lam["cold_import_lambda_like_ms"] == cold["eks"]["import_ms"]
    billed = lam["billed_ms_model"]
    assert billed["warm_ms"] >= math.ceil(lam["warm_eks_https_ms"] + lam["assumptions"]["assumed_vpc_rtt_ms"])
    assert results["prices"]["lambda_billed_ms_per_invocation"] == billed["mean_ms_per_invocation"]


def test_billed_duration_is_measured_time_plus_the_assumed_network_rounded_up():
    assumed = LambdaAssumptions(
        vpc_rtt_ms=5, cold_extra_round_trips=5, runtime_init_ms=100, invocations_per_cold_start=100
    )
    billed = BilledDuration.model(
        warm_handler_ms=2.3, requests_per_poll=1, cold_import_ms=260.2, first_invocation_ms=410.5, assumed=assumed
    )
    assert billed.warm_ms == 8  # ceil(2.3 + 5 x 1)
    assert billed.init_ms == 361  # ceil(100 + 260.2): INIT billed
    assert billed.first_ms == 441  # ceil(410.5 + 5 x 1 + 5 x 5)
    assert billed.mean_ms == pytest.approx((99 * 8 + 361 + 441) / 100)  # 15.94
    # Two requests a poll (a PENDING job's pods), INIT not billed, a cold start every invocation.
    other = LambdaAssumptions(vpc_rtt_ms=5, cold_extra_round_trips=5, init_billed=False, invocations_per_cold_start=1)
    billed = BilledDuration.model(
        warm_handler_ms=0.2, requests_per_poll=2, cold_import_ms=260.2, first_invocation_ms=0.1, assumed=other
    )
    assert (billed.warm_ms, billed.init_ms, billed.first_ms, billed.mean_ms) == (11, 0, 36, 36)
    # Lambda bills at least 1 ms.
    assert BilledDuration.model(0.01, 0, 0, 0, LambdaAssumptions(vpc_rtt_ms=0, cold_extra_round_trips=0)).warm_ms == 1


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"warm_handler_ms": -1}, "cannot be negative"),
        ({"assumed": LambdaAssumptions(invocations_per_cold_start=0)}, "invocations_per_cold_start must be 1 or more"),
    ],
)
def test_billed_duration_refuses_impossible_inputs(kwargs, message):
    given = {
        "warm_handler_ms": 1.0,
        "requests_per_poll": 1.0,
        "cold_import_ms": 200.0,
        "first_invocation_ms": 300.0,
        "assumed": LambdaAssumptions(),
    } | kwargs
    with pytest.raises(ValueError, match=message):
        BilledDuration.model(**given)


def test_outputs_are_written(results, tmp_path):
    results = {**results, "meta": {**results["meta"], "run_seconds": 1.0}}
    json.dumps(results)  # what bench/results.json holds
    report.write(results, tmp_path / "performance.md", tmp_path / "performance.png", lambda _m: None)
    text = (tmp_path / "performance.md").read_text()
    assert "## Targets" in text and "watch" in text and "performance.png" in text
    assert (tmp_path / "performance.png").read_bytes()[:4] == b"\x89PNG"
    statuses = {t["target"]: t["status"] for t in results["targets"]}
    assert statuses["watch: Lambda cost per job-hour (reported)"] == "REPORTED"
    assert statuses["watch: p95 delay <= 5 s"] == "MET"
    assert set(statuses.values()) <= {"MET", "MISSED", "REPORTED"}


def test_callback_cost_is_read_off_the_real_definition():
    model = cost_models()["callback"]
    assert list(model.fixed_path) == [
        "CheckInput",
        "Submit",
        "IsDone",
        "Await",  # woken by the event with the state it stored
        "IsDone",
        "Await",  # its own look sees the end
        "IsDone",
        "Cleanup",
        "Outcome",
        "Succeeded",
    ]
    assert model.transitions(1) == 10 and model.transitions_per_poll == 3  # Await, Status, IsDone per look
    assert model.lambda_invocations(1) == 5  # Submit, two Awaits, Cleanup, and the resume function


def test_one_walk_serves_both_completion_modes():
    polling = with_completion_mode(load_jobsync_definition(), "poll")
    calling = with_completion_mode(load_jobsync_definition(), "callback")
    looks = ["RUNNING", "RUNNING", "SUCCEEDED"]
    polled, called = walk(polling, JOBSYNC_POLL_STATE, looks), walk(calling, JOBSYNC_POLL_STATE, looks)
    # Poll mode polls every look; callback mode's Awaits time out to a poll, but the last look follows the
    # event: it wakes the wait, and the wait it arms again looks.
    assert polled.count("Status") == 3 and "Await" not in polled
    assert called.count("Await") == 4 and called.count("Status") == 2
    assert called[called.index("Await") + 1] == "Status"  # the States.Timeout catcher
    assert called[-5:] == ["Await", "IsDone", "Cleanup", "Outcome", "Succeeded"]
    # Submit, the Awaits, the Statuses, Cleanup; in callback mode also the resume function, once.
    assert lambda_invocations(polling, polled) == 1 + 3 + 1
    assert lambda_invocations(calling, called) == 1 + 4 + 2 + 1 + 1


def test_callback_looks_wait_for_the_first_pod_check_then_the_safety_interval():
    job = Job("x", 100, 3 * 3600, 0)
    policy = next(p for p in standard_policies() if p.name == "callback-no-sweeper")
    times = poll_times(job, policy, latency=0.05)
    assert times[0] == 121  # the first look that reads the pods: diagnose_after_seconds + 1
    assert times[-1] == job.end_s + 0.05
    running = [t for t in times[:-1] if t >= job.pending_s]
    assert len(running) == 3 and all(b - a == 3600 for a, b in itertools.pairwise(running))


def test_callback_looks_follow_the_status_steps_rule():
    policy = next(p for p in standard_policies() if p.name == "callback-no-sweeper")
    job = Job("x", 500, 1800, 0)
    pending = [t for t in poll_times(job, policy, latency=0.05) if t < job.pending_s]
    assert pending == [121, 241, 361, 481]  # the first pod check, then the shortest grace (120 s) apart
    # The model calls jobsync.core.wait.callback_wait: a changed grace or diagnose time changes its looks.
    longer = replace(policy, settings=(("image_error_grace_seconds", 300),))
    assert [t for t in poll_times(job, longer, latency=0.05) if t < job.pending_s] == [121, 421]
    # Pods read from 400 s on: Submit's job has no status yet, so the operator timeout (300 s) comes first.
    later = replace(policy, settings=(("diagnose_after_seconds", 400),))
    assert [t for t in poll_times(job, later, latency=0.05) if t < job.pending_s] == [301, 401]
    settings = policy_settings(longer)
    first = callback_wait(PollState(Phase.PENDING, 0.0, 0.0, 0.0, 7 * 86_400, 0), settings, Starting(reconciled=False))
    assert first == 121 and settings.image_error_grace_seconds == 300


def test_with_the_sweeper_the_execution_looks_only_at_the_backstop_and_the_sweeper_takes_the_checks():
    policy = next(p for p in standard_policies() if p.name == "callback")
    settings = policy_settings(policy)
    assert settings.wait.sweeps and settings.wait.sweep_seconds == 120
    job = Job("x", 60, 13 * 3600, 0)
    times = poll_times(job, policy, latency=0.05)
    # Two 6-hour backstops, then the event's resume: no PENDING look, no hourly safety poll.
    assert times == [21_600, 43_200, job.end_s + 0.05]
    # The job runs from 60 s, before its pods' first check (121 s): the sweeper looks once, when its LIST shows
    # it RUNNING (as tests/integration/test_sweeper.py sees the real sweeper do); its end comes as an event.
    swept = sweeper_looks(job, policy)
    assert swept.looks == 1
    # With the notifier dead: the first sweep at or after the end.
    assert 0 <= swept.resumed_notifier_down_s - job.end_s < 120
    # A job pending for 10 minutes is checked while it starts: from 121 s on, at most once a sweep.
    assert 2 <= sweeper_looks(Job("y", 600, 3600, 0), policy).looks <= 1 + 600 // 120


def test_the_sweeper_looks_follow_sweep_due():
    """A longer grace means fewer checks: the simulator calls jobsync.core.wait.sweep_due, not a copy of it."""
    policy = next(p for p in standard_policies() if p.name == "callback")
    job = Job("x", 1500, 1800, 0)
    slower = replace(policy, settings=(*policy.settings, ("image_error_grace_seconds", 600)))
    assert sweeper_looks(job, slower).looks < sweeper_looks(job, policy).looks


def test_the_sweep_offsets_spread_over_the_interval():
    offsets = [sweep_offset(Job("c", 60, 600, 0, name=f"job-{i}"), 120) for i in range(400)]
    assert all(0 <= o < 120 for o in offsets)
    assert sum(o < 60 for o in offsets) in range(160, 241)  # about half in each half


def test_the_watch_simulation_keeps_the_poll_budget():
    policy = next(p for p in standard_policies() if p.name == "watch")
    # A job running for 30 days, 840 s watches: without the floor 3,086 polls would overrun the history.
    times = poll_times(Job("x", 600, 30 * 86_400, 0), policy, deadline=30 * 86_400)
    assert len(times) <= WaitBounds().poll_budget + 1


def test_the_delay_agreement_is_reported_beside_the_cross_check():
    agreement = {
        "jobs": 40,
        "real_mean_delay_s": 80.0,
        "simulated_mean_delay_s": 82.0,
        "simulated_without_jitter_mean_delay_s": 75.0,
        "relative_difference": 0.025,
        "agree": True,
        "same_delay_every_job": False,
    }
    recorded = json.loads((Path(__file__).resolve().parents[2] / "bench" / "results.json").read_text())
    crosscheck = {**recorded["crosscheck"], "delay_agreement": agreement}
    text = report.markdown({**recorded, "crosscheck": crosscheck}, "performance.png")
    assert "real 80.0 s, simulated 82.0 s, 2.5 % apart" in text and "the simulator gave 75.0 s" in text
    assert "delay_agreement" in json.dumps(recorded["crosscheck"])  # make bench records it


def test_the_simulated_callback_stack_is_the_templates_default():
    """The benchmark's callback row is the stack `sam deploy` makes in callback mode: the template's defaults."""
    from tests.cfn import load_template

    parameters = load_template()["Parameters"]
    assert parameters["Sweeper"]["Default"] == "ENABLED"
    assert int(parameters["SweepMinutes"]["Default"]) * 60 == SWEEP_SECONDS
    assert int(parameters["SafetyPollSeconds"]["Default"]) == SAFETY_POLL_SECONDS
