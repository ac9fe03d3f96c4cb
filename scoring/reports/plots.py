"""Report plots as inline SVG (matplotlib, no display needed), without inline style (see ``csp_safe``), drawn in
each of the site's languages (:func:`plots_by_language`)."""

from __future__ import annotations

import functools
import html
import io
import json
import logging
import re
from collections import OrderedDict

import matplotlib
from django.conf import settings
from django.utils import translation
from django.utils.translation import gettext, pgettext

from scoring.reports.wording import ENGLISH, shown

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

# Labels come from users (model names, item codes): "$...$" in them is text, never mathtext to parse.
plt.rcParams.update({"svg.fonttype": "none", "font.size": 9, "axes.spines.top": False, "axes.spines.right": False,
                     "text.parse_math": False, "text.usetex": False})


#: The fonts a language's plots need beyond matplotlib's own (which has no Chinese glyphs): Debian's fonts-noto-cjk.
FONTS = {"zh-hans": "Noto Sans CJK SC"}

logger = logging.getLogger(__name__)

_STYLE_ATTRIBUTE = re.compile(r'\sstyle="([^"]*)"')
_STYLE_ELEMENT = re.compile(r"<style[^>]*>\s*\*\s*\{([^}]*)\}\s*</style>\s*")


def _declarations(css: str) -> str:
    """'fill: #fff; stroke-width: 0.8' -> ' fill="#fff" stroke-width="0.8"' (SVG presentation attributes)."""
    pairs = [part.split(":", 1) for part in css.split(";") if ":" in part]
    return "".join(f' {name.strip()}="{html.escape(value.strip(), quote=False).replace(chr(34), "&quot;")}"'
                   for name, value in pairs)


def csp_safe(svg: str) -> str:
    """The page's Content-Security-Policy allows no inline style, so matplotlib's style attributes and its one
    ``<style>`` rule (defaults for every element) become presentation attributes, which draw the same."""
    defaults = _STYLE_ELEMENT.search(svg)
    svg = _STYLE_ELEMENT.sub("", svg)
    svg = _STYLE_ATTRIBUTE.sub(lambda m: _declarations(html.unescape(m.group(1))), svg)
    if defaults:  # the rule's properties are inherited ones: on the root they reach every element
        svg = svg.replace("<svg", "<svg" + _declarations(defaults.group(1)), 1)
    return svg


#: The SVGs this process drew last, by plot, language, fonts and inputs: a report's two variants (with the raters'
#: names and without) share every plot but the rater matrix, and a worker computes them one after the other.
_DRAWN: OrderedDict[str, str] = OrderedDict()
_DRAWN_MAX = 32


def _remembered(draw):
    """``draw`` (a plot of JSON-able inputs) drawn once per language, fonts and inputs in this process."""

    @functools.wraps(draw)
    def drawn(*args):
        key = json.dumps([draw.__name__, translation.get_language(), plt.rcParams["font.sans-serif"], args],
                         sort_keys=True, default=str)
        if key in _DRAWN:
            _DRAWN.move_to_end(key)
            return _DRAWN[key]
        svg = _DRAWN[key] = draw(*args)
        while len(_DRAWN) > _DRAWN_MAX:
            _DRAWN.popitem(last=False)
        return svg

    return drawn


def _svg(fig) -> str:
    buffer = io.StringIO()
    # no metadata (creator, date, format): nothing on the page to read, and the same report draws the same bytes
    fig.savefig(buffer, format="svg", bbox_inches="tight",
                metadata={"Creator": None, "Date": None, "Format": None, "Type": None})
    plt.close(fig)
    text = buffer.getvalue()
    return csp_safe(text[text.index("<svg"):])


@_remembered
def item_agreement(items: list[dict], words: dict | None = None) -> str:
    """Gwet's AC1 and Fleiss' kappa per item with their 95% bootstrap CIs."""
    codes = [i["code"] for i in items]
    fig, ax = plt.subplots(figsize=(max(6.0, 0.42 * len(codes)), 3.2))
    width = 0.38
    for offset, (key, label, color) in enumerate([("gwet_ac1", gettext("Gwet's AC1"), "#1f5fbf"),
                                                  ("fleiss_kappa", gettext("Fleiss' kappa"), "#c07a1b")]):
        xs, ys, lo, hi = [], [], [], []
        for n, item in enumerate(items):
            fig_ = item[key]
            if fig_["value"] is None:
                continue
            xs.append(n + (offset - 0.5) * width)
            ys.append(fig_["value"])
            lo.append(fig_["value"] - (fig_["ci_low"] if fig_["ci_low"] is not None else fig_["value"]))
            hi.append((fig_["ci_high"] if fig_["ci_high"] is not None else fig_["value"]) - fig_["value"])
        ax.bar(xs, ys, width, label=label, color=color, yerr=[lo, hi], capsize=2, error_kw={"linewidth": 0.8})
    ax.set_xticks(range(len(codes)), codes, rotation=90)
    ax.axhline(0, color="#444", linewidth=0.6)
    ax.set_ylim(min(-0.2, ax.get_ylim()[0]), 1.05)
    ax.set_ylabel(gettext("agreement (95% CI)"))
    ax.legend(frameon=False, ncols=2, loc="lower left")
    ax.set_title(gettext("Agreement among %(raters)s per item") % {"raters": shown(words)["raters"]})
    return _svg(fig)


