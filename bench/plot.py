"""docs/performance.png: each policy's mean detection delay against its state transitions per job, with the
targets of this round (bench.targets) drawn where these axes can show them."""

from __future__ import annotations

from itertools import combinations
from pathlib import Path
from typing import TYPE_CHECKING, Any

from bench.tables import policies
from bench.targets import (
    CALLBACK_COST_VS_SEED,
    CALLBACK_TRANSITIONS_PER_JOB,
    DEFAULT_DELAY_VS_SEED,
    DEFAULT_TRANSITIONS_VS_SEED,
    HINT_DELAY_VS_SEED,
    HINT_TRANSITIONS_VS_SEED,
)

if TYPE_CHECKING:
    from matplotlib.artist import Artist
    from matplotlib.figure import Figure
    from matplotlib.text import Annotation
    from matplotlib.transforms import Bbox

__all__ = ["figure", "label_boxes", "overlaps", "plot"]

LABEL_GID = "policy-label"
# Where a policy's name may sit around its point, in points, tried in this order; the first that overlaps no other
# label and no point, and is nearer its own point than any other, wins: the same results give the same picture.
OFFSETS = [
    (dx * r, dy * r)
    for r in (1, 2, 3, 4)
    for dx, dy in ((7, 4), (7, -11), (-7, 4), (-7, -11), (0, 9), (0, -16), (12, -4), (-12, -4))
]
COLORS = {
    "seed-600": "tab:gray",
    "fixed-60": "tab:brown",
    "default": "tab:green",
    "default-hint20": "tab:red",
    "learned-hint30": "tab:orange",
    "watch": "tab:blue",
    "callback": "tab:purple",
    "callback-no-sweeper": "tab:pink",
}


def plot(results: dict[str, Any], path: Path) -> None:
    import matplotlib.pyplot as plt

    fig = figure(results)
    fig.savefig(path, metadata={"Software": None})  # no version stamp: the file changes only when the numbers do
    plt.close(fig)


