"""Tests for core/stats.py against published reference values.

Every reference value carries its source in a comment.  Where no published value for the
exact computation was available, the reference is computed independently (plain numpy /
Python from the published formula) and the comment says so.  No Django needed:
``.venv/bin/python -m pytest tests/test_stats.py -q -p no:django``.
"""

from __future__ import annotations

import json
import math
import os
import re
import subprocess
import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

ROOT = Path(__file__).resolve().parents[1]
STATS_PATH = ROOT / "core" / "stats"

if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from core import stats as S  # noqa: E402
from tests.lazy import lazy  # noqa: E402

pg = lazy("pingouin")
sps = lazy("scipy.stats")

nan = np.nan


@pytest.fixture(autouse=True)
def _clear_cache():
    """No-op override of tests/conftest.py's autouse Django-cache fixture for this module.

    These tests are pure (no database, no cache), so they also run with ``-p no:django``
    where Django settings are not configured.
    """
    yield

# --------------------------------------------------------------------------------------
# reference data sets
# --------------------------------------------------------------------------------------
# Krippendorff K. (2011) "Computing Krippendorff's Alpha-Reliability", Annenberg School
# for Communication, Departmental Papers 43, section C (4 observers x 12 units, missing
# data).  Same data as irrCAC's cac.raw4raters (Gwet 2014, Handbook of Inter-Rater
# Reliability 4th ed., p. 120), transposed.
KRIPP_2011 = np.array([
    [1, 2, 3, 3, 2, 1, 4, 1, 2, nan, nan, nan],
    [1, 2, 3, 3, 2, 2, 4, 1, 2, 5, nan, 3],
    [nan, 3, 3, 3, 2, 3, 4, 2, 2, 5, 1, nan],
    [1, 2, 3, 3, 2, 4, 4, 1, 2, 5, 1, nan],
])
RAW4RATERS = KRIPP_2011.T  # subjects x raters

# Shrout P.E. & Fleiss J.L. (1979) "Intraclass correlations: uses in assessing rater
# reliability", Psychological Bulletin 86(2):420-428, Table 2: 6 targets x 4 judges.
SHROUT_FLEISS = np.array([
    [9, 2, 5, 8], [6, 1, 3, 2], [8, 4, 6, 8], [7, 1, 2, 6], [10, 5, 6, 9], [6, 2, 4, 7],
])

# Wikipedia "Fleiss' kappa", worked example: 10 subjects x 5 categories, 14 raters each.
FLEISS_WIKI = np.array([
    [0, 0, 0, 0, 14], [0, 2, 6, 4, 2], [0, 0, 3, 5, 6], [0, 3, 9, 2, 0], [2, 2, 8, 1, 1],
    [7, 7, 0, 0, 0], [3, 2, 6, 3, 0], [2, 5, 3, 2, 2], [6, 5, 2, 1, 0], [0, 2, 2, 3, 7],
])

# Fleiss J.L. (1971) "Measuring nominal scale agreement among many raters", Psychol Bull
# 76(5):378-382: 30 patients x 6 psychiatrists (the `diagnoses` data of R package irr).
DIAGNOSES = np.array([
    [4, 4, 4, 4, 4, 4], [2, 2, 2, 5, 5, 5], [2, 3, 3, 3, 3, 5], [5, 5, 5, 5, 5, 5],
    [2, 2, 2, 4, 4, 4], [1, 1, 3, 3, 3, 3], [3, 3, 3, 3, 5, 5], [1, 1, 3, 3, 3, 4],
    [1, 1, 4, 4, 4, 4], [5, 5, 5, 5, 5, 5], [1, 4, 4, 4, 4, 4], [1, 2, 4, 4, 4, 4],
    [2, 2, 2, 3, 3, 3], [1, 4, 4, 4, 4, 4], [2, 2, 4, 4, 4, 5], [3, 3, 3, 3, 3, 5],
    [1, 1, 1, 4, 5, 5], [1, 1, 1, 1, 1, 2], [2, 2, 4, 4, 4, 4], [1, 3, 3, 5, 5, 5],
    [5, 5, 5, 5, 5, 5], [2, 4, 4, 4, 4, 4], [2, 2, 4, 5, 5, 5], [1, 1, 4, 4, 4, 4],
    [1, 4, 4, 4, 4, 5], [2, 2, 2, 2, 2, 4], [1, 1, 1, 1, 5, 5], [2, 2, 4, 4, 4, 4],
    [1, 3, 3, 3, 3, 3], [5, 5, 5, 5, 5, 5],
])

# irrCAC (Gwet, R package, README / "overview" vignette) dataset distrib.6raters:
# 15 patients x 5 diagnoses, counts of 6 psychiatrists.
DISTRIB_6RATERS = np.array([
    [0, 0, 0, 6, 0], [0, 3, 0, 0, 3], [0, 1, 4, 0, 1], [0, 0, 0, 0, 6], [0, 3, 0, 3, 0],
    [2, 0, 4, 0, 0], [0, 0, 4, 0, 2], [2, 0, 3, 1, 0], [2, 0, 0, 4, 0], [0, 0, 0, 0, 6],
    [1, 0, 0, 5, 0], [1, 1, 0, 4, 0], [0, 3, 3, 0, 0], [1, 0, 0, 5, 0], [0, 2, 0, 3, 1],
])

# irrCAC dataset cont3x3abstractors: 100 pregnant women, 2 abstractors, 3 categories.
CONT3X3 = np.array([[13, 0, 0], [0, 20, 7], [0, 4, 56]])

# R package irr, data(anxiety): 20 subjects x 3 raters (also reproduced in DescTools and
# in statsmodels' test_inter_rater.py).
ANXIETY = np.array([
    [3, 3, 3, 4, 5, 5, 2, 3, 5, 2, 2, 6, 1, 5, 2, 2, 1, 2, 4, 3],
    [3, 6, 4, 6, 2, 4, 2, 4, 3, 3, 2, 3, 3, 3, 2, 2, 1, 3, 3, 4],
    [2, 1, 4, 4, 3, 2, 1, 6, 1, 1, 1, 2, 3, 3, 1, 1, 3, 3, 2, 2],
])  # raters x subjects


def counts_to_labels(table: np.ndarray) -> np.ndarray:
    """subjects x categories count table -> subjects x raters labels (0..q-1)."""
    return np.array([np.repeat(np.arange(table.shape[1]), row) for row in table])


