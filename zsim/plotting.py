"""Figures for sweep reports (the only module importing matplotlib, imported lazily).

The functions draw what they are given: the numbers (means, interval bounds, grids) are
computed by ``zsim.sweep.report``; here are only axes, bands, colours and files. Every
function writes one PNG and returns its path. matplotlib runs with the Agg backend (no
display needed).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np


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
    fig.tight_layout(rect=(0, 0.03 if note else 0, 1, 1))
    out = Path(path)
    fig.savefig(out, dpi=110, bbox_inches="tight")
    plt.close(fig)
    return out


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
    out = Path(path)
    fig.savefig(out, dpi=110, bbox_inches="tight")
    plt.close(fig)
    return out


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
    fig.tight_layout()
    out = Path(path)
    fig.savefig(out, dpi=110, bbox_inches="tight")
    plt.close(fig)
    return out
