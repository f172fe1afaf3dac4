"""docs/performance.png as drawn: every policy named, no two names on top of each other, this round's targets."""

from __future__ import annotations

import copy
import json

import matplotlib.pyplot as plt
import pytest

from bench import plot
from bench.__main__ import RESULTS
from bench.tables import policies
from bench.targets import CALLBACK_TRANSITIONS_PER_JOB, DEFAULT_DELAY_VS_SEED, DEFAULT_TRANSITIONS_VS_SEED


@pytest.fixture(scope="module")
def recorded():
    return json.loads(RESULTS.read_text())


def drawn(results):
    fig = plot.figure(results)
    fig.canvas.draw()
    return fig


def assert_readable(fig, results):
    """Each policy's name drawn once, inside the axes, meeting no other name and no point, nearest its own point."""
    boxes = plot.label_boxes(fig)
    names = policies(results)
    assert sorted(boxes) == sorted(names)
    assert plot.overlaps(boxes) == []
    ax = fig.axes[0]
    area = ax.get_window_extent()
    points = {n: ax.transData.transform((results[n]["transitions_per_job"], results[n]["mean_delay_s"])) for n in names}
    for name, box in boxes.items():
        assert area.x0 <= box.x0 and box.x1 <= area.x1 and area.y0 <= box.y0 and box.y1 <= area.y1, name
        for other, (x, y) in points.items():
            assert not box.contains(x, y), f"{name}'s label covers {other}'s point"
        centre = ((box.x0 + box.x1) / 2, (box.y0 + box.y1) / 2)
        own = sum((c - p) ** 2 for c, p in zip(centre, points[name], strict=True))
        assert all(
            own < sum((c - p) ** 2 for c, p in zip(centre, q, strict=True))
            for q in points.values()
            if q is not points[name]
        )


def test_the_recorded_plot_names_every_policy_apart(recorded):
    fig = drawn(recorded)
    try:
        assert_readable(fig, recorded)
    finally:
        plt.close(fig)


def test_names_stay_apart_where_the_points_coincide(recorded):
    """callback drawn where watch is, learned-hint30 where default-hint20 is: the names still do not meet."""
    crowded = copy.deepcopy(recorded)
    for name, like in (("callback", "watch"), ("learned-hint30", "default-hint20")):
        for key in ("transitions_per_job", "mean_delay_s"):
            crowded[name][key] = recorded[like][key] * 1.01
    fig = drawn(crowded)
    try:
        assert_readable(fig, crowded)
    finally:
        plt.close(fig)


def test_the_overlap_check_sees_two_names_on_top_of_each_other(recorded):
    """So that the checks above can fail: callback's name moved onto watch's is seen."""
    fig = drawn(recorded)
    try:
        labels = {t.get_text(): t for t in fig.axes[0].texts if t.get_gid() == plot.LABEL_GID}
        labels["callback"].xy = labels["watch"].xy
        labels["callback"].set_position(labels["watch"].get_position())
        labels["callback"].set_horizontalalignment(labels["watch"].get_horizontalalignment())
        labels["callback"].set_verticalalignment(labels["watch"].get_verticalalignment())
        fig.canvas.draw()
        assert ("watch", "callback") in plot.overlaps(plot.label_boxes(fig)) or (
            "callback",
            "watch",
        ) in plot.overlaps(plot.label_boxes(fig))
    finally:
        plt.close(fig)


def test_the_plot_draws_this_rounds_targets_on_log_scales(recorded):
    fig = drawn(recorded)
    try:
        ax = fig.axes[0]
        assert (ax.get_xscale(), ax.get_yscale()) == ("log", "log")
        legend = [t.get_text() for t in ax.get_legend().get_texts()]
        assert f"callback's target: <= {CALLBACK_TRANSITIONS_PER_JOB} transitions per job (left of the line)" in legend
        assert (
            f"default's target: delay <= {DEFAULT_DELAY_VS_SEED:g}x, transitions <= {DEFAULT_TRANSITIONS_VS_SEED:g}x "
            "seed-600's" in legend
        )
        (line,) = ax.get_lines()
        assert list(line.get_xdata()) == [CALLBACK_TRANSITIONS_PER_JOB] * 2
        # The callback target line is on the axes, and the fast modes are apart from each other on both scales.
        assert ax.get_xlim()[0] < CALLBACK_TRANSITIONS_PER_JOB
        x = {
            n: ax.transData.transform((recorded[n]["transitions_per_job"], recorded[n]["mean_delay_s"]))
            for n in ("watch", "callback")
        }
        assert abs(x["watch"][0] - x["callback"][0]) > 50 and abs(x["watch"][1] - x["callback"][1]) > 20
        assert "0.12x" in ax.get_title()  # the cost target, which these axes cannot show, named
    finally:
        plt.close(fig)
