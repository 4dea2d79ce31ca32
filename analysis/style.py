"""How the reports' figures look: settings coloured by family, the anchor emphasised, text legible at a page's width.

**Families.** Table 1's settings fall in four families, told apart by the variant name the studies list them by:
clipping (``clip_*``), adaptive KL (``kl_adaptive_*``), fixed KL (``kl_fixed_*``) and none (``no_clip``). Each
family has one hue (blue, green, orange, grey); its settings are shades of it from light to dark in the order of
their parameter, with a dash pattern each, so two settings of a family differ in two ways. Any other variant
(Figure 3's algorithms, the details and mistakes, Atari's) takes a colour of a qualitative palette that has no
blue, so blue stays PPO's clipping. The anchor (ε = 0.2, the paper's choice) is drawn darkest, thickest and on top.

**Legibility.** A figure is at most :data:`PAGE_WIDTH_IN` inches wide and no text is smaller than
:data:`FONTS`' smallest size (9.5 pt), so at GitHub's 980 px content width (the width a figure of ``docs/`` is scaled
to) its smallest text is about 12 px; :func:`smallest_text_px` measures it on a drawn figure.
"""

from __future__ import annotations

import functools
import math
import re
import textwrap
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

import matplotlib
import seaborn as sns
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.figure import Figure
from matplotlib.lines import Line2D
from matplotlib.text import Text

PAGE_PX = 980  # GitHub's markdown column: wider images are scaled down to it
PAGE_WIDTH_IN = 11.0  # widest figure: at PAGE_PX its 9.5 pt text is 9.5 * 980 / (72 * 11) = 11.8 px
DPI = 100  # 1,100 px for the widest figure: GitHub shows it at 980
FONTS = {"font.size": 10.5, "axes.titlesize": 11.0, "axes.labelsize": 10.5, "xtick.labelsize": 9.5,
         "ytick.labelsize": 9.5, "legend.fontsize": 9.5, "legend.title_fontsize": 10.0, "figure.titlesize": 11.5}
MIN_TEXT_PX = 10.0  # what the tests ask of every figure at PAGE_PX

ANCHOR_WIDTH, LINE_WIDTH, SEED_WIDTH, SEED_ALPHA = 2.6, 1.4, 0.6, 0.3
DASHES = ("-", "--", ":", "-.")


@dataclass(frozen=True)
class Family:
    name: str  # the legend's column heading
    pattern: str  # a variant of the family: its name matches this
    palette: str  # a sequential matplotlib colormap


FAMILIES = (
    Family("Clipping", r"clip_[0-9.]+", "Blues"),
    Family("Adaptive KL", r"kl_adaptive_[0-9.]+", "Greens"),
    Family("Fixed KL", r"kl_fixed_[0-9.]+", "Oranges"),
    Family("None", r"no_clip", "Greys"),
)
OTHERS = "Others"  # the legend column of variants outside the families
QUALITATIVE = ("#d95f02", "#1b9e77", "#984ea3", "#e7298a", "#66a61e", "#a6761d", "#e6ab02", "#666666",
               "#b15928", "#6a3d9a", "#b2df8a", "#fb9a99")  # ColorBrewer Dark2 (Set1's purple) and Paired: no blue


@dataclass(frozen=True)
class Style:
    """How one variant's lines are drawn: its mean line (``color``, ``width``, ``dash``, ``zorder``)."""
    color: tuple[float, float, float] | str
    width: float = LINE_WIDTH
    dash: str = "-"
    zorder: float = 2.0
    family: str = OTHERS

    def line(self, **overrides) -> dict:
        """Keyword arguments of ``Axes.plot`` for the mean line."""
        return {"color": self.color, "lw": self.width, "ls": self.dash, "zorder": self.zorder, **overrides}

    def seed_line(self) -> dict:
        """Keyword arguments of ``Axes.plot`` for one seed's thin line, under every mean line."""
        return {"color": self.color, "lw": SEED_WIDTH, "ls": "-", "alpha": SEED_ALPHA, "zorder": 1.0}


def family_of(variant: str) -> str:
    """The family's name of ``variant`` (:data:`FAMILIES`), :data:`OTHERS` for any other."""
    return next((f.name for f in FAMILIES if re.fullmatch(f.pattern, variant)), OTHERS)


def _parameter(variant: str) -> float:
    """The number that ends a variant's name (ε, d_targ, β), to order a family's shades; 0 without one."""
    found = re.search(r"([0-9]+(?:\.[0-9]+)?)$", variant)
    return float(found.group(1)) if found else 0.0