def contingency_to_pairs(table: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """q x q contingency table (rows rater A, cols rater B) -> two label vectors."""
    a, b = [], []
    for i in range(table.shape[0]):
        for j in range(table.shape[1]):
            a += [i] * int(table[i, j])
            b += [j] * int(table[i, j])
    return np.array(a), np.array(b)


def long_format(wide: np.ndarray) -> pd.DataFrame:
    df = pd.DataFrame(wide, columns=[f"J{j + 1}" for j in range(wide.shape[1])])
    df["target"] = np.arange(len(df))
    return df.melt(id_vars="target", var_name="judge", value_name="rating")


def assert_plain_json(obj) -> None:
    """Only plain Python types, and json.dumps(allow_nan=False) succeeds."""
    def walk(x):
        assert type(x) in (dict, list, str, int, float, bool, type(None)), type(x)
        if isinstance(x, dict):
            for k, v in x.items():
                assert isinstance(k, str)
                walk(v)
        elif isinstance(x, list):
            for v in x:
                walk(v)
    walk(obj)
    json.dumps(obj, allow_nan=False)


# --------------------------------------------------------------------------------------
# module hygiene
# --------------------------------------------------------------------------------------
def test_importable_without_django():
    for path in STATS_PATH.glob("*.py"):
        assert not re.search(r"^\s*(import|from)\s+django", path.read_text(), flags=re.MULTILINE), path
    code = (
        "import sys\n"
        f"sys.path.insert(0, {str(ROOT)!r})\n"
        "from core import stats\n"
        "assert stats.cronbach_alpha and stats.icc\n"
        "assert not any(k.startswith('django') for k in sys.modules), 'django imported'\n"
    )
    subprocess.run([sys.executable, "-c", code], check=True, env={"PATH": os.environ.get("PATH", "")})


# --------------------------------------------------------------------------------------
# Cronbach's alpha
# --------------------------------------------------------------------------------------
def test_cronbach_alpha_pingouin_reference():
    # pingouin docs, cronbach_alpha example (data from real-statistics.com, validated
    # against R psych::alpha): alpha = 0.5917188485995826, 95% CI [0.195, 0.84].
    data = pg.read_dataset("cronbach_alpha").pivot(index="Subj", columns="Items",
                                                   values="Scores")
    res = S.cronbach_alpha(data)
    assert res["alpha"] == pytest.approx(0.5917188485995826, abs=1e-12)
    assert round(res["ci_low"], 3) == 0.195
    assert round(res["ci_high"], 3) == 0.840
    assert res["n"] == 15 and res["k"] == 10
    assert res["warnings"] == []
    assert_plain_json(res)


def test_cronbach_alpha_missing_values_match_r_psych():
    # pingouin docs: binary data with missing values; "In R: psych:alpha(data,
    # use='pairwise')" -> 0.732660835214447, CI [0.435, 0.909]; listwise
    # (use="complete.obs") -> alpha 0.8016949152542373.
    data = pg.read_dataset("cronbach_wide_missing")
    pw = S.cronbach_alpha(data)
    assert pw["alpha"] == pytest.approx(0.732660835214447, abs=1e-12)
    assert [round(pw["ci_low"], 3), round(pw["ci_high"], 3)] == [0.435, 0.909]
    lw = S.cronbach_alpha(data, nan_policy="listwise")
    assert lw["alpha"] == pytest.approx(0.8016949152542373, abs=1e-12)
    assert any("listwise" in w for w in lw["warnings"])
    # Deliberate deviation: pingouin's documented listwise CI [0.581, 0.933] uses the
    # pre-deletion row count; ours uses the complete cases analysed.  Reference computed
    # independently: Feldt et al. (1987) CI with F(n-1, (n-1)(k-1)), n = complete rows.
    n, k = data.dropna().shape
    assert lw["n"] == n < len(data)
    f_hi = sps.f.isf(0.025, n - 1, (n - 1) * (k - 1))
    f_lo = sps.f.isf(0.975, n - 1, (n - 1) * (k - 1))
    assert lw["ci_low"] == pytest.approx(1 - (1 - lw["alpha"]) * f_hi, abs=1e-12)
    assert lw["ci_high"] == pytest.approx(1 - (1 - lw["alpha"]) * f_lo, abs=1e-12)
    assert lw["ci_low"] < 0.581 and lw["ci_high"] > 0.933  # wider than pingouin's


def test_alpha_if_deleted_independent_formula():
    # No published table for this data: reference computed independently with the
    # textbook formula alpha = k/(k-1) * (1 - sum(item variances) / var(total)).
    data = pg.read_dataset("cronbach_alpha").pivot(index="Subj", columns="Items",
                                                   values="Scores")

    def alpha(x: np.ndarray) -> float:
        k = x.shape[1]
        return k / (k - 1) * (1 - x.var(axis=0, ddof=1).sum() / x.sum(axis=1).var(ddof=1))

    res = S.alpha_if_deleted(data)
    assert set(res) == {str(c) for c in data.columns}
    for col in data.columns:
        expected = alpha(data.drop(columns=[col]).to_numpy(float))
        assert res[str(col)] == pytest.approx(expected, abs=1e-12)
    assert_plain_json(res)


def test_cronbach_alpha_undefined_cases():
    one_item = S.cronbach_alpha(pd.DataFrame({"a": [1, 2, 3]}))
    assert one_item["alpha"] is None and "two items" in one_item["warnings"][-1]
    one_subject = S.cronbach_alpha(pd.DataFrame({"a": [1], "b": [2]}))
    assert one_subject["alpha"] is None
    constant = S.cronbach_alpha(pd.DataFrame({"a": [3, 3, 3], "b": [3, 3, 3]}))
    assert constant["alpha"] is None and constant["ci_low"] is None
    assert any("'a'" in w and "'b'" in w for w in constant["warnings"])
    assert any("undefined" in w for w in constant["warnings"])
    empty = S.cronbach_alpha(pd.DataFrame({"a": [], "b": []}))
    assert empty["alpha"] is None
    for r in (one_item, one_subject, constant, empty):
        assert_plain_json(r)


def test_cronbach_alpha_flags_zero_variance_item():
    df = pd.DataFrame({"q1": [1, 2, 3, 4, 5], "q2": [2, 2, 3, 5, 5], "flat": [4] * 5})
    res = S.cronbach_alpha(df)
    assert res["alpha"] is not None
    assert any("Zero-variance" in w and "'flat'" in w for w in res["warnings"])
    assert S.alpha_if_deleted(pd.DataFrame({"a": [1, 2], "b": [2, 1]})) == \
        {"a": None, "b": None}


# --------------------------------------------------------------------------------------
# KMO and Bartlett
# --------------------------------------------------------------------------------------
def _big5() -> pd.DataFrame:
    # pingouin dataset "pairwise_corr" (Big Five scores, Dolan et al. 2009), n = 500
    return pg.read_dataset("pairwise_corr").drop(columns=["Subject"])


def test_kmo_matches_independent_computation():
    # No published KMO for a dataset shipped locally; reference computed independently from
    # Kaiser & Rice (1974) / R psych::KMO: Q = S R^-1 S with S = diag(R^-1)^-1/2,
    # MSA = sum r_ij^2 / (sum r_ij^2 + sum q_ij^2) over off-diagonal elements (true inverse).
    df = _big5()
    r = np.corrcoef(df.to_numpy(float), rowvar=False)
    inv = np.linalg.inv(r)
    s = np.diag(1 / np.sqrt(np.diag(inv)))
    q = s @ inv @ s
    off = ~np.eye(len(r), dtype=bool)
    r2, q2 = np.where(off, r**2, 0), np.where(off, q**2, 0)
    overall = r2.sum() / (r2.sum() + q2.sum())
    items = r2.sum(0) / (r2.sum(0) + q2.sum(0))
    res = S.kmo(df)
    assert res["overall"] == pytest.approx(overall, abs=1e-10)
    for col, v in zip(df.columns, items, strict=True):
        assert res["items"][col] == pytest.approx(v, abs=1e-10)
    assert res["warnings"] == []
    assert_plain_json(res)


def test_bartlett_matches_independent_computation():
    # Bartlett (1950) chi2 = -(n - 1 - (2p + 5)/6) ln|R|, dof = p(p-1)/2; reference
    # computed independently with numpy/scipy.
    df = _big5()
    n, p = df.shape
    _, logdet = np.linalg.slogdet(np.corrcoef(df.to_numpy(float), rowvar=False))
    chi2 = -(n - 1 - (2 * p + 5) / 6) * logdet
    res = S.bartlett_sphericity(df)
    assert res["chi2"] == pytest.approx(chi2, rel=1e-10)
    assert res["dof"] == p * (p - 1) // 2 == 10
    assert res["p"] == pytest.approx(sps.chi2.sf(chi2, 10), rel=1e-8)
    assert_plain_json(res)


def test_kmo_bartlett_undefined_n_le_p():
    df = pd.DataFrame(np.arange(15, dtype=float).reshape(3, 5) ** 2)
    for res in (S.kmo(df), S.bartlett_sphericity(df)):
        assert any("n <= p" in w for w in res["warnings"])
        assert_plain_json(res)
    assert S.kmo(df)["overall"] is None
    assert all(v is None for v in S.kmo(df)["items"].values())
    assert S.bartlett_sphericity(df)["chi2"] is None


def test_kmo_bartlett_undefined_singular_matrix():
    rng = np.random.default_rng(1)
    x = rng.normal(size=(60, 3))
    df = pd.DataFrame(x, columns=["a", "b", "c"])
    df["a_plus_b"] = df["a"] + df["b"]  # exact linear dependency
    k = S.kmo(df)
    b = S.bartlett_sphericity(df)
    assert k["overall"] is None and b["chi2"] is None and b["p"] is None
    assert any("singular" in w for w in k["warnings"])
    assert any("singular" in w for w in b["warnings"])


def test_kmo_flags_zero_variance_variable():
    rng = np.random.default_rng(2)
    df = pd.DataFrame(rng.normal(size=(40, 3)), columns=["x", "y", "z"])
    df["const"] = 1.0
    res = S.kmo(df)
    assert res["overall"] is None
    assert any("zero-variance" in w and "'const'" in w for w in res["warnings"])


# --------------------------------------------------------------------------------------
# ICC
# --------------------------------------------------------------------------------------
def test_icc_shrout_fleiss_1979():
    # Shrout & Fleiss (1979) Table 4 (data of Table 2): ICC(1,1)=.17, ICC(2,1)=.29,
    # ICC(3,1)=.71, ICC(1,4)=.44, ICC(2,4)=.62, ICC(3,4)=.91.
    res = S.icc(long_format(SHROUT_FLEISS), "target", "judge", "rating")
    published = {"ICC1": .17, "ICC2": .29, "ICC3": .71, "ICC1k": .44, "ICC2k": .62,
                 "ICC3k": .91}
    for form, value in published.items():
        assert round(res[form]["icc"], 2) == value, form
    # Table 2 ANOVA mean squares: BMS = 11.24, WMS = 6.26, EMS = 1.02, so
    # F(ICC1) = BMS/WMS on (5, 18) df and F(ICC2, ICC3) = BMS/EMS on (5, 15) df.
    assert res["ICC1"]["f"] == pytest.approx(11.24 / 6.26, rel=2e-3)
    assert res["ICC3"]["f"] == pytest.approx(11.24 / 1.02, rel=2e-3)
    assert (res["ICC1"]["df1"], res["ICC1"]["df2"]) == (5, 18)
    assert (res["ICC2"]["df1"], res["ICC2"]["df2"]) == (5, 15)
    assert res["n_targets"] == 6 and res["n_raters"] == 4
    for form in S.ICC_FORMS:
        f = res[form]
        assert set(f) == {"icc", "f", "df1", "df2", "p", "ci_low", "ci_high"}
        assert f["ci_low"] < f["icc"] < f["ci_high"]
    assert_plain_json(res)


def test_icc_pingouin_documented_example():
    # pingouin docs, intraclass_corr example (wine data, real-statistics.com; pingouin
    # validated against R psych::ICC), rounded to 3 dp: ICC1 .728 F 11.680 (7, 24);
    # ICC2 .728 F 11.787 (7, 21); ICC3 .729; ICC1k .914; ICC2k .914; ICC3k .915;
    # CI95 ICC1 [0.43, 0.93], ICC1k [0.75, 0.98].
    data = pg.read_dataset("icc")
    res = S.icc(data, "Wine", "Judge", "Scores")
    expected = {"ICC1": .728, "ICC2": .728, "ICC3": .729, "ICC1k": .914, "ICC2k": .914,
                "ICC3k": .915}
    for form, value in expected.items():
        assert round(res[form]["icc"], 3) == value, form
    assert round(res["ICC1"]["f"], 3) == 11.680 and res["ICC1"]["df2"] == 24
    assert round(res["ICC2"]["f"], 3) == 11.787 and res["ICC2"]["df2"] == 21
    assert [round(res["ICC1"]["ci_low"], 2), round(res["ICC1"]["ci_high"], 2)] == [.43, .93]
    assert [round(res["ICC1k"]["ci_low"], 2), round(res["ICC1k"]["ci_high"], 2)] == [.75, .98]
    # the CI is returned unrounded and pingouin's global rounding option is restored
    assert pg.options["round.column.CI95"] == 2


def test_icc_undefined_cases():
    one_rater = pd.DataFrame({"t": [1, 2, 3], "r": ["a"] * 3, "y": [1, 2, 3]})
    res = S.icc(one_rater, "t", "r", "y")
    assert all(res[f]["icc"] is None for f in S.ICC_FORMS)
    assert any("two raters" in w for w in res["warnings"])
    one_target = pd.DataFrame({"t": [1, 1], "r": ["a", "b"], "y": [1, 2]})
    assert S.icc(one_target, "t", "r", "y")["ICC2"]["icc"] is None
    constant = long_format(np.full((5, 3), 4))
    res_c = S.icc(constant, "target", "judge", "rating")
    assert res_c["ICC3"]["icc"] is None
    assert any("no variation" in w for w in res_c["warnings"])
    empty = S.icc(pd.DataFrame({"t": [], "r": [], "y": []}), "t", "r", "y")
    assert empty["ICC1"]["icc"] is None
    for r in (res, res_c, empty):
        assert_plain_json(r)


def test_icc_missing_rating_dropped_listwise_and_flat_rater_flagged():
    data = long_format(SHROUT_FLEISS)
    extra = pd.DataFrame({"target": [99], "judge": ["J1"], "rating": [5]})  # incomplete
    res = S.icc(pd.concat([data, extra]), "target", "judge", "rating")
    assert res["n_targets"] == 6
    assert round(res["ICC3"]["icc"], 2) == .71
    assert any("listwise" in w for w in res["warnings"])
    flat = SHROUT_FLEISS.copy()
    flat[:, 0] = 5
    res_f = S.icc(long_format(flat), "target", "judge", "rating")
    assert any("Zero-variance rater" in w and "'J1'" in w for w in res_f["warnings"])
    with pytest.raises(ValueError):
        S.icc(data, "target", "nope", "rating")


# --------------------------------------------------------------------------------------
# Krippendorff's alpha
# --------------------------------------------------------------------------------------
@pytest.mark.parametrize("level, published", [
    # Krippendorff (2011) "Computing Krippendorff's Alpha-Reliability", section C:
    # nominal .743, ordinal .815, interval .849, ratio .797.
    ("nominal", 0.743), ("ordinal", 0.815), ("interval", 0.849), ("ratio", 0.797),
])
def test_krippendorff_2011_worked_example(level, published):
    assert round(S.krippendorff_alpha(KRIPP_2011, level), 3) == published


def test_krippendorff_irrcac_values():
    # irrCAC README: krippen.alpha.raw(cac.raw4raters) = 0.74342;
    # krippen2.table(cont3x3abstractors) = 0.7972585.
    assert S.krippendorff_alpha(KRIPP_2011) == pytest.approx(0.74342, abs=5e-6)
    a, b = contingency_to_pairs(CONT3X3)
    assert S.krippendorff_alpha(np.vstack([a, b])) == pytest.approx(0.7972585, abs=5e-8)


def test_krippendorff_perfect_and_undefined():
    perfect = np.array([[1, 2, 3, 1], [1, 2, 3, 1]])
    for level in ("nominal", "ordinal", "interval", "ratio"):
        assert S.krippendorff_alpha(perfect, level) == 1.0
    same = np.full((3, 6), 2.0)
    d = S.krippendorff_alpha_detail(same)
    assert d["value"] is None and "no variation" in d["warnings"][-1]
    assert math.isnan(S.krippendorff_alpha(same))
    one = S.krippendorff_alpha_detail(np.array([[1, 2, 3]]))
    assert one["value"] is None and "one rater" in one["warnings"][-1]
    unpaired = S.krippendorff_alpha_detail(np.array([[1, nan, 2], [nan, 1, nan]]))
    assert unpaired["value"] is None and "pairable" in unpaired["warnings"][-1]
    # variation only among unpairable values is still "no variation"
    hidden = S.krippendorff_alpha_detail(np.array([[1, 1, 2], [1, 1, nan]]))
    assert hidden["value"] is None
    flat = S.krippendorff_alpha_detail(np.array([[1, 1, 1, 1], [1, 2, 1, 2]]))
    assert any("Zero-variance rater" in w and "'0'" in w for w in flat["warnings"])
    strings = np.array([["y", "n", "y"], ["y", "n", "y"]], dtype=object)
    assert S.krippendorff_alpha(strings) == 1.0
    for r in (d, one, unpaired, hidden):
        assert_plain_json(r)
    with pytest.raises(ValueError):
        S.krippendorff_alpha(KRIPP_2011, level="cardinal")


# --------------------------------------------------------------------------------------
# Cohen's kappa
# --------------------------------------------------------------------------------------
def test_cohen_kappa_wikipedia_example():
    # Wikipedia "Cohen's kappa", worked example: 50 applications, both yes 20, A yes/B no
    # 5, A no/B yes 10, both no 15 -> po = .70, pe = .50, kappa = 0.4.
    a, b = contingency_to_pairs(np.array([[20, 5], [10, 15]]))
    d = S.cohen_kappa_detail(a, b)
    assert d["value"] == pytest.approx(0.4, abs=1e-12)
    assert d["po"] == pytest.approx(0.7) and d["pe"] == pytest.approx(0.5)
    assert d["n"] == 50
    assert_plain_json(d)


def test_cohen_kappa_irrcac_and_sas_examples():
    # irrCAC README: kappa2.table(cont3x3abstractors) = 0.7964094.
    a, b = contingency_to_pairs(CONT3X3)
    assert S.cohen_kappa(a, b) == pytest.approx(0.7964094, abs=5e-8)
    # SAS PROC FREQ agreement example as reproduced in statsmodels' test_inter_rater.py
    # (table10): simple kappa 0.4842, weighted kappa (Cicchetti-Allison = linear) 0.4701.
    a, b = contingency_to_pairs(np.array([[0, 4, 1], [0, 8, 0], [0, 1, 5]]))
    assert round(S.cohen_kappa(a, b), 4) == 0.4842
    assert round(S.cohen_kappa(a, b, weights="linear"), 4) == 0.4701


@pytest.mark.parametrize("weights, published", [
    # R irr::kappa2(anxiety[, 2:3]) as quoted in statsmodels' test_inter_rater.py:
    # unweighted -0.006289308, "equal" (linear) 0.1459075, "squared" 0.2520325.
    (None, -0.006289308), ("linear", 0.1459075), ("quadratic", 0.2520325),
])
def test_cohen_kappa_r_irr_anxiety(weights, published):
    assert S.cohen_kappa(ANXIETY[1], ANXIETY[2], weights) == pytest.approx(published, abs=5e-8)


def test_weighted_kappa_hand_computation():
    # Independent pure-Python computation of Cohen (1968) weighted kappa,
    # kw = 1 - sum(w * observed) / sum(w * expected) with w = |i-j|/(q-1) or squared.
    a = [1, 2, 3, 4, 5, 3, 2, 4, 5, 1, 2, 2, 3, 4, 4]
    b = [1, 3, 3, 5, 4, 2, 2, 4, 5, 2, 1, 2, 4, 4, 3]
    cats = [1, 2, 3, 4, 5]
    n, q = len(a), len(cats)
    for power, name in ((1, "linear"), (2, "quadratic")):
        w = [[(abs(i - j) / (q - 1)) ** power for j in range(q)] for i in range(q)]
        obs = sum(w[cats.index(x)][cats.index(y)] for x, y in zip(a, b, strict=True)) / n
        pa = [a.count(c) / n for c in cats]
        pb = [b.count(c) / n for c in cats]
        exp = sum(w[i][j] * pa[i] * pb[j] for i in range(q) for j in range(q))
        assert S.cohen_kappa(a, b, name) == pytest.approx(1 - obs / exp, abs=1e-12)


def test_cohen_kappa_perfect_undefined_and_missing():
    assert S.cohen_kappa([0, 1, 1, 0, 2], [0, 1, 1, 0, 2]) == 1.0
    assert S.cohen_kappa([1, 2, 3], [1, 2, 3], "quadratic") == 1.0
    same = S.cohen_kappa_detail([1, 1, 1, 1], [1, 1, 1, 1])
    assert same["value"] is None and "no variation" in same["warnings"][-1]
    assert math.isnan(S.cohen_kappa([1, 1, 1], [1, 1, 1]))
    # categories given but all ratings identical: still undefined
    assert math.isnan(S.cohen_kappa([0, 0, 0], [0, 0, 0], categories=[0, 1]))
    # one rater without variation: defined (0 by construction), flagged
    flat = S.cohen_kappa_detail([1, 1, 1, 1], [1, 0, 1, 1])
    assert flat["value"] == 0.0
    assert any("Rater a" in w and "zero variance" in w for w in flat["warnings"])
    miss = S.cohen_kappa_detail([1, 0, None, 1, 0], [1, 0, 1, nan, 0])
    assert miss["value"] == 1.0 and miss["n"] == 3
    assert any("2 pair(s)" in w for w in miss["warnings"])
    empty = S.cohen_kappa_detail([], [])
    assert empty["value"] is None
    for r in (same, flat, miss, empty):
        assert_plain_json(r)
    with pytest.raises(ValueError):
        S.cohen_kappa([1, 2], [1])


def test_cohen_kappa_codes_matches_library_path():
    # The numpy kernel used for bootstrapping must equal the statsmodels-backed value.
    rng = np.random.default_rng(3)
    a = rng.integers(0, 4, 300)
    b = np.where(rng.random(300) < 0.6, a, rng.integers(0, 4, 300))
    b[:7] = -1  # missing
    b_lab = b.astype(float)
    b_lab[b < 0] = nan
    for w in (None, "linear", "quadratic"):
        assert S.cohen_kappa_codes(a, b, 4, w) == pytest.approx(
            S.cohen_kappa(a, b_lab, w, categories=[0, 1, 2, 3]), abs=1e-12)
    idx = S.bootstrap_indices(300, 50, seed=4)
    batch = S.cohen_kappa_codes(a[idx], b[idx], 4)
    loop = [S.cohen_kappa_codes(a[i], b[i], 4) for i in idx]
    assert np.allclose(batch, loop)
    by_freq = S.cohen_kappa_codes(a, b, 4, freq=S.bootstrap_freq(idx, 300))
    assert np.allclose(by_freq, loop)
    assert math.isnan(S.cohen_kappa_codes(np.zeros(5, int), np.zeros(5, int), 2))


# --------------------------------------------------------------------------------------
# Fleiss' kappa
# --------------------------------------------------------------------------------------
def test_fleiss_kappa_wikipedia_example():
    # Wikipedia "Fleiss' kappa" worked example: P-bar = 0.378, P-bar_e = 0.213,
    # kappa = 0.210.
    d = S.fleiss_kappa_detail(counts_to_labels(FLEISS_WIKI))
    assert round(d["value"], 3) == 0.210
    assert round(d["pa"], 3) == 0.378 and round(d["pe"], 3) == 0.213
    assert_plain_json(d)


def test_fleiss_kappa_published_values():
    # R irr::kappam.fleiss(diagnoses) = 0.4302445 (quoted in statsmodels' tests; data of
    # Fleiss 1971).
    assert S.fleiss_kappa(DIAGNOSES) == pytest.approx(0.4302445, abs=5e-8)
    # irrCAC README: fleiss.kappa.dist(distrib.6raters) = 0.4139265 (pa .5511111,
    # pe .2340741).
    d = S.fleiss_kappa_detail(counts_to_labels(DISTRIB_6RATERS))
    assert d["value"] == pytest.approx(0.4139265, abs=5e-8)
    assert d["pa"] == pytest.approx(0.5511111, abs=5e-8)
    assert d["pe"] == pytest.approx(0.2340741, abs=5e-8)
    # irrCAC README: fleiss.kappa.raw(cac.raw4raters) = 0.76117 (pa 0.8181818,
    # pe 0.2387153) -- missing ratings, Gwet's generalisation.
    d = S.fleiss_kappa_detail(RAW4RATERS)
    assert d["value"] == pytest.approx(0.76117, abs=5e-6)
    assert d["pe"] == pytest.approx(0.2387153, abs=5e-8)
    assert any("Gwet" in w for w in d["warnings"])


def test_fleiss_kernel_matches_statsmodels_on_balanced_data():
    # Gwet's generalisation reduces to statsmodels' fleiss_kappa when balanced.
    from statsmodels.stats.inter_rater import fleiss_kappa as sm_fleiss
    assert S.fleiss_kappa_counts(FLEISS_WIKI) == pytest.approx(sm_fleiss(FLEISS_WIKI),
                                                               abs=1e-12)


def test_fleiss_kappa_undefined_and_perfect():
    assert S.fleiss_kappa([[1, 1, 1], [2, 2, 2], [3, 3, 3]]) == 1.0
    same = S.fleiss_kappa_detail(np.ones((4, 3)))
    assert same["value"] is None and "no variation" in same["warnings"][-1]
    one = S.fleiss_kappa_detail(np.array([[1], [2], [1]]))
    assert one["value"] is None and "one rater" in one["warnings"][-1]
    assert math.isnan(S.fleiss_kappa(np.ones((4, 3))))
    assert math.isnan(S.fleiss_kappa(np.empty((0, 3))))
    for r in (same, one):
        assert_plain_json(r)


# --------------------------------------------------------------------------------------
# Gwet's AC1 and percent agreement
# --------------------------------------------------------------------------------------
def test_gwet_ac1_irrcac_raw4raters():
    # irrCAC README: gwet.ac1.raw(cac.raw4raters) -> pa 0.8181818, pe 0.1903212,
    # AC1 0.77544 (Gwet 2014, Handbook of Inter-Rater Reliability, 4th ed.).
    d = S.gwet_ac1_detail(RAW4RATERS)
    assert d["value"] == pytest.approx(0.77544, abs=5e-6)
    assert d["pa"] == pytest.approx(0.8181818, abs=5e-8)
    assert d["pe"] == pytest.approx(0.1903212, abs=5e-8)
    assert_plain_json(d)


def test_gwet_ac1_irrcac_other_examples():
    # irrCAC README: gwet.ac1.table(cont3x3abstractors) = 0.8493305 (two raters).
    a, b = contingency_to_pairs(CONT3X3)
    assert S.gwet_ac1(np.column_stack([a, b])) == pytest.approx(0.8493305, abs=5e-8)
    # irrCAC README: gwet.ac1.dist(distrib.6raters) = 0.4448007 (pa .5511111,
    # pe .1914815).
    d = S.gwet_ac1_detail(counts_to_labels(DISTRIB_6RATERS))
    assert d["value"] == pytest.approx(0.4448007, abs=5e-8)
    assert d["pe"] == pytest.approx(0.1914815, abs=5e-8)


def test_gwet_ac1_all_identical_and_undefined():
    # All ratings identical: pa = 1 and sum pi(1-pi) = 0 -> pe = 0 for any q >= 2, so
    # AC1 = 1.0 (Gwet 2008 formula); documented with a warning.
    for cats in (None, [0, 1], [0, 1, 2]):
        d = S.gwet_ac1_detail(np.zeros((5, 3)), categories=cats)
        assert d["value"] == 1.0 and d["pe"] == 0.0
        assert any("identical" in w for w in d["warnings"])
    assert S.gwet_ac1([[1, 1], [2, 2], [1, 1]]) == 1.0
    one = S.gwet_ac1_detail(np.array([[1], [0]]))
    assert one["value"] is None
    assert math.isnan(S.gwet_ac1(np.array([[1, nan], [nan, 0]])))  # nobody doubly rated
    assert_plain_json(one)


def test_gwet_ac1_kernel_batch_and_freq_paths():
    rng = np.random.default_rng(5)
    codes = rng.integers(0, 3, size=(200, 4))
    codes[rng.random((200, 4)) < 0.1] = -1
    table = S.count_table(codes, 3)
    idx = S.bootstrap_indices(200, 40, seed=6)
    loop = np.array([S.gwet_ac1_counts(table[i]) for i in idx])
    assert np.allclose(S.gwet_ac1_counts(table[idx]), loop)
    assert np.allclose(S.gwet_ac1_counts(table, freq=S.bootstrap_freq(idx, 200)), loop)
    assert np.allclose(S.fleiss_kappa_counts(table, freq=S.bootstrap_freq(idx, 200)),
                       [S.fleiss_kappa_counts(table[i]) for i in idx])
    labels = np.where(codes < 0, nan, codes.astype(float))
    assert S.gwet_ac1_counts(table) == pytest.approx(S.gwet_ac1(labels), abs=1e-12)


def test_percent_agreement_published_and_edge_cases():
    # irrCAC README: pa.coeff.raw(cac.raw4raters) = 0.8181818;
    # pa2.table(cont3x3abstractors) = 0.89.
    assert S.percent_agreement(RAW4RATERS) == pytest.approx(0.8181818, abs=5e-8)
    a, b = contingency_to_pairs(CONT3X3)
    assert S.percent_agreement(np.column_stack([a, b])) == pytest.approx(0.89, abs=1e-12)
    assert S.percent_agreement(np.ones((4, 3))) == 1.0
    d = S.percent_agreement_detail(np.array([[1], [2]]))
    assert d["value"] is None and "one rater" in d["warnings"][-1]
    assert math.isnan(S.percent_agreement(np.empty((0, 2))))
    # string labels and None as missing
    assert S.percent_agreement([["y", "y", None], ["n", "y", "y"]]) == pytest.approx(
        (1 + 1 / 3) / 2)
    assert_plain_json(d)


# --------------------------------------------------------------------------------------
# Kendall's W
# --------------------------------------------------------------------------------------
def test_kendall_w_with_ties_descTools_anxiety():
    # DescTools::KendallW(anxiety, correct=TRUE) = 0.5396569 (R documentation example; the
    # function is irr::kendall). Ties within raters -> tie-corrected W.
    # chi2 = m (n - 1) W = 3 * 19 * W on 19 df.
    res = S.kendall_w(ANXIETY)  # rows raters, columns subjects
    assert res["w"] == pytest.approx(0.5396569, abs=5e-8)
    assert res["dof"] == 19
    assert res["chi2"] == pytest.approx(3 * 19 * 0.5396569, abs=1e-5)
    assert res["p"] == pytest.approx(sps.chi2.sf(res["chi2"], 19), rel=1e-10)
    assert any("tie-corrected" in w for w in res["warnings"])
    assert_plain_json(res)


def test_kendall_w_without_ties_published_example():
    # influentialpoints.com "Kendall coefficient of concordance", worked example I:
    # 4 raters rank strawberries from 8 farms; rank sums 31 12 12 15 22 5 22 25,
    # SS = 500, W = 500 / (504 * 16 / 12) = 0.744, k(N-1)W = 20.83.
    ranks = np.array([
        [8, 4, 2, 3, 5, 1, 6, 7],
        [7, 3, 1, 4, 5, 2, 6, 8],
        [8, 2, 5, 6, 7, 1, 4, 3],
        [8, 3, 4, 2, 5, 1, 6, 7],
    ])
    res = S.kendall_w(pd.DataFrame(ranks))
    assert res["w"] == pytest.approx(500 / 672, abs=1e-12)
    assert round(res["w"], 3) == 0.744 and round(res["chi2"], 2) == 20.83
    assert not any("tie" in w.lower() for w in res["warnings"])


def test_kendall_w_undefined_cases():
    one = S.kendall_w(pd.DataFrame([[1, 2, 3]]))
    assert one["w"] is None and "two raters" in one["warnings"][-1]
    tied = S.kendall_w(pd.DataFrame([[2, 2, 2], [5, 5, 5]]))
    assert tied["w"] is None and "no variation" in tied["warnings"][-1]
    miss = S.kendall_w(pd.DataFrame([[1, 2, 3], [1, 2, nan], [1, 2, 3]]))
    assert miss["w"] == 1.0 and miss["n_raters"] == 2
    flat = S.kendall_w(pd.DataFrame([[1, 2, 3], [1, 2, 3], [4, 4, 4]], index=["a", "b", "c"]))
    assert any("Zero-variance rater" in w and "'c'" in w for w in flat["warnings"])
    for r in (one, tied, miss, flat):
        assert_plain_json(r)


# --------------------------------------------------------------------------------------
# classification report
# --------------------------------------------------------------------------------------
def test_classification_report_wikipedia_dogs_example():
    # Wikipedia "Precision and recall": 12 dogs and 10 cats; 8 identified as dogs of which
    # 5 are dogs -> TP 5, FP 3, FN 7, TN 7; precision 5/8, recall 5/12.
    reference = ["dog"] * 12 + ["cat"] * 10
    judge = ["dog"] * 5 + ["cat"] * 7 + ["dog"] * 3 + ["cat"] * 7
    res = S.classification_report(judge, reference, positive="dog")
    assert (res["tp"], res["fp"], res["fn"], res["tn"]) == (5, 3, 7, 7)
    assert res["precision"] == pytest.approx(5 / 8)
    assert res["recall"] == pytest.approx(5 / 12)
    assert res["accuracy"] == pytest.approx(12 / 22)
    assert res["f1"] == pytest.approx(2 * (5 / 8) * (5 / 12) / (5 / 8 + 5 / 12))
    assert res["n"] == 22 and res["support"] == 12 and res["positive_class"] == "dog"
    assert_plain_json(res)


def test_classification_report_undefined_parts():
    never_pos = S.classification_report([0, 0, 0], [1, 0, 1])
    assert never_pos["precision"] is None and never_pos["recall"] == 0.0
    assert any("Precision is undefined" in w for w in never_pos["warnings"])
    no_pos = S.classification_report([0, 0], [0, 0])
    assert no_pos["precision"] is None and no_pos["recall"] is None and no_pos["f1"] is None
    assert no_pos["accuracy"] == 1.0
    empty = S.classification_report([None], [1])
    assert empty["accuracy"] is None and empty["n"] == 0
    for r in (never_pos, no_pos, empty):
        assert_plain_json(r)
    np_in = S.classification_report(np.array([1, 0, 1]), np.array([1.0, 0.0, nan]))
    assert np_in["n"] == 2 and np_in["accuracy"] == 1.0
    assert_plain_json(np_in)


# --------------------------------------------------------------------------------------
# bootstrap
# --------------------------------------------------------------------------------------
def _paired(n: int = 150, seed: int = 7) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    a = rng.integers(0, 2, n)
    b = np.where(rng.random(n) < 0.8, a, 1 - a)
    return a, b


def test_bootstrap_reproducible_and_contains_estimate():
    a, b = _paired()
    r1 = S.bootstrap_ci(S.cohen_kappa, a, b, n_resamples=200, seed=11)
    r2 = S.bootstrap_ci(S.cohen_kappa, a, b, n_resamples=200, seed=11)
    r3 = S.bootstrap_ci(S.cohen_kappa, a, b, n_resamples=200, seed=12)
    assert r1 == r2
    assert (r1["ci_low"], r1["ci_high"]) != (r3["ci_low"], r3["ci_high"])
    assert r1["ci_low"] <= r1["estimate"] <= r1["ci_high"]
    assert r1["estimate"] == S.cohen_kappa(a, b)
    assert r1["seed"] == 11 and r1["method"] == "percentile" and r1["n_resamples"] == 200
    assert r1["n_valid"] == 200
    assert_plain_json(r1)
    basic = S.bootstrap_ci(S.cohen_kappa, a, b, n_resamples=200, seed=11, method="basic")
    assert basic["ci_low"] == pytest.approx(2 * r1["estimate"] - r1["ci_high"])


def test_bootstrap_fast_paths_agree_with_generic_path():
    a, b = _paired()
    idx = S.bootstrap_indices(len(a), 300, seed=13)
    generic = S.bootstrap_ci(lambda x, y: S.cohen_kappa_codes(x, y, 2), a, b, indices=idx)
    vec = S.bootstrap_ci(lambda x, y: S.cohen_kappa_codes(x, y, 2), a, b, indices=idx,
                         vectorized=True, batch_size=64)
    freq = S.bootstrap_ci(lambda f, x, y: S.cohen_kappa_codes(x, y, 2, freq=f), a, b,
                          indices=idx, vectorized="freq")
    shared = S.bootstrap_ci(lambda f, x, y: S.cohen_kappa_codes(x, y, 2, freq=f), a, b,
                            freq=S.bootstrap_freq(idx, len(a)), vectorized="freq")
    for other in (vec, freq, shared):
        for key in ("estimate", "ci_low", "ci_high", "n_valid"):
            assert other[key] == pytest.approx(generic[key], abs=1e-12)
    # default seed path == explicit index matrix from the same seed
    assert S.bootstrap_ci(S.cohen_kappa, a, b, n_resamples=300, seed=13)["ci_low"] == \
        pytest.approx(generic["ci_low"], abs=1e-12)


def test_bootstrap_counts_dropped_resamples_deterministically():
    # fn is defined only when row 0 appears in the resample; the expected number of valid
    # resamples follows from the same seeded index matrix -- no timing involved.
    n, seed = 40, 21
    values = np.arange(n, dtype=float)

    def fn(v):
        return float(np.mean(v)) if (v == 0).any() else float("nan")

    idx = S.bootstrap_indices(n, 500, seed)
    expected_valid = int((idx == 0).any(axis=1).sum())
    res = S.bootstrap_ci(fn, values, n_resamples=500, seed=seed)
    assert res["n_valid"] == expected_valid < 500
    assert res["estimate"] == pytest.approx(values.mean())
    assert any(f"{500 - expected_valid} of 500" in w for w in res["warnings"])
    # undefined on the full sample -> no interval, reason given
    undefined = S.bootstrap_ci(lambda v: float("nan"), values, n_resamples=50, seed=seed)
    assert undefined["estimate"] is None and undefined["ci_low"] is None
    assert undefined["n_valid"] == 0
    assert any("undefined on the full sample" in w for w in undefined["warnings"])
    assert_plain_json(res)
    assert_plain_json(undefined)


def test_bootstrap_dataframe_rows_stay_paired():
    df = pd.DataFrame({"judge": [1, 0, 1, 1, 0, 1], "ref": [1, 0, 1, 1, 0, 1]},
                      index=list("abcdef"))
    res = S.bootstrap_ci(lambda d: S.cohen_kappa(d["judge"], d["ref"]), df,
                         n_resamples=100, seed=3)
    # every defined resample gives 1: no interval [1, 1], but "not estimable (no variation)"
    assert res["estimate"] == 1.0 and res["ci_low"] is None and res["ci_high"] is None
    assert res["ci_note"] == S.NO_VARIATION
    # resamples with a single class are undefined for kappa and are dropped
    assert res["n_valid"] <= 100
    with pytest.raises(ValueError):
        S.bootstrap_ci(S.cohen_kappa, [1, 2, 3], [1, 2])


# --------------------------------------------------------------------------------------
# interpretation bands
# --------------------------------------------------------------------------------------
@pytest.mark.parametrize("scale, value, label", [
    # Landis & Koch (1977): <0 poor, .00-.20 slight, .21-.40 fair, .41-.60 moderate,
    # .61-.80 substantial, .81-1.00 almost perfect; the bounds of a continuous coefficient start the
    # band above them (0.40 is "moderate", the band a reliability floor of 0.40 names)
    ("landis_koch", -0.1, "poor"), ("landis_koch", 0.0, "slight"), ("landis_koch", 0.19, "slight"),
    ("landis_koch", 0.20, "fair"), ("landis_koch", 0.21, "fair"), ("landis_koch", 0.399, "fair"),
    ("landis_koch", 0.40, "moderate"), ("landis_koch", 0.1 + 0.3 - 1e-12, "moderate"),
    ("landis_koch", 0.59, "moderate"), ("landis_koch", 0.60, "substantial"),
    ("landis_koch", 0.79, "substantial"), ("landis_koch", 0.80, "almost perfect"),
    # Kaiser (1974): .90s marvelous, .80s meritorious, .70s middling, .60s mediocre,
    # .50s miserable, below .50 unacceptable
    ("kaiser_kmo", 0.95, "marvelous"), ("kaiser_kmo", 0.85, "meritorious"),
    ("kaiser_kmo", 0.75, "middling"), ("kaiser_kmo", 0.65, "mediocre"),
    ("kaiser_kmo", 0.55, "miserable"), ("kaiser_kmo", 0.45, "unacceptable"),
    # Cicchetti (1994): <.40 poor, .40-.59 fair, .60-.74 good, .75-1.00 excellent
    ("cicchetti_icc", 0.39, "poor"), ("cicchetti_icc", 0.40, "fair"),
    ("cicchetti_icc", 0.60, "good"), ("cicchetti_icc", 0.75, "excellent"),
    # Koo & Li (2016): <.5 poor, .5-.75 moderate, .75-.9 good, >.90 excellent
    ("koo_li_icc", 0.49, "poor"), ("koo_li_icc", 0.5, "moderate"),
    ("koo_li_icc", 0.75, "good"), ("koo_li_icc", 0.90, "good"),
    ("koo_li_icc", 0.91, "excellent"),
    # Krippendorff (2004): >= .800 reliable, >= .667 tentative
    ("krippendorff", 0.80, "reliable"), ("krippendorff", 0.70, "tentative"),
    ("krippendorff", 0.6, "unreliable"),
    # George & Mallery (2003): >.9 excellent, >.8 good, >.7 acceptable, >.6 questionable,
    # >.5 poor, <.5 unacceptable
    ("cronbach", 0.95, "excellent"), ("cronbach", 0.85, "good"),
    ("cronbach", 0.75, "acceptable"), ("cronbach", 0.65, "questionable"),
    ("cronbach", 0.55, "poor"), ("cronbach", 0.3, "unacceptable"),
])
def test_interpret_bands(scale, value, label):
    res = S.interpret(value, scale)
    assert res["label"] == label
    assert res["source"]
    assert_plain_json(res)


def test_interpret_undefined_and_sources():
    assert S.interpret(None, "landis_koch")["label"] == "undefined"
    assert S.interpret(float("nan"), "cronbach")["label"] == "undefined"
    assert "Landis" in S.interpret(0.5, "landis_koch")["source"]
    assert "Kaiser" in S.interpret(0.5, "kaiser_kmo")["source"]
    assert "Koo" in S.interpret(0.5, "koo_li_icc")["source"]
    assert "Cicchetti" in S.interpret(0.5, "cicchetti_icc")["source"]
    assert "George" in S.interpret(0.5, "cronbach")["source"]
    with pytest.raises(ValueError):
        S.interpret(0.5, "made_up")


# --------------------------------------------------------------------------------------
# JSON-serialisability of every dict-returning function (incl. undefined results)
# --------------------------------------------------------------------------------------
def test_all_dict_outputs_are_strict_json():
    const = pd.DataFrame({"a": [1, 1, 1], "b": [1, 1, 1]})
    outputs = [
        S.cronbach_alpha(const), S.alpha_if_deleted(const), S.kmo(const),
        S.bartlett_sphericity(const), S.icc(long_format(np.ones((3, 3))), "target", "judge",
                                            "rating"),
        S.kendall_w(const), S.classification_report([1], [0]),
        S.krippendorff_alpha_detail(np.ones((2, 3))), S.cohen_kappa_detail([1], [1]),
        S.fleiss_kappa_detail(np.ones((3, 2))), S.gwet_ac1_detail(np.ones((3, 1))),
        S.percent_agreement_detail(np.ones((3, 1))),
        S.bootstrap_ci(S.cohen_kappa, [1, 1, 1], [1, 1, 1], n_resamples=20),
        S.interpret(None, "krippendorff"),
        S.icc(long_format(SHROUT_FLEISS), "target", "judge", "rating"),
        S.kmo(_big5()), S.cronbach_alpha(_big5()),
    ]
    for out in outputs:
        assert_plain_json(out)
    for fn in (S.krippendorff_alpha, S.fleiss_kappa, S.percent_agreement, S.gwet_ac1):
        assert type(fn(np.ones((3, 2)) if fn is not S.krippendorff_alpha
                       else np.ones((2, 3)))) is float
    assert type(S.cohen_kappa([1, 0], [1, 0])) is float


# --------------------------------------------------------------------------------------
# BCa intervals, tetrachoric correlations, KMO / Bartlett from a correlation
# matrix, clustered alpha, CI bands, label order, Kendall's W without the tie correction
# --------------------------------------------------------------------------------------
def test_bca_matches_scipy_on_the_same_resamples():
    # scipy.stats.bootstrap(method="BCa") draws rng.integers(0, n, (B, n)) from the same
    # Generator as bootstrap_indices, so the intervals must agree to rounding.
    rng = np.random.default_rng(3)
    x = rng.exponential(size=25)
    ref = sps.bootstrap((x,), lambda a, axis: a.mean(axis=axis), n_resamples=2000, method="BCa",
                        rng=np.random.default_rng(11), vectorized=True).confidence_interval
    generic = S.bootstrap_ci(lambda a: a.mean(), x, n_resamples=2000, seed=11, method="bca")
    vectorised = S.bootstrap_ci(lambda a: a.mean(axis=-1), x, n_resamples=2000, seed=11, method="bca",
                                vectorized=True)
    for res in (generic, vectorised):
        assert [res["ci_low"], res["ci_high"]] == pytest.approx([ref.low, ref.high], rel=1e-12)
        assert res["method"] == "bca" and res["acceleration"] is not None
    # paired data (Cohen's kappa of two raters) through the freq kernel and the jackknife object
    a = rng.integers(0, 2, 40)
    b = np.where(rng.random(40) < 0.8, a, 1 - a)
    ref = sps.bootstrap((a, b), lambda p, q, axis: S.cohen_kappa_codes(p, q, 2), paired=True, n_resamples=1000,
                        method="BCa", rng=np.random.default_rng(5), vectorized=True).confidence_interval
    fast = S.bootstrap_ci(lambda f, p, q: S.cohen_kappa_codes(p, q, 2, freq=f), a, b, n_resamples=1000, seed=5,
                          method="bca", vectorized="freq")
    assert [fast["ci_low"], fast["ci_high"]] == pytest.approx([ref.low, ref.high], rel=1e-12)
    assert_plain_json(fast)


def test_jackknife_object_gives_leave_one_out_values():
    rng = np.random.default_rng(4)
    table = S.count_table(rng.integers(0, 3, (30, 4)), 3)
    jack = S.gwet_ac1_counts(table, freq=S.jackknife_freq(30))
    explicit = [S.gwet_ac1_counts(np.delete(table, i, axis=0)) for i in range(30)]
    assert jack == pytest.approx(explicit)
    kripp = S.krippendorff_alpha_counts(table, [1, 2, 3], "ordinal", S.jackknife_freq(30))
    assert kripp[7] == pytest.approx(S.krippendorff_alpha_counts(np.delete(table, 7, axis=0), [1, 2, 3], "ordinal"))


def test_bca_falls_back_to_percentile_when_the_jackknife_is_undefined():
    res = S.bootstrap_summary(0.5, np.linspace(0, 1, 101), method="bca", jackknife=[0.4, np.nan, 0.6])
    assert res["method"] == "percentile (BCa undefined)" and res["ci_low"] == pytest.approx(0.025)
    assert any("BCa acceleration is undefined" in w for w in res["warnings"])
    with pytest.raises(ValueError, match="jackknife"):
        S.bootstrap_summary(0.5, [0.1, 0.2], method="bca")
    assert "undercover" not in (S.small_sample_warning(29, "bca") or "")
    assert "too narrow" in S.small_sample_warning(14, "percentile") and S.small_sample_warning(30, "bca") is None


@pytest.mark.parametrize("p_x, p_y, p_both, published", [
    # Kirk DE (1973), Educational and Psychological Measurement 33:657-661, as quoted in the
    # examples of R psych::tetrachoric: marginals then joint probability -> rho.
    (.5, .5, .333333, .5), (.5, .5, .1150267, -.75), (.5, .5, .397584, .8),
    (.158655254, .158655254, .145003, .99),
])
def test_tetrachoric_kirk_1973(p_x, p_y, p_both, published):
    n = 1e6
    n11, n10, n01 = p_both * n, (p_x - p_both) * n, (p_y - p_both) * n
    assert float(S.tetrachoric_counts(n - n11 - n10 - n01, n01, n10, n11, correct=0)) == pytest.approx(
        published, abs=5e-5)


@pytest.mark.parametrize("cells, published", [
    # R psych::tetrachoric examples, "Mplus reports": matrix(c(a, b, c, d), 2, 2) fills by column,
    # so the table is [[a, c], [b, d]]; 0.5 added to an empty cell (psych's default correction).
    ((61661, 1610, 85, 20), .35), ((62503, 105, 768, 0), -.10), ((24875, 265, 47, 0), 0.0),
])
def test_tetrachoric_mplus_values_quoted_by_psych(cells, published):
    a, b, c, d = cells
    assert round(float(S.tetrachoric_counts(a, c, b, d)), 2) == pytest.approx(published, abs=1e-9)


def test_bivariate_normal_cdf_and_tetrachoric_detail():
    for h, k, r in [(0, 0, .5), (-1, -1, .99), (1.2, -.3, -.7), (.5, 2, .95), (-2, -2.5, -.95), (0, 1.3, .2)]:
        ref = sps.multivariate_normal.cdf([h, k], cov=[[1, r], [r, 1]])
        assert float(S.bivariate_normal_cdf(h, k, r)) == pytest.approx(ref, abs=1e-7)
    assert float(S.bivariate_normal_cdf(0, 0, .5)) == pytest.approx(1 / 3, abs=1e-12)  # 1/4 + asin(.5)/(2 pi)
    x = [0, 0, 1, 1, 1, 0, 1, 1, 0, 1]
    y = [0, 1, 1, 1, 0, 0, 1, 1, 0, 1]
    detail = S.tetrachoric_detail(x, y)
    assert detail["table"] == [[3, 1], [1, 5]] and detail["n"] == 10
    # the MLE given the thresholds reproduces the 0/0 cell exactly
    tx, ty = detail["thresholds"]
    assert float(S.bivariate_normal_cdf(tx, ty, detail["value"])) == pytest.approx(0.3, abs=1e-9)
    assert S.tetrachoric_detail([1, 1, 1], [0, 1, 0])["value"] is None
    with pytest.raises(ValueError, match="0/1"):
        S.tetrachoric_detail([0, 2], [1, 0])
    assert_plain_json(detail)


def test_kmo_and_bartlett_from_correlations_match_factor_analyzer():
    from factor_analyzer.factor_analyzer import calculate_bartlett_sphericity, calculate_kmo

    data = _big5().to_numpy(dtype=float)
    r = np.corrcoef(data, rowvar=False)
    per_item, overall = S.kmo_from_correlations(r)
    ref_items, ref_overall = calculate_kmo(data)
    assert overall == pytest.approx(ref_overall) and per_item == pytest.approx(ref_items)
    chi2, dof, p = S.bartlett_from_correlations(r, len(data))
    ref_chi2, ref_p = calculate_bartlett_sphericity(data)
    assert chi2 == pytest.approx(ref_chi2) and p == pytest.approx(ref_p, rel=1e-9, abs=1e-300)
    # fewer independent observations, same matrix: a smaller statistic
    fewer = S.bartlett_sphericity(_big5(), n=100)
    assert fewer["n"] == 100 and fewer["chi2"] == pytest.approx(S.bartlett_from_correlations(r, 100)[0])
    assert fewer["chi2"] < S.bartlett_sphericity(_big5())["chi2"]


def test_tetrachoric_kmo_bartlett_and_ordinal_alpha():
    rng = np.random.default_rng(9)
    latent = rng.normal(size=400)
    x = pd.DataFrame({f"i{k}": (latent + rng.normal(size=400) > rng.normal(scale=.5)).astype(int)
                      for k in range(5)})
    r, warns = S.tetrachoric_matrix(x)
    assert r[0, 1] == pytest.approx(S.tetrachoric_detail(x["i0"], x["i1"])["value"])
    assert np.allclose(r, r.T) and np.allclose(np.diag(r), 1)
    kmo = S.kmo(x, correlation="tetrachoric")
    assert kmo["overall"] == pytest.approx(S.kmo_from_correlations(r)[1]) and kmo["correlation"] == "tetrachoric"
    bart = S.bartlett_sphericity(x, correlation="tetrachoric", n=400)
    assert bart["chi2"] == pytest.approx(S.bartlett_from_correlations(r, 400)[0])
    # tetrachoric > phi for dichotomised normals (Pearson on 0/1 attenuates)
    assert r[0, 1] > np.corrcoef(x["i0"], x["i1"])[0, 1]
    ordinal = S.ordinal_alpha(x)
    mean_r = r[np.triu_indices(5, 1)].mean()
    assert ordinal["alpha"] == pytest.approx(5 * mean_r / (1 + 4 * mean_r))
    clusters = np.arange(400) // 4
    assert S.ordinal_alpha_clustered(x.to_numpy(), clusters) == pytest.approx(ordinal["alpha"])
    assert S.cronbach_alpha_clustered(x.to_numpy(), clusters) == pytest.approx(S.cronbach_alpha(x)["alpha"])


def test_interval_bands():
    # Koo & Li (2016): "ICC .90, 95% CI .83-.94 ... good to excellent"
    assert S.interpret_interval(0.83, 0.94, "koo_li_icc")["label"] == "good to excellent"
    assert S.interpret_interval(0.55, 0.70, "koo_li_icc")["label"] == "moderate"
    assert S.interpret_interval(None, 0.70, "koo_li_icc")["label"] == "undefined"


def test_weighted_kappa_orders_numeric_string_labels_by_value():
    # '2' < '10' by value; lexicographic order would put '10' first and change the weights
    a = ["1", "2", "10", "2", "1", "10"]
    b = ["2", "2", "10", "1", "1", "2"]
    numeric = S.cohen_kappa([1, 2, 10, 2, 1, 10], [2, 2, 10, 1, 1, 2], weights="quadratic")
    assert S.cohen_kappa(a, b, weights="quadratic") == pytest.approx(numeric)
    assert S.cohen_kappa_detail(a, b, weights="linear")["categories"] == ["1", "2", "10"]
    assert S.encode_labels(["10", "9", "1"])[1] == ["1", "9", "10"]
    with pytest.raises(ValueError, match="order of the categories"):
        S.cohen_kappa(["low", "high"], ["high", "high"], weights="linear")
    ordered = S.cohen_kappa(["low", "high", "mid"], ["mid", "high", "mid"], weights="linear",
                            categories=["low", "mid", "high"])
    assert ordered == pytest.approx(S.cohen_kappa([0, 2, 1], [1, 2, 1], weights="linear"))


def test_kendall_w_without_tie_correction_anxiety():
    # Kendall's (1948) W without correction, 12 S / (m^2 (n^3 - n)), computed independently from
    # the rank sums; the tie-corrected value is the published DescTools one (test above).
    ranks = np.vstack([sps.rankdata(row) for row in ANXIETY])
    sums = ranks.sum(axis=0)
    m, n = ANXIETY.shape
    expected = 12 * ((sums - sums.mean()) ** 2).sum() / (m ** 2 * (n ** 3 - n))
    res = S.kendall_w(ANXIETY)
    assert res["w_uncorrected"] == pytest.approx(expected) and res["w_uncorrected"] < res["w"]
    named = S.kendall_w(pd.DataFrame([[1, 2, 3], [1, nan, 3], [2, 1, 3]], index=["P1", "P2", "P3"]))
    assert named["dropped"] == ["P2"] and "Rater P2 left out" in named["warnings"][0]
    assert_plain_json(res)


def test_alpha_if_deleted_fast_path_equals_cronbach_alpha_per_item():
    rng = np.random.default_rng(12)
    x = pd.DataFrame((rng.random((300, 8)) < rng.random(8)).astype(float), columns=[f"i{k}" for k in range(8)])
    x["i1"] = np.where(rng.random(300) < 0.6, x["i0"], x["i1"])
    fast = S.alpha_if_deleted(x)  # complete data: one covariance matrix
    for col in x.columns:
        assert fast[col] == pytest.approx(S.cronbach_alpha(x.drop(columns=[col]))["alpha"], abs=1e-12)
    x.loc[3, "i2"] = nan  # missing values: one cronbach_alpha per item, pairwise
    slow = S.alpha_if_deleted(x)
    assert slow["i0"] == pytest.approx(S.cronbach_alpha(x.drop(columns=["i0"]))["alpha"])
