"""Figures for sweep reports, searches and run reports (the only module importing matplotlib,
imported lazily).

The functions draw what they are given: the numbers (means, interval bounds, grids) are
computed by ``zsim.sweep.report``, a run's (topology, depth, latency and drops over time)
by ``zsim.report_run.data``; here are only axes, bands, colours and files. Every function
writes one PNG and returns its path. matplotlib runs with the Agg backend (no display
needed).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from .units import human_bytes, human_time, time_unit

if TYPE_CHECKING:  # pragma: no cover
    from .report_run.data import DepthPanel, Drops, LatencyPanel, NetworkMap, NetworkPanel, Topology


def plain_text(fig: Any) -> Any:
    """Make every text of ``fig`` that zsim put there plain text: no mathtext (``$...$`` in a
    scenario name, an endpoint, a design name or a figure title is shown as written, not
    parsed, so it can neither fail nor render as something else) and no TeX (a user's
    ``text.usetex`` would hand names to LaTeX). Tick labels that matplotlib's own number
    formatters write (``$10^{2}$`` on a log axis) keep their mathtext; tick labels zsim gave
    (value names: a ``FixedFormatter`` or ``FuncFormatter``) get their ``$`` escaped, as
    matplotlib draws those anew on each draw."""
    from matplotlib.text import Text
    from matplotlib.ticker import FixedFormatter, FuncFormatter

    def escaped(formatter: Any) -> Any:
        def label(x: float, pos: int | None = None) -> str:
            return str(formatter(x, pos)).replace("$", r"\$")

        plain = FuncFormatter(label)
        plain.zsim_plain = True  # type: ignore[attr-defined]
        return plain

    texts = fig.findobj(Text)  # first: listing an axis's children creates its tick labels
    generated: set[int] = set()
    for ax in fig.axes:
        for axis in (ax.xaxis, ax.yaxis):
            # labels given as text (set_ticks(..., labels)): FixedFormatter or FuncFormatter
            if isinstance(axis.get_major_formatter(), (FixedFormatter, FuncFormatter)):
                if not getattr(axis.get_major_formatter(), "zsim_plain", False):
                    axis.set_major_formatter(escaped(axis.get_major_formatter()))
            if isinstance(axis.get_minor_formatter(), (FixedFormatter, FuncFormatter)):
                if not getattr(axis.get_minor_formatter(), "zsim_plain", False):
                    axis.set_minor_formatter(escaped(axis.get_minor_formatter()))
            for tick in list(axis.majorTicks) + list(axis.minorTicks):
                for label in (tick.label1, tick.label2):
                    label.set_usetex(False)
                    generated.add(id(label))  # drawn anew from the formatter at each draw
            generated.add(id(axis.offsetText))
            axis.offsetText.set_usetex(False)
    for text in texts:
        text.set_usetex(False)
        if id(text) in generated or getattr(text, "zsim_plain", False):
            continue
        if text.get_wrap():  # wrapping measures the text as mathtext whatever parse_math says: escape its $ instead
            text.set_text(str(text.get_text()).replace("$", r"\$"))
        else:
            text.set_parse_math(False)
        text.zsim_plain = True
    return fig


def save(fig: Any, path: str | Path) -> Path:
    """Write a figure whole or not at all (``zsim.files.atomic_write``: a killed report leaves
    no half PNG, and a symbolic link at ``path`` is replaced, not written through); close it.
    Its texts are plain text first (``plain_text``)."""
    import io

    from matplotlib import rc_context

    from .files import atomic_write

    buffer = io.BytesIO()
    try:
        plain_text(fig)
        with rc_context({"text.usetex": False}):
            fig.savefig(buffer, format=Path(path).suffix.lstrip(".") or "png", dpi=110, bbox_inches="tight")
    finally:
        _pyplot().close(fig)
    return atomic_write(path, buffer.getvalue())


def _pyplot() -> Any:
    try:
        import matplotlib
    except ImportError as exc:  # pragma: no cover - depends on the environment
        raise RuntimeError("figures need matplotlib: pip install 'zsim[plot]'") from exc
    matplotlib.use("Agg", force=True)
    import matplotlib.pyplot as plt

    return plt


@dataclass
class Line:
    """One curve: a mean with an optional interval band."""

    label: str
    x: Sequence[float]
    y: Sequence[float]
    low: Sequence[float] | None = None
    high: Sequence[float] | None = None
    style: str = "-"
    color_index: int = 0


@dataclass
class Panel:
    title: str
    lines: list[Line] = field(default_factory=list)


@dataclass
class Grid:
    """A heatmap panel: ``values[i][j]`` at y = ``y[i]``, x = ``x[j]``."""

    title: str
    x: Sequence[Any]
    y: Sequence[Any]
    values: Any


def _layout(n: int) -> tuple[int, int]:
    cols = 2 if n == 4 else min(n, 3)
    rows = math.ceil(n / cols)
    return rows, cols


def _fmt(value: Any) -> str:
    if isinstance(value, float):
        if value == 0:
            return "0"
        if abs(value) >= 1000 or abs(value) < 0.01:
            return f"{value:.3g}"
        return f"{value:.4g}"
    return str(value)


def _positive(values: Sequence[float]) -> list[float]:
    return [float(v) for v in values if v is not None and np.isfinite(v) and v > 0]


def colour_for(index: int, count: int) -> Any:
    """Distinct colours: the ten of matplotlib's ``tab10`` for up to ten curves, then a
    ``viridis`` ramp (ordered series: many values of one axis)."""
    plt = _pyplot()
    if count <= 10:
        return plt.get_cmap("tab10")(index % 10)
    return plt.get_cmap("viridis")(0.05 + 0.9 * (index / max(1, count - 1)))


def line_figure(panels: Sequence[Panel], path: str | Path, *, title: str, xlabel: str, ylabel: str, logx: bool = False,
                logy: bool | str = False, hline: float | None = None, hline_label: str | None = None,
                note: str | None = None, legend_title: str | None = None,
                xticks: Sequence[tuple[float, str]] | None = None, yticks: Sequence[tuple[float, str]] | None = None,
                detached_from: float | None = None) -> Path:
    """Small multiples of mean curves with shaded interval bands.

    ``logy="symlog"`` gives a log axis that still shows zeros (drop fractions). ``xticks``
    / ``yticks``: (position, label) pairs instead of numeric ticks. Points right of
    ``detached_from`` (an HWM of 0, unlimited, drawn after the largest value) are drawn as
    markers with their interval, not joined to the curve, beyond a dotted separator.
    """
    plt = _pyplot()
    rows, cols = _layout(len(panels))
    fig, axes = plt.subplots(rows, cols, figsize=(4.6 * cols + 0.8, 3.5 * rows + 0.9), squeeze=False, sharey=True)
    n_colours = max([line.color_index for panel in panels for line in panel.lines] + [0]) + 1
    all_y: list[float] = []
    for index, panel in enumerate(panels):
        ax = axes[index // cols][index % cols]
        for line in panel.lines:
            colour = colour_for(line.color_index, n_colours)
            x = np.asarray(line.x, dtype=float)
            y = np.asarray(line.y, dtype=float)
            joined = x <= detached_from if detached_from is not None else np.ones(len(x), dtype=bool)
            ax.plot(x[joined], y[joined], line.style, color=colour, marker="o", markersize=3, linewidth=1.4, label=line.label)
            if (~joined).any():
                ax.plot(x[~joined], y[~joined], linestyle="none", color=colour, marker="D", markersize=4)
            if line.low is not None and line.high is not None:
                low, high = np.asarray(line.low, dtype=float), np.asarray(line.high, dtype=float)
                ax.fill_between(x[joined], low[joined], high[joined], color=colour, alpha=0.2, linewidth=0)
                if (~joined).any():
                    ax.vlines(x[~joined], low[~joined], high[~joined], color=colour, alpha=0.5, linewidth=3)
            all_y.extend(_positive(line.y))
        if hline is not None:
            ax.axhline(hline, color="crimson", linestyle=":", linewidth=1.2, label=hline_label)
        if detached_from is not None:
            ax.axvline(detached_from, color="0.6", linestyle=(0, (1, 3)), linewidth=0.8)
        if logx:
            ax.set_xscale("log")
        if xticks:
            ax.set_xticks([p for p, _ in xticks], [label for _, label in xticks], rotation=30 if len(xticks) > 5 else 0,
                          ha="right" if len(xticks) > 5 else "center", fontsize=8)
            ax.xaxis.set_minor_locator(plt.NullLocator())
        ax.set_title(panel.title, fontsize=10)
        ax.grid(True, which="major", alpha=0.3)
        if index // cols == rows - 1 or index + cols >= len(panels):
            ax.set_xlabel(xlabel)
        if index % cols == 0:
            ax.set_ylabel(ylabel)
    if logy == "symlog":
        floor = min(all_y) if all_y else 1e-4
        linthresh = 10 ** math.floor(math.log10(max(floor, 1e-9)))
        for ax in axes.flat:
            ax.set_yscale("symlog", linthresh=linthresh)
            ax.set_ylim(bottom=0)
    elif logy:
        for ax in axes.flat:
            ax.set_yscale("log")
    if yticks:
        for ax in axes.flat:
            ax.set_yticks([p for p, _ in yticks], [label for _, label in yticks], fontsize=8)
            ax.yaxis.set_minor_locator(plt.NullLocator())
    for index in range(len(panels), rows * cols):
        axes[index // cols][index % cols].set_visible(False)
    handles, labels = axes[0][0].get_legend_handles_labels()
    if handles:
        fig.legend(handles, labels, loc="center left", bbox_to_anchor=(1.0, 0.5), fontsize=8, title=legend_title, title_fontsize=8,
                   frameon=False)
    fig.suptitle(title, fontsize=11)
    if note:
        fig.text(0.01, 0.005, note, fontsize=7, color="0.35", ha="left", va="bottom")
    plain_text(fig).tight_layout(rect=(0, 0.03 if note else 0, 1, 1))
    return save(fig, path)


def heatmap_figure(grids: Sequence[Grid], path: str | Path, *, title: str, xlabel: str, ylabel: str, colorbar_label: str,
                   symlog: bool = False, annotate: bool | None = None, note: str | None = None) -> Path:
    """One heatmap per panel over two categorical axes (values in the cells if few)."""
    plt = _pyplot()
    from matplotlib import colors as mcolors

    rows, cols = _layout(len(grids))
    fig, axes = plt.subplots(rows, cols, figsize=(4.8 * cols + 1.2, 3.9 * rows + 0.8), squeeze=False)
    arrays = [np.asarray(g.values, dtype=float) for g in grids]
    finite = np.concatenate([a[np.isfinite(a)] for a in arrays] or [np.array([0.0])])
    vmin = float(finite.min()) if finite.size else 0.0
    vmax = float(finite.max()) if finite.size else 1.0
    if vmax <= vmin:
        vmax = vmin + (abs(vmin) or 1.0)
    if symlog:
        positive = finite[finite > 0]
        linthresh = 10 ** math.floor(math.log10(positive.min())) if positive.size else 1e-4
        norm: Any = mcolors.SymLogNorm(linthresh=linthresh, vmin=min(0.0, vmin), vmax=vmax, base=10)
    else:
        norm = mcolors.Normalize(vmin=vmin, vmax=vmax)
    image = None
    for index, grid in enumerate(grids):
        ax = axes[index // cols][index % cols]
        values = np.asarray(grid.values, dtype=float)
        image = ax.imshow(values, origin="lower", aspect="auto", cmap="magma_r", norm=norm, interpolation="nearest")
        ax.set_xticks(range(len(grid.x)), [_fmt(v) for v in grid.x], rotation=45, ha="right", fontsize=7)
        ax.set_yticks(range(len(grid.y)), [_fmt(v) for v in grid.y], fontsize=7)
        ax.set_title(grid.title, fontsize=10)
        ax.set_xlabel(xlabel)
        if index % cols == 0:
            ax.set_ylabel(ylabel)
        show = annotate if annotate is not None else values.size <= 48
        if show:
            for i in range(values.shape[0]):
                for j in range(values.shape[1]):
                    if np.isfinite(values[i, j]):
                        level = norm(values[i, j])
                        ax.text(j, i, _fmt(float(values[i, j])), ha="center", va="center", fontsize=6,
                                color="white" if level > 0.6 else "black")
    for index in range(len(grids), rows * cols):
        axes[index // cols][index % cols].set_visible(False)
    if image is not None:
        bar = fig.colorbar(image, ax=axes.ravel().tolist(), shrink=0.9)
        bar.set_label(colorbar_label)
    fig.suptitle(title, fontsize=11)
    if note:
        fig.text(0.01, 0.005, note, fontsize=7, color="0.35", ha="left", va="bottom")
    return save(fig, path)


def scatter_figure(x: Sequence[float], y: Sequence[float], path: str | Path, *, title: str, xlabel: str, ylabel: str,
                   colour: Sequence[float] | None = None, colour_label: str | None = None, yerr: Sequence[float] | None = None,
                   logx: bool = False, logy: bool | str = False, note: str | None = None) -> Path:
    """Points of a sampled (random or Latin-hypercube) design, coloured by a second axis."""
    plt = _pyplot()
    fig, ax = plt.subplots(figsize=(6.2, 4.2))
    if yerr is not None:
        ax.errorbar(x, y, yerr=yerr, fmt="none", ecolor="0.7", elinewidth=0.8, zorder=1)
    points = ax.scatter(x, y, c=colour if colour is not None else "C0", cmap="viridis", s=14, zorder=2)
    if colour is not None:
        bar = fig.colorbar(points, ax=ax)
        if colour_label:
            bar.set_label(colour_label)
    if logx:
        ax.set_xscale("log")
    if logy == "symlog":
        positive = _positive(y)
        ax.set_yscale("symlog", linthresh=10 ** math.floor(math.log10(min(positive))) if positive else 1e-4)
    elif logy:
        ax.set_yscale("log")
    ax.set_xlabel(xlabel)
    ax.set_ylabel(ylabel)
    ax.set_title(title, fontsize=11)
    ax.grid(True, alpha=0.3)
    if note:
        fig.text(0.01, 0.005, note, fontsize=7, color="0.35", ha="left", va="bottom")
    plain_text(fig).tight_layout()
    return save(fig, path)


@dataclass
class SearchPoint:
    """One design a search ran: its cost, the binding metric's mean and interval, its status."""

    cost: float
    mean: float
    low: float
    high: float
    status: str
    chosen: bool = False


