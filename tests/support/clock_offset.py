"""``pytest --clock-offset-days=N``: run the suite N days in the future.

Every clock the project reads moves: ``jobsync.clock.wall()`` (and so
``jobsync.clock.now()`` and the harness's ``WallClock``) and the harness's
virtual clocks, which start at ``harness.clock.default_start()``. A test that
passes today and fails with the offset depends on today's date.

TLS certificates made for local servers are the one exception: OpenSSL checks
them against the operating system's clock, so they are dated by it.
"""

from __future__ import annotations

import pytest

from jobsync import clock

DAY = 86_400


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption(
        "--clock-offset-days",
        type=int,
        default=0,
        metavar="N",
        help="move every clock the project reads N days ahead (proves the suite does not depend on today's date)",
    )


def pytest_configure(config: pytest.Config) -> None:
    clock.set_offset(config.getoption("--clock-offset-days") * DAY)


def pytest_report_header(config: pytest.Config) -> str | None:
    days = config.getoption("--clock-offset-days")
    return f"clocks moved {days} days ahead" if days else None
