"""Report plots as inline SVG (matplotlib, no display needed), without inline style (see ``csp_safe``)."""

from __future__ import annotations

import html
import io
import re

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

# Labels come from users (model names, item codes): "$...$" in them is text, never mathtext to parse.
plt.rcParams.update({"svg.fonttype": "none", "font.size": 9, "axes.spines.top": False, "axes.spines.right": False,
                     "text.parse_math": False, "text.usetex": False})


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


def _svg(fig) -> str:
    buffer = io.StringIO()
    fig.savefig(buffer, format="svg", bbox_inches="tight")
    plt.close(fig)
    text = buffer.getvalue()
    return csp_safe(text[text.index("<svg"):])


def item_agreement(items: list[dict]) -> str:
    """Gwet's AC1 and Fleiss' kappa per item with their 95% bootstrap CIs."""
    codes = [i["code"] for i in items]
    fig, ax = plt.subplots(figsize=(max(6.0, 0.42 * len(codes)), 3.2))
    width = 0.38
    for offset, (key, label, color) in enumerate([("gwet_ac1", "Gwet's AC1", "#1f5fbf"),
                                                  ("fleiss_kappa", "Fleiss' kappa", "#c07a1b")]):
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
    ax.set_ylabel("agreement (95% CI)")
    ax.legend(frameon=False, ncols=2, loc="lower left")
    ax.set_title("Agreement among physicians per item")
    return _svg(fig)


def rater_heatmap(matrix: dict) -> str:
    """Between pairs of raters: the mean over binary items of the per-item Cohen's kappa and Gwet's AC1."""
    return _svg(rater_heatmap_figure(matrix))


def rater_heatmap_figure(matrix: dict):
    """The two heatmaps side by side, sharing the raters' names on the left only, in a constrained layout: the
    second panel's names would otherwise sit on the first panel's last columns, and long rotated names below
    get the room they need."""
    names = matrix["raters"]
    size = len(names)
    panels = [("kappa", "mean per-item Cohen's kappa"), ("gwet_ac1", "mean per-item Gwet's AC1")]
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
                                color="white" if v < 0.5 else "black")
        ax.set_title(title)
    fig.colorbar(image, ax=axes, label="agreement", shrink=0.9)
    fig.suptitle("Rater x rater agreement (mean over items)")
    return fig


def model_scores(models: list[dict]) -> str:
    """Distribution of per-dialogue total scores (sum of binary items, mean over raters) per doctor model."""
    return _svg(model_scores_figure(models))


#: How the box plot draws its markers; its key (legend) names each of them.
BOX_STYLE = {"median": {"color": "#c07a1b", "linewidth": 1.6},
             "mean": {"marker": "^", "markerfacecolor": "#1e7b34", "markeredgecolor": "#1e7b34", "markersize": 6},
             "flier": {"marker": "o", "markerfacecolor": "none", "markeredgecolor": "#444", "markersize": 4}}
BOX_KEY = ("box: middle half of the dialogues (quartiles)", "median", "mean",
           "whiskers: furthest dialogue within 1.5 box heights", "dialogue beyond the whiskers")


def model_scores_figure(models: list[dict]):
    from matplotlib.lines import Line2D
    from matplotlib.patches import Patch

    fig, ax = plt.subplots(figsize=(max(5.5, 1.2 * len(models) + 4.5), 3.4), layout="constrained")
    data = [m["total_scores"] for m in models]
    ax.boxplot(data, tick_labels=[f"{m['model']}\n(n={m['n_dialogues']})" for m in models], showmeans=True,
               medianprops=BOX_STYLE["median"], meanprops=BOX_STYLE["mean"], flierprops=BOX_STYLE["flier"])
    ax.set_ylabel("total score per dialogue (0-23)")
    ax.set_title("Scores per doctor model")
    handles = [Patch(facecolor="none", edgecolor="black"),
               Line2D([], [], **BOX_STYLE["median"]),
               Line2D([], [], linestyle="none", **BOX_STYLE["mean"]),
               Line2D([], [], color="black", linewidth=1.0),
               Line2D([], [], linestyle="none", **BOX_STYLE["flier"])]
    ax.legend(handles, BOX_KEY, loc="upper left", bbox_to_anchor=(1.01, 1.0), frameon=False, fontsize=8,
              title="Key", title_fontsize=8, alignment="left")
    return fig


def all_plots(report: dict) -> dict[str, str]:
    plots = {"item_agreement": item_agreement(report["items"])}
    if len(report["rater_matrix"]["raters"]) >= 2:
        plots["rater_heatmap"] = rater_heatmap(report["rater_matrix"])
    if report["models"]:
        plots["model_scores"] = model_scores(report["models"])
    return plots