@_remembered
def rater_heatmap(matrix: dict) -> str:
    """Between pairs of raters: the mean over binary items of the per-item Cohen's kappa and Gwet's AC1."""
    return _svg(rater_heatmap_figure(matrix))


def rater_heatmap_figure(matrix: dict):
    """The two heatmaps side by side, sharing the raters' names on the left only, in a constrained layout: the
    second panel's names would otherwise sit on the first panel's last columns, and long rotated names below
    get the room they need."""
    names = matrix["raters"]
    size = len(names)
    panels = [("kappa", gettext("mean per-item Cohen's kappa")), ("gwet_ac1", gettext("mean per-item Gwet's AC1"))]
    side = max(3.0, 0.5 * size + 1.0)
    fig, axes = plt.subplots(1, len(panels), figsize=(2 * side + 1.5, side + 0.8), sharey=True,
                             layout="constrained")
    image = None
    for ax, (key, title) in zip(axes, panels, strict=True):
        values = [[(v if v is not None else float("nan")) for v in row] for row in matrix.get(key, [])]
        image = ax.imshow(values, vmin=-0.2, vmax=1.0, cmap="viridis")
        ax.set_xticks(range(size), names, rotation=90)
        ax.set_yticks(range(size), names)
        ax.tick_params(axis="y", labelleft=ax is axes[0])
        if size <= 12:
            for i in range(size):
                for j in range(size):
                    v = values[i][j]
                    if v == v:  # not NaN
                        ax.text(j, i, f"{v:.2f}", ha="center", va="center", fontsize=7,
                                color="white" if v < 0.5 else "black", in_layout=False)  # inside its cell
        ax.set_title(title)
    fig.colorbar(image, ax=axes, label=gettext("agreement"), shrink=0.9)
    fig.suptitle(gettext("Rater x rater agreement (mean over items)"))
    return fig


@_remembered
def model_scores(models: list[dict], n_binary: int = 23, words: dict | None = None) -> str:
    """Distribution of per-dialogue total scores (sum of the binary items, mean over raters) per doctor model."""
    return _svg(model_scores_figure(models, n_binary, words))


#: How the box plot draws its markers; its key (legend) names each of them.
BOX_STYLE = {"median": {"color": "#c07a1b", "linewidth": 1.6},
             "mean": {"marker": "^", "markerfacecolor": "#1e7b34", "markeredgecolor": "#1e7b34", "markersize": 6},
             "flier": {"marker": "o", "markerfacecolor": "none", "markeredgecolor": "#444", "markersize": 4}}


def box_key(words: dict | None = None) -> tuple[str, ...]:
    """The box plot's key, in the report's words ("dialogues", "answers", ...) and the current language."""
    words = shown(words)
    return (gettext("box: middle half of the %(units)s (quartiles)") % words, gettext("median"), gettext("mean"),
            gettext("whiskers: furthest %(unit)s within 1.5 box heights") % words,
            gettext("%(unit)s beyond the whiskers") % words)


def model_scores_figure(models: list[dict], n_binary: int = 23, words: dict | None = None):
    from matplotlib.lines import Line2D
    from matplotlib.patches import Patch

    fig, ax = plt.subplots(figsize=(max(5.5, 1.2 * len(models) + 4.5), 3.4), layout="constrained")
    data = [m["total_scores"] for m in models]
    ax.boxplot(data, tick_labels=[f"{m['model']}\n(n={m['n_dialogues']})" for m in models], showmeans=True,
               medianprops=BOX_STYLE["median"], meanprops=BOX_STYLE["mean"], flierprops=BOX_STYLE["flier"])
    said = shown(words)
    ax.set_ylabel(gettext("total of the %(n)s binary items per %(unit)s (0-%(n)s)") % {**said, "n": n_binary})
    ax.set_title(gettext("Binary-item totals per %(model)s") % said)
    handles = [Patch(facecolor="none", edgecolor="black"),
               Line2D([], [], **BOX_STYLE["median"]),
               Line2D([], [], linestyle="none", **BOX_STYLE["mean"]),
               Line2D([], [], color="black", linewidth=1.0),
               Line2D([], [], linestyle="none", **BOX_STYLE["flier"])]
    ax.legend(handles, box_key(words), loc="upper left", bbox_to_anchor=(1.01, 1.0), frameon=False, fontsize=8,
              title=pgettext("the key beside a plot", "Key"), title_fontsize=8, alignment="left")
    return fig