def figure(results: dict[str, Any]) -> Figure:
    """The figure, drawn, with its labels placed (bench.plot.label_boxes reads them back)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    from matplotlib.patches import Patch, Rectangle

    names = policies(results)
    fig, ax = plt.subplots(figsize=(8, 5.4), dpi=110)
    # Log on both axes: the delays run from 0.05 s (watch) to 300 s (seed-600), the transitions from about 11
    # (callback) to 840 (fixed-60), all above zero, so symlog's linear part would only squeeze the fast modes
    # together again; and a target given as a ratio of the seed's figures is then the same size wherever it sits.
    ax.set_xscale("log")
    ax.set_yscale("log")
    handles: list[Artist] = []
    seed = results.get("seed-600")
    if seed:
        x0, y0 = seed["transitions_per_job"], seed["mean_delay_s"]
        for name, dx, dy, style in (
            ("default", DEFAULT_TRANSITIONS_VS_SEED, DEFAULT_DELAY_VS_SEED, {"alpha": 0.12, "lw": 0}),
            ("default-hint20", HINT_TRANSITIONS_VS_SEED, HINT_DELAY_VS_SEED, {"fill": False, "ls": "--", "lw": 1.2}),
        ):
            ax.add_patch(Rectangle((1, 1e-3), dx * x0 - 1, dy * y0 - 1e-3, color=COLORS[name], zorder=1, **style))
            handles.append(
                Patch(
                    color=COLORS[name],
                    label=f"{name}'s target: delay <= {dy:g}x, transitions <= {dx:g}x seed-600's",
                    **style,
                )
            )
    line = ax.axvline(CALLBACK_TRANSITIONS_PER_JOB, color=COLORS["callback"], ls=":", lw=1.5, zorder=1)
    line.set_label(f"callback's target: <= {CALLBACK_TRANSITIONS_PER_JOB} transitions per job (left of the line)")
    handles.append(line)
    for name in names:
        r = results[name]
        ax.scatter([r["transitions_per_job"]], [r["mean_delay_s"]], s=40, zorder=3, color=COLORS.get(name, "tab:cyan"))
    xs = [results[n]["transitions_per_job"] for n in names] + [CALLBACK_TRANSITIONS_PER_JOB]
    ys = [results[n]["mean_delay_s"] for n in names]
    ax.set_xlim(min(xs) / 1.6, max(xs) * 1.8)
    ax.set_ylim(min(ys) / 4, max(ys) * 4)
    ax.set_xlabel("state transitions per job (Step Functions Standard, log scale)")
    ax.set_ylabel("mean detection delay (s, log scale)")
    ax.set_title(
        f"Detection delay against state transitions, {results['meta']['jobs']:,} simulated jobs\n"
        f"(callback's cost target, <= {CALLBACK_COST_VS_SEED:g}x seed-600's USD per 1,000 jobs, is not on these "
        "axes: see the Targets table)",
        fontsize=9,
    )
    ax.grid(alpha=0.3, which="major")
    ax.grid(alpha=0.1, which="minor")
    # Below the axes, where it hides no point and no label.
    ax.legend(handles=handles, loc="upper center", bbox_to_anchor=(0.5, -0.13), fontsize=8, frameon=False)
    fig.tight_layout()
    _place_labels(fig, names, results)
    return fig


def _place_labels(fig: Figure, names: list[str], results: dict[str, Any]) -> None:
    """Each policy's name at the first offset (OFFSETS) whose box meets no placed label and no point, and whose
    centre is nearer its own point than any other point."""
    (ax,) = fig.axes
    renderer = fig.canvas.get_renderer()  # type: ignore[attr-defined]
    area = ax.get_window_extent(renderer)
    points = {n: ax.transData.transform((results[n]["transitions_per_job"], results[n]["mean_delay_s"])) for n in names}
    taken = [_around(x, y, 5) for x, y in points.values()]
    # The crowded points first, so that they get the nearer offsets.
    crowd = {n: sum(abs(p - q).sum() < 120 for q in points.values()) for n, p in points.items()}
    for name in sorted(names, key=lambda n: (-crowd[n], names.index(n))):
        r = results[name]
        label = ax.annotate(
            name,
            (r["transitions_per_job"], r["mean_delay_s"]),
            xytext=OFFSETS[0],
            textcoords="offset points",
            fontsize=9,
            color=COLORS.get(name, "tab:cyan"),  # the point's colour: which name is whose, even where two crowd
            zorder=4,
            gid=LABEL_GID,
        )
        for dx, dy in OFFSETS:
            _move(label, dx, dy)
            box = label.get_window_extent(renderer)
            centre = (box.x0 + box.x1) / 2, (box.y0 + box.y1) / 2
            own = _distance(centre, points[name])
            nearest = all(own < _distance(centre, q) for n, q in points.items() if n != name)
            if nearest and _inside(box, area) and not any(box.overlaps(t) for t in taken):
                break
        else:
            raise ValueError(f"no free place for the label {name!r} on the plot")
        taken.append(box)


def _move(label: Annotation, dx: float, dy: float) -> None:
    label.set_position((dx, dy))
    label.set_horizontalalignment("left" if dx > 0 else "right" if dx < 0 else "center")
    label.set_verticalalignment("bottom" if dy > 0 else "top")


def _around(x: float, y: float, r: float) -> Bbox:
    from matplotlib.transforms import Bbox

    return Bbox([[x - r, y - r], [x + r, y + r]])


def _distance(a: Any, b: Any) -> float:
    return float(((a[0] - b[0]) ** 2 + (a[1] - b[1]) ** 2) ** 0.5)


def _inside(box: Bbox, area: Bbox) -> bool:
    return bool(area.x0 <= box.x0 and box.x1 <= area.x1 and area.y0 <= box.y0 and box.y1 <= area.y1)


def label_boxes(fig: Figure) -> dict[str, Bbox]:
    """Each policy label's box as drawn, in display pixels."""
    renderer = fig.canvas.get_renderer()  # type: ignore[attr-defined]
    return {t.get_text(): t.get_window_extent(renderer) for t in fig.axes[0].texts if t.get_gid() == LABEL_GID}


def overlaps(boxes: dict[str, Bbox]) -> list[tuple[str, str]]:
    """The pairs of labels whose boxes meet."""
    return [(a, b) for (a, p), (b, q) in combinations(boxes.items(), 2) if p.overlaps(q)]
