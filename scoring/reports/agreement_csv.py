"""The agreement report's figures as flat CSV rows (``manage.py agreement --format csv`` and the report page's
*agreement CSV* download): section, scope, statistic, value, ci_low, ci_high, n, interpretation, note. Cells that
a spreadsheet would run as a formula are guarded (``core.site.spreadsheet``): model and rater names come from
data."""

from __future__ import annotations

import csv
import io

from core.site.spreadsheet import safe_row


def csv_rows(report: dict):
    """The report's figures as flat rows: section, scope, statistic, value, ci_low, ci_high, n, band."""
    from core.stats.interpretation import format_p

    yield ["section", "scope", "statistic", "value", "ci_low", "ci_high", "n", "interpretation", "note"]
    for item in report.get("items", []):
        for key, name in (("percent_agreement", "percent agreement"), ("fleiss_kappa", "Fleiss kappa"),
                          ("gwet_ac1", "Gwet AC1"), ("krippendorff_alpha", f"Krippendorff alpha ({item['level']})")):
            fig = item[key]
            yield ["item agreement", item["code"], name, fig["value"], fig["ci_low"], fig["ci_high"],
                   item["n_dialogues"], (fig.get("interpretation") or {}).get("label", ""), " ".join(fig["warnings"])]
        if item.get("ordered"):
            yield from ordered_item_rows(item)
    icc = report.get("icc", {})
    for code, dim in icc.get("dimensions", {}).items():
        for form in icc.get("forms") or ("ICC1", "ICC2", "ICC3", "ICC1k", "ICC2k", "ICC3k"):
            row = dim.get(form) or {}
            yield ["icc", f"{code} {dim['name']}", form, row.get("icc"), row.get("ci_low"), row.get("ci_high"),
                   dim.get("n_targets"), (row.get("interpretation") or {}).get("label", ""), icc.get("design", "")]
    rel = report.get("reliability", {})
    if "cronbach_alpha" in rel:
        a = rel["cronbach_alpha"]
        yield ["reliability", "whole scale", "Cronbach alpha", a["alpha"], a["ci_low"], a["ci_high"], a["n"],
               a["interpretation"]["label"], " ".join(a["warnings"])]
        for code, d in rel["dimensions"].items():
            yield ["reliability", f"{code} {d['name']}", "Cronbach alpha", d["alpha"], d["ci_low"], d["ci_high"],
                   d["n"], d["interpretation"]["label"], " ".join(d["warnings"])]
        for code, value in rel["alpha_if_deleted"].items():
            yield ["reliability", code, "alpha if item deleted", value, "", "", rel["n_ratings"], "", ""]
        for r in rel.get("per_rater", []):
            yield ["reliability", f"rater {r['rater']}", "alpha (Feldt CI)", r["alpha"], r["ci_low"], r["ci_high"],
                   r["n_dialogues"], r["interpretation"]["label"], " ".join(r["warnings"])]
        yield ["validity", "whole scale", "KMO", rel["kmo"]["overall"], "", "", rel["n_ratings"],
               rel["kmo"]["interpretation"]["label"], " ".join(rel["kmo"].get("warnings", []))]
        for code, value in rel["kmo"].get("items", {}).items():
            yield ["validity", code, "KMO (MSA)", value, "", "", rel["n_ratings"], "", ""]
        b = rel["bartlett"]
        yield ["validity", "whole scale", "Bartlett chi2", b["chi2"], "", "", b.get("n", rel["n_ratings"]), "",
               f"dof={b['dof']} {format_p(b['p'])} ({b.get('n_note', '')})"]
    for model in report.get("models", []):
        for code, d in model["dimensions"].items():
            yield ["model comparison", model["model"], f"dimension {code} score %", d["score_pct"], d["ci_low"],
                   d["ci_high"], model["n_dialogues"], "", ""]
        for code, c in model.get("criteria", {}).items():
            yield ["model comparison", model["model"], f"{code} mean score", c["mean"], c["ci_low"], c["ci_high"],
                   c["n_dialogues"], "", c.get("ci_note") or f"scale {c['min']}-{c['max']}"]
    yield from replicate_rows(report.get("replicates"))


def replicate_rows(table: dict | None, section: str = "replicates"):
    """Repeated answers (Cardenal-Antolin et al., HIVMedQA, Table 2 layout): per model and criterion the mean over
    cases, then the SD over replicates with the 95% CI over replicates."""
    for model in (table or {}).get("models", []):
        for code, s in model["criteria"].items():
            note = " ".join([s.get("ci_note") or ""] + s["warnings"]).strip()
            yield [section, model["model"], f"{code} mean over cases", s["mean"], "", "", s["n_cases"], "", ""]
            yield [section, model["model"], f"{code} SD over replicates", s["sd"], s["ci_low"], s["ci_high"],
                   s["n_replicates"], "", ("CI of the mean over replicates. " + note).strip()]


def ordered_item_rows(item: dict):
    """Levels and scale items: weighted kappa, interval alpha, ICC of the item's scores, physicians' Bland-Altman."""
    for key, name in (("weighted_kappa", "weighted kappa (quadratic)"), ("gwet_ac2", "Gwet AC2 (quadratic)"),
                      ("within_one", "agreement within one point"),
                      ("krippendorff_interval", "Krippendorff alpha (interval)")):
        fig = item.get(key)
        if fig is None:  # reports cached before AC2 was added
            continue
        yield ["item agreement", item["code"], name, fig["value"], fig["ci_low"], fig["ci_high"], item["n_dialogues"],
               (fig.get("interpretation") or {}).get("label", ""), " ".join(fig["warnings"])]
    icc = item["icc"]
    for form in icc.get("forms", []):
        row = icc.get(form) or {}
        yield ["item icc", item["code"], form, row.get("icc"), row.get("ci_low"), row.get("ci_high"),
               icc.get("n_targets"), (row.get("interpretation") or {}).get("label", ""), icc.get("design", "")]
    pooled = item["bland_altman"]["pooled"]
    note = "physician minus the mean of the other physicians, pooled; " + " ".join(pooled["warnings"])
    for key, name in (("bias", "Bland-Altman bias"), ("loa_low", "Bland-Altman lower limit"),
                      ("loa_high", "Bland-Altman upper limit")):
        yield ["item bland-altman", item["code"], name, pooled[key], pooled[f"{key}_ci_low"], pooled[f"{key}_ci_high"],
               pooled["n"], "", note]


def csv_text(report: dict) -> str:
    """The whole CSV (a report has some hundreds of rows), with empty cells for undefined figures."""
    buffer = io.StringIO()
    writer = csv.writer(buffer, lineterminator="\n")
    for row in csv_rows(report):
        writer.writerow(safe_row("" if v is None else v for v in row))
    return buffer.getvalue()