#: a search design's status as a colour
SEARCH_COLOURS = {"feasible": "tab:green", "infeasible": "tab:red", "not steady": "0.55", "failed": "0.3", "open": "tab:orange",
                  "dominated": "tab:blue"}


def search_figure(points: Sequence[SearchPoint], path: str | Path, *, title: str, xlabel: str, ylabel: str, target: float,
                  indifference: float, note: str | None = None) -> Path:
    """Cost against a constraint's metric for every design a search ran (``zsim search``),
    with the target, its indifference zone and the chosen design."""
    plt = _pyplot()
    fig, ax = plt.subplots(figsize=(6.4, 4.2))
    for status, colour in SEARCH_COLOURS.items():
        group = [p for p in points if p.status == status]
        if not group:
            continue
        means = [p.mean for p in group]
        errors = [[max(0.0, p.mean - p.low) if p.low == p.low else 0.0 for p in group],
                  [max(0.0, p.high - p.mean) if p.high == p.high else 0.0 for p in group]]
        ax.errorbar([p.cost for p in group], means, yerr=errors, fmt="o", color=colour, ms=4, capsize=2, label=status)
    for p in points:
        if p.chosen:
            ax.plot([p.cost], [p.mean], marker="*", ms=16, color="gold", markeredgecolor="black", zorder=5, label="answer")
    ax.axhline(target, color="black", linestyle="--", linewidth=1)
    for edge in (target - indifference, target + indifference):
        ax.axhline(edge, color="black", linestyle=":", linewidth=0.8)
    ax.set_xlabel(xlabel)
    ax.set_ylabel(ylabel)
    ax.set_title(title, fontsize=10)
    ax.grid(True, alpha=0.3)
    ax.legend(fontsize=8)
    if note:
        fig.text(0.01, 0.005, note, fontsize=7, color="0.35", ha="left", va="bottom")
    plain_text(fig).tight_layout()
    return save(fig, path)


