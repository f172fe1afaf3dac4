"""The simulator against the real state machine: the same jobs, the same detection delays, jitter included.

Twenty jobs of the throughput workload run as RunJob executions in the local run (poll mode, the default
policy); the simulator replays each with its pending and run time as they were and its uid, which the
status step's jitter hashes (bench.crosscheck.delay_agreement).
"""

from __future__ import annotations

import pytest

from bench.crosscheck import AGREEMENT, delay_agreement


@pytest.fixture(scope="module")
def agreement():
    return delay_agreement(jobs=20)


def test_simulated_and_real_mean_delays_agree_within_5_percent(agreement):
    assert agreement["jobs"] == 20
    assert agreement["relative_difference"] <= AGREEMENT == 0.05
    assert agreement["agree"] is True


def test_each_replayed_job_is_noticed_when_the_real_execution_noticed_it(agreement):
    # Alone on the virtual clock the execution polls exactly when the policy says: no difference at all.
    assert agreement["same_delay_every_job"] is True
    assert agreement["simulated_mean_delay_s"] == agreement["real_mean_delay_s"] > 0