def variant_styles(variants: Iterable[str], anchor: str | None = None) -> dict[str, Style]:
    """Each variant's :class:`Style`, the same for a variant whatever else is drawn beside it within a family (its
    shade depends only on its family's members present). ``anchor`` is drawn darkest and thickest, on top."""
    names = sorted(set(variants))
    styles: dict[str, Style] = {}
    for family in FAMILIES:
        members = sorted((v for v in names if family_of(v) == family.name), key=lambda v: (_parameter(v), v))
        if not members:
            continue
        cmap = matplotlib.colormaps[family.palette]
        # shades from light to dark; the anchor takes the darkest, the others keep their order
        plain = [v for v in members if v != anchor]
        levels = [0.5 + 0.35 * (k / max(1, len(plain) - 1)) if len(plain) > 1 else 0.7 for k in range(len(plain))]
        first = 1 if anchor in members else 0  # the anchor alone is solid in its family
        for k, (variant, level) in enumerate(zip(plain, levels)):
            styles[variant] = Style(cmap(level)[:3], LINE_WIDTH, DASHES[(k + first) % len(DASHES)], 2.0 + k * 0.01,
                                    family.name)
        if anchor in members:
            styles[anchor] = Style(cmap(1.0)[:3] if family.name != "None" else (0.1, 0.1, 0.1), ANCHOR_WIDTH, "-",
                                   3.0, family.name)
    others = [v for v in names if v not in styles]
    for k, variant in enumerate(others):
        color = QUALITATIVE[k % len(QUALITATIVE)]
        if variant == anchor:
            styles[variant] = Style(color, ANCHOR_WIDTH, "-", 3.0)
        else:
            styles[variant] = Style(color, LINE_WIDTH, "-", 2.0)
    return styles


def variant_colors(variants: Iterable[str], anchor: str | None = None) -> dict[str, tuple[float, float, float] | str]:
    """The colour of each variant (:func:`variant_styles`)."""
    return {v: s.color for v, s in variant_styles(variants, anchor).items()}


def legible(draw: Callable) -> Callable:
    """Run a figure-drawing function with :data:`FONTS` (text takes its size when it is made)."""
    @functools.wraps(draw)
    def wrapper(*args, **kwargs):
        with matplotlib.rc_context(FONTS):
            return draw(*args, **kwargs)
    return wrapper


def new_figure(figsize: tuple[float, float], nrows: int = 1, ncols: int = 1):
    """A white-grid figure on the Agg canvas (no pyplot global state) and its axes as a flat array."""
    with sns.axes_style("whitegrid"):
        fig = Figure(figsize=figsize, layout="constrained")
        FigureCanvasAgg(fig)
        axes = fig.subplots(nrows, ncols, squeeze=False).ravel()
    return fig, axes


def blank_figure(figsize: tuple[float, float]) -> Figure:
    """A white-grid figure on the Agg canvas with no axes yet (for a grid spec of its own)."""
    fig = Figure(figsize=figsize, layout="constrained")
    FigureCanvasAgg(fig)
    return fig


def add_axes(fig, spec, **kwargs):
    """``fig.add_subplot(spec)`` (a grid spec's cell, or a ``(nrows, ncols, index)`` tuple) in the white-grid
    style, on a figure or a subfigure."""
    with sns.axes_style("whitegrid"):
        return fig.add_subplot(*spec, **kwargs) if isinstance(spec, tuple) else fig.add_subplot(spec, **kwargs)