# -- run reports (zsim run --report) --------------------------------------------------------

#: where a message waits on its way from a writer to a reader, in the order it passes them
PLACE_COLOURS = {"pipe": "tab:blue", "send pipe": "tab:blue", "out batch": "tab:orange", "kernel": "tab:green",
                 "in engine": "tab:purple", "recv pipe": "tab:red"}
PLACE_LEGEND = (("send pipe", "writer's pipe (inproc: the one pipe between them)"),
                ("out batch", "writer's engine: batch not yet in the kernel"),
                ("kernel", "kernel buffers (send + receive)"), ("in engine", "reader's engine: decoded, refused by a full pipe"),
                ("recv pipe", "reader's pipe"))
#: warning codes as a figure says them
FLAG_TEXT = {"overloaded": "overloaded", "backlog_at_end": "backlog at end", "latency_not_settled": "latency not settled",
             "loss_not_settled": "loss not settled", "rate_not_achieved": "rate not achieved", "no_subscription": "subscribes to nothing",
             "subscription_matches_nothing": "subscription matches nothing", "starts_after_horizon": "starts after horizon"}


def flag_text(codes: Sequence[str]) -> str:
    return ", ".join(FLAG_TEXT.get(code, code) for code in codes)


def _save(fig: Any, path: str | Path) -> Path:
    return save(fig, path)


