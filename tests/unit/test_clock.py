"""The clock offset reaches every clock the project reads (pytest --clock-offset-days)."""

from __future__ import annotations

import time

import pytest

from harness.clock import DEFAULT_START, VirtualClock, default_start
from harness.local import WallClock
from jobsync import clock


@pytest.fixture
def offset():
    before = clock.offset()
    clock.set_offset(before + 1460 * 86_400)
    yield 1460 * 86_400
    clock.set_offset(before)


def test_the_offset_moves_the_wall_clock_now_and_the_harness_clocks(offset):
    assert clock.wall() - time.time() == pytest.approx(clock.offset(), abs=2)
    assert clock.now() == pytest.approx(clock.wall(), abs=2)
    assert WallClock().now() == pytest.approx(clock.wall(), abs=2)
    assert VirtualClock().now() == default_start() == DEFAULT_START + clock.offset()


def test_a_pinned_clock_is_not_moved(offset, pinned_clock):
    at = pinned_clock("2026-11-29T11:00:00Z")
    assert clock.now() == at and clock.utcnow().year == 2026