def save(fig: Figure, path: str | Path, dpi: int = DPI) -> Path:
    """Write ``fig`` as PNG to ``path`` (its folder made)."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=dpi)
    return path


def smallest_text_px(fig: Figure, page_px: int = PAGE_PX, dpi: int = DPI) -> float:
    """The height in pixels of the figure's smallest visible text once its PNG (at ``dpi``) is shown at most
    ``page_px`` wide: a wider image is scaled down to that width, a narrower one is shown as it is."""
    fig.draw_without_rendering()
    width_px = fig.get_figwidth() * dpi
    scale = min(1.0, page_px / width_px)
    sizes = [t.get_fontsize() for t in fig.findobj(Text) if t.get_visible() and t.get_text().strip()
             and _shown(t)]
    return min(sizes) * dpi / 72 * scale if sizes else math.inf


def _shown(text: Text) -> bool:
    """Whether a text artist is drawn: visible itself and in a visible axes (an unused panel's ticks are not)."""
    axes = text.axes
    return axes is None or axes.get_visible()


def _short(label: str, family: str) -> str:
    """A setting's label under its family's heading: "Clipping, ε = 0.1" -> "ε = 0.1"."""
    prefix = f"{family}, "
    return label[len(prefix):] if label.lower().startswith(prefix.lower()) else label


def legend_columns(variants: Sequence[str], labels: Mapping[str, str], styles: Mapping[str, Style],
                   extra: Sequence[tuple[str, Line2D]] = ()) -> list[list[tuple[str, Line2D | None]]]:
    """The legend as a table: one column per family present, headed by the family's name (a ``None`` handle),
    its settings labelled without the family's prefix; then the variants outside the families (no heading);
    then one column per other group a style names (e.g. "References"), headed by it. ``extra`` (label, handle)
    entries, such as the random policy's line, go under the last column when it has room, else in their own."""
    order = [f.name for f in FAMILIES] + [OTHERS]
    groups = order + [g for g in dict.fromkeys(styles[v].family for v in variants) if g not in order]
    columns = []
    for group in groups:
        members = [v for v in variants if styles[v].family == group]
        if not members:
            continue
        column = [] if group == OTHERS else [(group, None)]
        column += [(_short(labels.get(v, v), group) if group in order else labels.get(v, v),
                    Line2D([], [], **styles[v].line(zorder=None))) for v in members]
        columns.append(column)
    height = max([len(c) for c in columns if c[0][1] is None] or [len(c) for c in columns] or [0])
    height = max(height, len(extra), 3)
    split = [column[start:start + height] for column in columns for start in range(0, len(column), height)]
    if extra and split and height - len(split[-1]) >= len(extra):
        split[-1] = split[-1] + list(extra)
    elif extra:
        split.append(list(extra))
    return split


def legend_size(columns: list[list[tuple[str, Line2D | None]]]) -> tuple[float, float]:
    """About how wide and tall (inches) :func:`draw_legend` draws ``columns`` at :data:`FONTS`' legend size."""
    char = FONTS["legend.fontsize"] / 72 * 0.55
    width = sum(max(len(label) for label, _ in column) * char + 0.75 for column in columns)
    height = max(len(column) for column in columns) * FONTS["legend.fontsize"] / 72 * 1.75 + 0.15
    return width, height


def draw_legend(target, columns: list[list[tuple[str, Line2D | None]]], **kwargs):
    """:func:`legend_columns` drawn on ``target`` (an axes or the figure), its columns one after another (as
    ``legend`` fills them), family headings in bold."""
    height = max(len(column) for column in columns)
    handles, texts, heads = [], [], []
    for column in columns:
        for label, handle in column + [("", None)] * (height - len(column)):
            if handle is None and label:
                heads.append(len(texts))
            handles.append(handle if handle is not None else Line2D([], [], alpha=0.0))
            texts.append(label)
    legend = target.legend(handles, texts, ncols=len(columns), frameon=False, handlelength=2.6, columnspacing=1.2,
                           **kwargs)
    for k in heads:
        legend.get_texts()[k].set_fontweight("bold")
    return legend


@dataclass
class Panels:
    """A figure of ``axes`` panels (a grid, filled row by row) and ``legend_ax``, an empty axes for the legend:
    the panels' unused places in the last row when the legend fits there, else a row of its own below."""
    fig: Figure
    axes: list
    legend_ax: object


def panel_figure(n: int, legend: tuple[float, float], panel_height: float = 2.7, ncols: int | None = None,
                 width: float | None = None, title_lines: int = 1) -> Panels:
    """:class:`Panels` for ``n`` panels and a legend of ``legend`` (width, height) inches: at most 3 columns,
    :data:`PAGE_WIDTH_IN` wide (8 in for a single panel, its legend below)."""
    ncols = ncols or (1 if n == 1 else 2 if n in (2, 4) else 3)
    nrows = math.ceil(n / ncols)
    width = width or (PAGE_WIDTH_IN if n > 1 else 8.0)
    free = nrows * ncols - n
    in_place = free >= 1 and free * width / ncols >= legend[0] and panel_height >= legend[1]
    heights = [panel_height] * nrows + ([] if in_place else [legend[1]])
    fig = blank_figure((width, sum(heights) + 0.3 * title_lines + 0.2))
    grid = fig.add_gridspec(len(heights), ncols, height_ratios=heights)
    axes = [add_axes(fig, grid[k // ncols, k % ncols]) for k in range(n)]
    legend_ax = fig.add_subplot(grid[nrows - 1, ncols - free:] if in_place else grid[nrows, :])
    legend_ax.axis("off")
    return Panels(fig, axes, legend_ax)


def wrap_title(text: str, width: float, size: float = FONTS["figure.titlesize"]) -> str:
    """``text`` wrapped to ``width`` inches at font ``size`` (the title's), each of its lines on its own."""
    chars = int(width * 72 / (size * 0.55))
    return "\n".join(textwrap.fill(line, chars) for line in text.splitlines())


@legible
def draw_message(title: str, message: str, width: float = 8.0) -> Figure:
    """A figure that says why it has nothing to draw (a report's outputs are fixed, its data are not)."""
    fig = blank_figure((width, 2.2))
    fig.suptitle(wrap_title(title, width))
    fig.text(0.5, 0.45, wrap_title(message, width * 0.9, FONTS["font.size"]), ha="center", va="center",
             color="0.3")
    return fig