def topology_figure(topo: Topology, path: str | Path, *, title: str) -> Path:
    """Processes as boxes holding their sockets, connections as arrows in the direction
    data flows, labelled with transport and HWMs; connections that dropped in red."""
    plt = _pyplot()
    from matplotlib.patches import FancyArrowPatch, FancyBboxPatch

    from .report_run.data import BOX_WIDTH, HEADER, ROW

    inch = 0.4  # one layout unit
    width = max(topo.width, BOX_WIDTH * 2)
    legend = 0.5 if topo.hosts else 0.0  # one more line of legend
    fig = plt.figure(figsize=(width * inch + 0.6, (topo.height + 3.6 + legend) * inch))
    ax = fig.add_axes((0.0, 0.0, 1.0, 1.0))
    ax.set_xlim(-0.3, width + 0.3)
    ax.set_ylim(topo.height + 2.4 + legend, -1.2)
    ax.axis("off")
    ax.text(0, -0.6, title, fontsize=10, fontweight="bold", va="center")
    for host in topo.hosts:  # behind the processes they hold
        ax.add_patch(FancyBboxPatch((host.x, host.y), host.width, host.height, boxstyle="round,pad=0.02,rounding_size=0.3",
                                    facecolor="#eef4fb", edgecolor="#4a78a8", linestyle="--", linewidth=1.0))
        ax.text(host.x + 0.25, host.y + 0.45, host.label, fontsize=7.8, color="#2c5580", va="center", fontweight="bold")
    by_name = {}
    for proc in topo.processes:
        ax.add_patch(FancyBboxPatch((proc.x, proc.y), BOX_WIDTH, proc.height, boxstyle="round,pad=0.02,rounding_size=0.2",
                                    facecolor="0.93" if not proc.folded else "0.97", edgecolor="0.55",
                                    linestyle="-" if not proc.folded else "--", linewidth=0.9))
        label = f"process {proc.name}" if not proc.folded else proc.name
        ax.text(proc.x + 0.2, proc.y + HEADER * 0.5, label, fontsize=7.5, color="0.25", va="center", style="italic")
        for sock in proc.sockets:
            by_name[sock.name] = sock
            flagged = bool(sock.flags) or sock.dropped_no_pipe > 0
            ax.add_patch(FancyBboxPatch((sock.x + 0.2, sock.y - ROW * 0.42), BOX_WIDTH - 0.4, ROW * 0.84,
                                        boxstyle="round,pad=0.0,rounding_size=0.1", facecolor="white",
                                        edgecolor="crimson" if flagged else "0.35", linewidth=1.4 if flagged else 0.8))
            head = f"{sock.type} {sock.name}" if sock.type else sock.name
            ax.text(sock.x + 0.35, sock.y - ROW * 0.2, head, fontsize=8, fontweight="bold", va="center")
            detail = ", ".join(sock.endpoints)
            ax.text(sock.x + 0.35, sock.y + ROW * 0.05, detail, fontsize=6.3, color="0.3", va="center")
            notes = []
            if sock.flags:
                notes.append(flag_text(sock.flags))
            if sock.dropped_no_pipe:
                notes.append(f"{sock.dropped_no_pipe:,} dropped with no pipe")
            if notes:
                ax.text(sock.x + 0.35, sock.y + ROW * 0.27, "; ".join(notes), fontsize=6.3, color="crimson", va="center")
    degree: dict[str, int] = {}
    for edge in topo.edges:
        degree[edge.a] = degree.get(edge.a, 0) + 1
        degree[edge.b] = degree.get(edge.b, 0) + 1
    # a socket with many connections of the same kind: one label for them all, on the
    # middle one (connections that dropped keep their own)
    groups: dict[tuple[str, str], list[Any]] = {}
    for edge in topo.edges:
        if not edge.dropped:
            hub, other = (edge.a, edge.b) if degree.get(edge.a, 0) >= degree.get(edge.b, 0) else (edge.b, edge.a)
            groups.setdefault((hub, edge.label), []).append((by_name[other].y if other in by_name else 0.0, id(edge)))
    labelled: dict[int, str] = {}
    silent: set[int] = set()
    for (_hub, label), members in groups.items():
        if len(members) >= 3:
            members.sort()
            for _, key in members:
                silent.add(key)
            labelled[members[len(members) // 2][1]] = f"{label} (each of {len(members)})"
    for edge in topo.edges:
        a, b = by_name.get(edge.a), by_name.get(edge.b)
        if a is None or b is None:
            continue
        same_column = abs(a.x - b.x) < 1e-9
        if same_column:
            pa, pb = (a.x + BOX_WIDTH - 0.2, a.y), (b.x + BOX_WIDTH - 0.2, b.y)
            style = f"arc3,rad={-0.6 if a.y < b.y else 0.6}"
        else:
            left, right = (a, b) if a.x < b.x else (b, a)
            pl, pr = (left.x + BOX_WIDTH - 0.2, left.y), (right.x + 0.2, right.y)
            pa, pb = (pl, pr) if left is a else (pr, pl)
            style = "arc3,rad=0"
        arrow = {(True, False): "-|>", (False, True): "<|-", (True, True): "<|-|>"}.get((edge.a_to_b, edge.b_to_a), "-")
        colour = "crimson" if edge.dropped else "0.35"
        ax.add_patch(FancyArrowPatch(pa, pb, arrowstyle=arrow, mutation_scale=9, color=colour, linewidth=1.8 if edge.dropped else 0.9,
                                     connectionstyle=style, shrinkA=0, shrinkB=0))
        # the label goes near the end with fewer connections, where arrows do not crowd
        if same_column:
            lx, ly = max(pa[0], pb[0]) + 0.9, (pa[1] + pb[1]) / 2
            ha = "left"
        else:
            near_b = degree.get(edge.b, 0) <= degree.get(edge.a, 0)
            t = 0.5 if id(edge) in labelled else 0.62 if near_b else 0.38
            lx, ly = pa[0] + (pb[0] - pa[0]) * t, pa[1] + (pb[1] - pa[1]) * t
            ha = "center"
        if id(edge) in silent and id(edge) not in labelled:
            continue
        text = labelled.get(id(edge), edge.label)
        ax.text(lx, ly, text, fontsize=6.2, ha=ha, va="center", color="0.2",
                bbox={"boxstyle": "round,pad=0.15", "facecolor": "white", "edgecolor": "none", "alpha": 0.85})
        if edge.dropped:
            rules = f" ({edge.drop_rules})" if edge.drop_rules else ""
            ax.text(lx, ly + 0.45, f"{edge.dropped:,} dropped{rules}", fontsize=6.5, ha=ha, va="center", color="crimson",
                    fontweight="bold", bbox={"boxstyle": "round,pad=0.1", "facecolor": "white", "edgecolor": "none", "alpha": 0.85})
    ax.text(0, topo.height + 0.7,
            "Boxes: processes and their sockets (type, name, bind/connect endpoints). Arrows point the way data flows (two heads: "
            "both ways).\nLabels: transport and HWM (tcp/ipc: writer's SNDHWM + reader's RCVHWM; inproc: the one shared pipe's "
            "HWM, SNDHWM + RCVHWM).\nRed: copies were dropped on that connection (or by that socket); red text under a socket: "
            "the run's warnings about it." + ("\nBlue dashed boxes: hosts holding their processes; a connection between hosts is "
                                              "labelled with the link it crosses (through switches: each link of its route)."
                                              if topo.hosts else ""),
            fontsize=6.8, color="0.3", va="top")
    return _save(fig, path)


#: the shade of a reader's pauses on the depth figure
PAUSE_COLOUR = "#7a5195"
#: the shade of a [[fault]]'s intervals (a link down, a loss burst) on the run page's time axes
FAULT_COLOUR = "#d62728"


def _shade_faults(ax: Any, faults: Sequence[tuple[str, float, float]], scale: float) -> None:
    """Shade each fault's interval ``(name, start, end)`` in seconds on a time axis."""
    for _name, start, end in faults:
        ax.axvspan(start * scale, end * scale, color=FAULT_COLOUR, alpha=0.08, linewidth=0, hatch="////", edgecolor=FAULT_COLOUR)


def _fault_legend(faults: Sequence[tuple[str, float, float]]) -> tuple[list[Any], list[str]]:
    """The legend entry of the faults' shade, when there are any."""
    if not faults:
        return [], []
    from matplotlib.patches import Patch

    names = ", ".join(dict.fromkeys(name for name, _, _ in faults))
    return ([Patch(facecolor=FAULT_COLOUR, alpha=0.08, hatch="////", edgecolor=FAULT_COLOUR, linewidth=0)],
            [f"a [[fault]] under way (hatched: {names})"])


def depth_figure(panels: Sequence[DepthPanel], path: str | Path, *, title: str, note: str,
                 faults: Sequence[tuple[str, float, float]] = ()) -> Path:
    """Per direction of data, where its messages wait over time: pipes, engines, kernel
    (messages), each as the highest level per time bucket with a band down to the lowest."""
    plt = _pyplot()
    n = len(panels)
    cols = 1 if n == 1 else 2
    rows = math.ceil(n / cols)
    fig, axes = plt.subplots(rows, cols, figsize=(6.4 * cols, 2.5 * rows + 1.2), squeeze=False, sharex=True)
    end = max((float(line.levels.times[-1]) + (float(line.levels.times[1] - line.levels.times[0]) if len(line.levels.times) > 1 else 0)
               for panel in panels for line in panel.lines), default=1.0)
    scale, unit = time_unit([end])
    for index, panel in enumerate(panels):
        ax = axes[index // cols][index % cols]
        top = 0
        peaks = []
        for line in panel.lines:
            times = line.levels.times * scale
            lo, hi = line.levels.lo[:, line.channel], line.levels.hi[:, line.channel]
            if not hi.any():
                continue
            colour = PLACE_COLOURS.get(line.place, "0.4")
            ax.fill_between(times, lo, hi, step="post", color=colour, alpha=0.13, linewidth=0)
            ax.step(times, hi, where="post", color=colour, linewidth=1.0)
            top = max(top, int(hi.max()))
            peaks.append(f"{line.label}: {int(hi.max()):,}")
        for start, stop in panel.pauses:  # when the reader paused
            ax.axvspan(start * scale, min(stop, end) * scale, color=PAUSE_COLOUR, alpha=0.18, linewidth=0)
        _shade_faults(ax, faults, scale)
        ax.text(0.005, 0.97, "peaks:\n" + "\n".join(peaks), transform=ax.transAxes, ha="left", va="top", fontsize=6.3, color="0.2",
                bbox={"boxstyle": "round,pad=0.2", "facecolor": "white", "edgecolor": "0.8", "alpha": 0.85})
        for line in panel.lines:
            if line.hwm and line.hwm > 0 and line.hwm <= 1.6 * max(top, 1) and line.levels.hi[:, line.channel].any():
                ax.axhline(line.hwm, color=PLACE_COLOURS.get(line.place, "0.4"), linestyle=":", linewidth=1.0)
        parts = [f"{panel.direction} ({panel.transport})"]
        if panel.kernel_peak_bytes:
            parts.append(f"kernel peak {human_bytes(panel.kernel_peak_bytes)}")
        if panel.dropped:
            parts.append(f"{panel.dropped:,} dropped")
        ax.set_title(", ".join(parts), fontsize=9, color="crimson" if panel.dropped else "black", loc="left")
        if panel.flags:
            ax.text(1.0, 1.02, f"reader: {flag_text(panel.flags)}", transform=ax.transAxes, ha="right", va="bottom", fontsize=7.5,
                    color="crimson")
        ax.set_ylim(bottom=0)
        ax.grid(True, alpha=0.3)
        if index % cols == 0:
            ax.set_ylabel("messages")
        if index // cols == rows - 1 or index + cols >= n:
            ax.set_xlabel(f"simulated time ({unit})")
            ax.tick_params(labelbottom=True)
    for index in range(n, rows * cols):
        axes[index // cols][index % cols].set_visible(False)
    from matplotlib.lines import Line2D

    drawn = {"send pipe" if line.place == "pipe" else line.place for panel in panels for line in panel.lines
             if line.levels.hi[:, line.channel].any()}
    legend = [(place, text) for place, text in PLACE_LEGEND if place in drawn]
    handles: list[Any] = [Line2D([0], [0], color=PLACE_COLOURS[place], linewidth=2) for place, _ in legend]
    handles.append(Line2D([0], [0], color="0.3", linestyle=":", linewidth=1))
    labels = [text for _, text in legend] + ["a pipe's HWM (dotted, in its colour)"]
    if any(panel.pauses for panel in panels):
        from matplotlib.patches import Patch

        handles.append(Patch(color=PAUSE_COLOUR, alpha=0.18, linewidth=0))
        cut = [panel for panel in panels if panel.pause_count > len(panel.pauses)]
        labels.append("the reader paused (shaded" + (f"; the first {len(cut[0].pauses):,} of {cut[0].pause_count:,} pauses recorded)"
                                                     if cut else ")"))
    extra_handles, extra_labels = _fault_legend(faults)
    handles += extra_handles
    labels += extra_labels
    fig.legend(handles, labels, loc="lower center", ncol=3, fontsize=7.5, frameon=False, bbox_to_anchor=(0.5, 0.0))
    fig.suptitle(title, fontsize=11)
    fig.text(0.5, 0.955 if rows > 1 else 0.92, note, fontsize=7.5, color="0.35", ha="center", va="top", wrap=True)
    plain_text(fig).tight_layout(rect=(0, 0.06 if rows > 1 else 0.12, 1, 0.94 if rows > 1 else 0.88))
    return _save(fig, path)


def _spring_layout(count: int, edges: Sequence[tuple[int, int]], iterations: int = 300) -> np.ndarray:
    """Fruchterman-Reingold positions in [0, 1]^2 for a small graph, from a circle (no
    randomness: the same graph is drawn the same way)."""
    angles = 2 * math.pi * np.arange(count) / max(count, 1)
    pos = np.column_stack([np.cos(angles), np.sin(angles)])
    k = 1.0 / math.sqrt(max(count, 1))
    for step in range(iterations):
        delta = pos[:, None, :] - pos[None, :, :]
        dist = np.maximum(np.linalg.norm(delta, axis=2), 1e-6)
        move = (delta / dist[..., None] * (k * k / dist)[..., None]).sum(axis=1)
        for a, b in edges:
            d = pos[a] - pos[b]
            pull = d * np.linalg.norm(d) / k
            move[a] -= pull
            move[b] += pull
        length = np.maximum(np.linalg.norm(move, axis=1), 1e-9)
        limit = 0.1 * (1 - step / iterations) + 1e-3
        pos += move / length[:, None] * np.minimum(length, limit)[:, None]
    span = np.maximum(pos.max(axis=0) - pos.min(axis=0), 1e-9)
    return np.asarray((pos - pos.min(axis=0)) / span)


def _network_map(ax: Any, network_map: NetworkMap) -> None:
    """The deployment drawn: hosts (squares) and switches (circles), each link a line coloured
    and thickened by how busy its busier direction was while it carried traffic."""
    from matplotlib import colormaps

    names = [name for name, _ in network_map.nodes]
    index = {name: i for i, name in enumerate(names)}
    pos = _spring_layout(len(names), [(index[a], index[b]) for a, b, _, _ in network_map.edges])
    cmap = colormaps["RdYlGn_r"]
    for a, b, label, busy in network_map.edges:
        (x0, y0), (x1, y1) = pos[index[a]], pos[index[b]]
        ax.plot([x0, x1], [y0, y1], color=cmap(busy), linewidth=1.5 + 4 * busy, solid_capstyle="round", zorder=1)
        ax.text((x0 + x1) / 2, (y0 + y1) / 2, label, fontsize=7, ha="center", va="center", zorder=3,
                bbox={"boxstyle": "round,pad=0.2", "facecolor": "white", "edgecolor": "0.8", "alpha": 0.9})
    for name, kind in network_map.nodes:
        x, y = pos[index[name]]
        ax.plot(x, y, marker="s" if kind == "host" else "o", markersize=16 if kind == "host" else 14, zorder=2,
                color="#cfe2f3" if kind == "host" else "0.75", markeredgecolor="#2a5d8f" if kind == "host" else "0.35")
        ax.text(x, y - 0.09, f"{'host' if kind == 'host' else 'switch'} {name}", fontsize=8, ha="center", va="top", zorder=3)
    ax.set_xlim(-0.15, 1.15)
    ax.set_ylim(-0.22, 1.12)
    ax.axis("off")
    ax.set_title("The deployment: hosts (squares), switches (circles), each link coloured and thickened by its busier "
                 "direction's busy share of the run (green idle, red busy throughout)", fontsize=8.5, loc="left")


def network_figure(panels: Sequence[NetworkPanel], path: str | Path, *, title: str, note: str,
                   network_map: NetworkMap | None = None, faults: Sequence[tuple[str, float, float]] = ()) -> Path:
    """Per direction of a [[link]]: its busy share per time bucket (left axis, %) and the
    most bytes its queue held in each (right axis, shaded), drops marked on the time axis;
    with [[switch]]es, a drawing of the deployment above them (``network_map``)."""
    plt = _pyplot()
    n = len(panels)
    cols = 1 if n == 1 else 2
    rows = math.ceil(n / cols)
    if network_map is None:
        fig, axes = plt.subplots(rows, cols, figsize=(6.4 * cols, 2.5 * rows + 1.2), squeeze=False, sharex=True)
    else:
        map_height = 3.6
        fig = plt.figure(figsize=(6.4 * cols, 2.5 * rows + 1.2 + map_height))
        grid = fig.add_gridspec(rows + 1, cols, height_ratios=[map_height] + [2.5] * rows)
        _network_map(fig.add_subplot(grid[0, :]), network_map)
        first = fig.add_subplot(grid[1, 0])
        axes = [[first if (r, c) == (0, 0) else fig.add_subplot(grid[r + 1, c], sharex=first) for c in range(cols)]
                for r in range(rows)]
    end = max((float(panel.times[-1]) + (float(panel.times[1] - panel.times[0]) if len(panel.times) > 1 else 0.0)
               for panel in panels), default=1.0)
    scale, unit = time_unit([end])
    busy_colour, queue_colour, drop_colour = "#1f77b4", "#ff7f0e", "crimson"
    for index, panel in enumerate(panels):
        ax = axes[index // cols][index % cols]
        times = panel.times * scale
        ax.step(times, 100 * panel.busy, where="post", color=busy_colour, linewidth=1.0)
        ax.set_ylim(0, 105)
        ax.grid(True, alpha=0.3)
        queue = ax.twinx()
        queue.fill_between(times, 0, panel.queue_bytes / 1e3, step="post", color=queue_colour, alpha=0.25, linewidth=0)
        queue.step(times, panel.queue_bytes / 1e3, where="post", color=queue_colour, linewidth=0.8)
        top = max(float(panel.queue_bytes.max()), 1.0) / 1e3
        queue.set_ylim(0, 1.15 * top)
        if panel.queue_limit and panel.queue_limit / 1e3 <= 1.6 * top:
            queue.axhline(panel.queue_limit / 1e3, color=queue_colour, linestyle=":", linewidth=1.0)
        where = np.flatnonzero(panel.drops)
        if len(where):
            ax.plot(times[where], [2.0] * len(where), linestyle="none", marker="|", markersize=9, color=drop_colour)
        _shade_faults(ax, faults, scale)
        parts = [f"{panel.link} {panel.direction}: {panel.bandwidth_bps / 1e6:.4g} Mbit/s, {human_time(panel.latency_s)} one way",
                 f"queue peak {human_bytes(int(panel.queue_bytes.max()))}"]
        if panel.dropped:
            parts.append(f"{panel.dropped:,} packets dropped or lost")
        ax.set_title(", ".join(parts), fontsize=9, color=drop_colour if panel.dropped else "black", loc="left")
        if index % cols == 0:
            ax.set_ylabel("busy (% of each bucket)", color=busy_colour, fontsize=8)
        if index % cols == cols - 1 or index == n - 1:
            queue.set_ylabel("queue (KB, most in each bucket)", color=queue_colour, fontsize=8)
        if index // cols == rows - 1 or index + cols >= n:
            ax.set_xlabel(f"simulated time ({unit})")
            ax.tick_params(labelbottom=True)
    for index in range(n, rows * cols):
        axes[index // cols][index % cols].set_visible(False)
    from matplotlib.lines import Line2D

    handles = [Line2D([0], [0], color=busy_colour, linewidth=2), Line2D([0], [0], color=queue_colour, linewidth=6, alpha=0.4),
               Line2D([0], [0], color=queue_colour, linestyle=":", linewidth=1),
               Line2D([0], [0], color=drop_colour, marker="|", linestyle="none", markersize=9)]
    labels = ["busy share (left)", "queue, most bytes in the bucket (right)", "the queue's limit (queue_bytes)",
              "a bucket with drops or losses"]
    extra_handles, extra_labels = _fault_legend(faults)
    handles += extra_handles
    labels += extra_labels
    fig.legend(handles, labels, loc="lower center", ncol=4 if not faults else 3, fontsize=7.5, frameon=False, bbox_to_anchor=(0.5, 0.0))
    fig.suptitle(title, fontsize=11)
    fig.text(0.5, 0.955 if rows > 1 else 0.92, note, fontsize=7.5, color="0.35", ha="center", va="top", wrap=True)
    plain_text(fig).tight_layout(rect=(0, 0.06 if rows > 1 else 0.12, 1, 0.94 if rows > 1 else 0.88))
    return _save(fig, path)


def latency_figure(panels: Sequence[LatencyPanel], path: str | Path, *, title: str, note: str, end_s: float,
                   faults: Sequence[tuple[str, float, float]] = ()) -> Path:
    """Per receiver, latency against send time: the median per send-time bin, with a band
    from the lowest to the highest."""
    plt = _pyplot()
    n = len(panels)
    cols = 1 if n == 1 else (2 if n <= 4 else 3)
    rows = math.ceil(n / cols)
    fig, axes = plt.subplots(rows, cols, figsize=(4.8 * cols + 0.8, 2.6 * rows + 1.4), squeeze=False, sharex=True, sharey=True)
    scale, unit = time_unit([p.max for p in panels if p.max is not None])
    tscale, tunit = time_unit([end_s])
    positive = [float(v) for p in panels if p.delivered for v in (np.nanmin(p.low), np.nanmax(p.high)) if v > 0]
    log = bool(positive) and max(positive) / min(positive) > 100
    for index, panel in enumerate(panels):
        ax = axes[index // cols][index % cols]
        x = panel.centres * tscale
        if panel.delivered:
            ax.fill_between(x, panel.low * scale, panel.high * scale, color="tab:blue", alpha=0.25, linewidth=0, step="mid")
            ax.plot(x, panel.median * scale, color="tab:blue", linewidth=1.0, drawstyle="steps-mid")
            head = f"{panel.receiver}: p50 {human_time(panel.p50 or 0)}, p99 {human_time(panel.p99 or 0)}"
        else:
            ax.text(0.5, 0.5, "nothing delivered", transform=ax.transAxes, ha="center", va="center", color="crimson")
            head = f"{panel.receiver}: nothing delivered"
        ax.set_title(f"{head}; got {panel.taken:,} of {panel.meant:,}", fontsize=8.5, loc="left",
                     color="crimson" if panel.flags else "black")
        if panel.lost or panel.queued:
            share = ax.twinx()
            if panel.lost:
                share.step(panel.loss_centres * tscale, 100 * panel.loss_share, where="mid", color="crimson", linewidth=0.9)
            if panel.queued:
                share.step(panel.loss_centres * tscale, 100 * panel.queued_share, where="mid", color="0.45", linewidth=0.9,
                           linestyle="--")
            share.set_ylim(0, 105)
            share.tick_params(axis="y", labelsize=7, colors="crimson")
            if index % cols == cols - 1 or index == n - 1:
                share.set_ylabel("% not delivered", fontsize=7.5, color="crimson")
        if panel.flags:
            ax.text(0.99, 0.04, flag_text(panel.flags), transform=ax.transAxes, ha="right", va="bottom", fontsize=7.5, color="crimson",
                    bbox={"boxstyle": "round,pad=0.2", "facecolor": "white", "edgecolor": "crimson", "alpha": 0.9}, zorder=5)
        _shade_faults(ax, faults, tscale)
        ax.grid(True, alpha=0.3)
        if log:
            ax.set_yscale("log")
        if index % cols == 0:
            ax.set_ylabel(f"latency ({unit})")
        if index // cols == rows - 1 or index + cols >= n:
            ax.set_xlabel(f"send time ({tunit})")
            ax.tick_params(labelbottom=True)
    for index in range(n, rows * cols):
        axes[index // cols][index % cols].set_visible(False)
    from matplotlib.lines import Line2D

    handles = [Line2D([0], [0], color="tab:blue", linewidth=1.5), Line2D([0], [0], color="tab:blue", alpha=0.3, linewidth=6),
               Line2D([0], [0], color="crimson", linewidth=1), Line2D([0], [0], color="0.45", linewidth=1, linestyle="--")]
    labels = ["median latency (left axis)", "fastest to slowest", "% of the copies sent then that were dropped, discarded or lost "
              "(right axis)", "% still queued when the run ended (right axis)"]
    extra_handles, extra_labels = _fault_legend(faults)
    handles += extra_handles
    labels += extra_labels
    fig.legend(handles, labels, loc="lower center", ncol=2, fontsize=7.5, frameon=False, bbox_to_anchor=(0.5, 0.0))
    fig.suptitle(title, fontsize=11)
    fig.text(0.5, 0.955 if rows > 1 else 0.91, note, fontsize=7.5, color="0.35", ha="center", va="top", wrap=True)
    plain_text(fig).tight_layout(rect=(0, 0.07 if rows > 1 else 0.14, 1, 0.94 if rows > 1 else 0.86))
    return _save(fig, path)


def drops_figure(drops: Drops, path: str | Path, *, title: str, note: str, top: int = 8,
                 faults: Sequence[tuple[str, float, float]] = ()) -> Path:
    """Copies dropped per time bin, one line per pipe and rule (the largest ``top``; the
    rest summed as one line)."""
    plt = _pyplot()
    fig, ax = plt.subplots(figsize=(10.5, 3.8))
    edges = drops.edges
    tscale, tunit = time_unit([float(edges[-1])])
    shown = drops.lines[:top]
    rest = drops.lines[top:]
    series = [(f"{line.label} ({line.total:,})", line.counts) for line in shown]
    if rest:
        series.append((f"{len(rest)} more pipes/rules ({sum(line.total for line in rest):,})",
                       np.sum([line.counts for line in rest], axis=0)))
    for index, (label, counts) in enumerate(series):
        ax.stairs(counts, edges * tscale, label=label, color=colour_for(index, len(series)), linewidth=1.3)
    _shade_faults(ax, faults, tscale)
    if faults:
        from matplotlib.patches import Patch

        names = ", ".join(dict.fromkeys(name for name, _, _ in faults))
        ax.add_artist(ax.legend([Patch(facecolor=FAULT_COLOUR, alpha=0.08, hatch="////", edgecolor=FAULT_COLOUR, linewidth=0)],
                                [f"a [[fault]] under way: {names}"], loc="upper right", fontsize=7.5, frameon=False))
    ax.set_xlabel(f"simulated time ({tunit})")
    ax.set_ylabel(f"copies dropped per {human_time(drops.bin_s)}")
    ax.set_ylim(bottom=0)
    ax.grid(True, alpha=0.3)
    ax.legend(loc="upper left", bbox_to_anchor=(1.01, 1.0), fontsize=7.5, frameon=False, title="pipe: rule (copies)", title_fontsize=7.5)
    ax.set_title(title, fontsize=11, loc="left")
    fig.text(0.01, 0.005, note, fontsize=7.5, color="0.35", ha="left", va="bottom")
    plain_text(fig).tight_layout(rect=(0, 0.05, 1, 1))
    return _save(fig, path)