@_remembered
def criterion_means(models: list[dict], words: dict | None = None) -> str:
    """Per model, the mean score of every criterion (levels and scale items) with its 95% bootstrap CI: one panel
    per criterion, on the criterion's own range."""
    codes = list(models[0]["criteria"])
    names = [m["model"] for m in models]
    columns = min(len(codes), 3)
    rows = -(-len(codes) // columns)
    fig, axes = plt.subplots(rows, columns, figsize=(max(4.0, 3.2 * columns), 2.6 * rows), squeeze=False)
    for ax, code in zip(axes.ravel(), codes, strict=False):
        entries = [m["criteria"][code] for m in models]
        ys = [e["mean"] if e["mean"] is not None else float("nan") for e in entries]
        low = [max(0.0, y - e["ci_low"]) if e.get("ci_low") is not None else 0.0
               for y, e in zip(ys, entries, strict=True)]
        high = [max(0.0, e["ci_high"] - y) if e.get("ci_high") is not None else 0.0
                for y, e in zip(ys, entries, strict=True)]
        ax.errorbar(range(len(names)), ys, yerr=[low, high], fmt="o", capsize=3, color="#1f5fbf")
        ax.set_xticks(range(len(names)), names, rotation=30, ha="right")
        first = entries[0]
        if first.get("min") is not None and first.get("max") is not None:
            ax.set_ylim(first["min"] - 0.05 * (first["max"] - first["min"]),
                        first["max"] + 0.05 * (first["max"] - first["min"]))
        ax.set_title(code)
    for ax in axes.ravel()[len(codes):]:
        ax.set_visible(False)
    fig.suptitle(gettext("Mean score per criterion and %(model)s (95%% CI over its %(units)s)") % shown(words))
    fig.tight_layout()
    return _svg(fig)


def all_plots(report: dict) -> dict[str, str]:
    """The report's plots in the current language, only those its instrument has data for: no binary-item totals
    without binary items, no rater matrix without two raters on binary items, criterion means for levels and scale
    items."""
    words = report.get("words")
    plots = {"item_agreement": item_agreement(report["items"], words)}
    if len(report["rater_matrix"]["raters"]) >= 2 and report["rater_matrix"].get("n_items"):
        plots["rater_heatmap"] = rater_heatmap(report["rater_matrix"])
    n_binary = sum(1 for item in report["items"] if item.get("level") == "nominal")
    if report["models"] and n_binary:
        plots["model_scores"] = model_scores(report["models"], n_binary, words)
    if report["models"] and report["models"][0].get("criteria"):
        plots["criterion_means"] = criterion_means(report["models"], words)
    return plots


@functools.cache
def has_font(family: str) -> bool:
    """Whether matplotlib finds this font family on this machine."""
    from matplotlib import font_manager

    try:
        font_manager.findfont(font_manager.FontProperties(family=family), fallback_to_default=False)
    except ValueError:
        logger.warning("No %s font: the report plots that need it are left out (their pages show the English ones).",
                       family)
        return False
    return True


def plots_by_language(report: dict) -> dict[str, dict[str, str]]:
    """The report's plots drawn once in each of the site's languages: {language code: {name: svg}}. A language whose
    font (:data:`FONTS`) this machine lacks gets none: its pages show the English plots
    (:func:`scoring.reports.wording.plots_in`)."""
    drawn = {}
    for code, _ in settings.LANGUAGES:
        family = FONTS.get(code)
        if family and not has_font(family):
            continue
        fonts = {"font.family": "sans-serif", "font.sans-serif": [family, *plt.rcParams["font.sans-serif"]]}
        with translation.override(code), plt.rc_context(fonts if family else {}):
            drawn[code] = all_plots(report)
    if ENGLISH not in drawn:  # the API's plots
        with translation.override(ENGLISH):
            drawn[ENGLISH] = all_plots(report)
    return drawn
