"""The vectorised ICC kernel against pingouin, which stays the reference: every Shrout & Fleiss
form with its F test and F-distribution CI, to 1e-9, on random, constant-rater, near-constant and missing-cell data,
over a stack of items and over bootstrap resamples (each resample checked against pingouin on the resampled data)."""

from __future__ import annotations

import warnings

import numpy as np
import pandas as pd
import pytest

from core import stats
from core.stats.kernels import ICC_KERNEL_FORMS, icc_kernel, icc_mean_squares
from tests.lazy import lazy

pg = lazy("pingouin")

TOL = 1e-9  # absolute, and relative for large F (pingouin takes the residual as a difference of sums)
FIELDS = (("icc", "ICC"), ("f", "F"), ("df2", "df2"), ("p", "pval"))


def long_frame(y: np.ndarray) -> pd.DataFrame:
    n, k = y.shape
    return pd.DataFrame({"t": np.repeat(np.arange(n), k), "r": np.tile(np.arange(k), n), "y": y.ravel()})


def pingouin_icc(data: pd.DataFrame, nan_policy: str = "raise") -> dict[str, dict[str, float]]:
    """pingouin.intraclass_corr with its CI unrounded: form -> icc, f, df1, df2, p, ci_low, ci_high."""
    saved = pg.options.get("round.column.CI95")
    pg.options["round.column.CI95"] = None
    try:
        with warnings.catch_warnings(), np.errstate(all="ignore"):
            warnings.simplefilter("ignore")
            table = pg.intraclass_corr(data=data, targets="t", raters="r", ratings="y", nan_policy=nan_policy)
    finally:
        pg.options["round.column.CI95"] = saved
    out = {}
    for form, (_, row) in zip(ICC_KERNEL_FORMS, table.iterrows(), strict=True):
        out[form] = {"icc": row["ICC"], "f": row["F"], "df1": row["df1"], "df2": row["df2"], "p": row["pval"],
                     "ci_low": row["CI95"][0], "ci_high": row["CI95"][1]}
    return out


def assert_same(got: dict, want: dict, where: str = "") -> None:
    for form in ICC_KERNEL_FORMS:
        for key in ("icc", "f", "df1", "df2", "p", "ci_low", "ci_high"):
            a, b = float(got[form][key]), float(want[form][key])
            if np.isnan(b) or np.isinf(b):
                assert (np.isnan(a) and np.isnan(b)) or a == b, f"{where} {form} {key}: {a} != {b}"
            else:
                assert a == pytest.approx(b, abs=TOL, rel=TOL), f"{where} {form} {key}: {a} != {b}"


def at(result: dict, index) -> dict:
    return {form: {key: np.asarray(value)[index] for key, value in row.items()} for form, row in result.items()}


def random_ratings(seed: int, n: int = 40, k: int = 4) -> np.ndarray:
    rng = np.random.default_rng(seed)
    return np.clip(np.round(3 + rng.normal(0, 1, (n, 1)) + rng.normal(0, 0.8, (n, k))), 0, 5)


def constant_rater(seed: int) -> np.ndarray:
    y = random_ratings(seed)
    y[:, 2] = 3.0  # one rater gives every target the same score
    return y


def near_constant(seed: int) -> np.ndarray:
    y = np.full((50, 5), 5.0)
    y[7, 1] = 4.0  # one score off the ceiling
    y[31, 3] = 4.0
    return y


def additive(seed: int) -> np.ndarray:
    rng = np.random.default_rng(seed)
    return rng.normal(0, 1, (20, 1)) * np.ones((1, 3)) + np.array([[0.0, 1.0, -0.5]]) + rng.normal(0, 1e-3, (20, 3))


@pytest.mark.parametrize("make", [random_ratings, constant_rater, near_constant, additive],
                         ids=["random", "constant rater", "near-constant", "nearly additive"])
@pytest.mark.parametrize("seed", [1, 2, 3])
def test_the_kernel_equals_pingouin(make, seed):
    y = make(seed)
    assert_same(icc_kernel(y), pingouin_icc(long_frame(y)), make.__name__)


def test_a_stack_of_items_in_one_call_equals_pingouin_item_by_item():
    stack = np.stack([random_ratings(seed) for seed in range(6)] + [constant_rater(7), near_constant(8)[:40, :4]])
    result = icc_kernel(stack)
    for index, y in enumerate(stack):
        assert_same(at(result, index), pingouin_icc(long_frame(y)), f"item {index}")


@pytest.mark.parametrize("make", [random_ratings, constant_rater, near_constant], ids=["random", "constant rater",
                                                                                        "near-constant"])
def test_every_bootstrap_resample_equals_pingouin_on_the_resampled_targets(make):
    y = make(5)
    n = len(y)
    indices = stats.bootstrap_indices(n, 25, seed=9)
    result = icc_kernel(y, freq=stats.bootstrap_freq(indices, n))
    for b, rows in enumerate(indices):
        resampled = y[rows]  # a target drawn twice counts as two targets, as in the kernel
        if np.ptp(resampled) == 0:
            assert np.isnan(result["ICC2"]["icc"][b])
            continue
        assert_same(at(result, b), pingouin_icc(long_frame(resampled)), f"resample {b}")


def test_the_jackknife_values_equal_pingouin_leaving_each_target_out():
    y = random_ratings(11, n=15)
    result = icc_kernel(y, freq=stats.jackknife_freq(len(y)))
    for i in range(len(y)):
        assert_same(at(result, i), pingouin_icc(long_frame(np.delete(y, i, axis=0))), f"without target {i}")


def test_constant_ratings_are_undefined_not_a_number_made_up():
    y = np.full((10, 3), 4.0)
    result = icc_kernel(y)
    assert all(np.isnan(result[form]["icc"]) for form in ICC_KERNEL_FORMS)
    report = stats.icc(long_frame(y), "t", "r", "y")
    assert report["ICC2"]["icc"] is None and any("no variation" in w for w in report["warnings"])


def test_perfectly_additive_ratings_give_an_infinite_f_and_consistency_one():
    y = np.arange(8, dtype=float)[:, None] + np.array([[0.0, 1.0, 2.0]])
    result = icc_kernel(y)
    assert np.isinf(result["ICC3"]["f"]) and result["ICC3"]["p"] == 0.0
    assert result["ICC3"]["icc"] == 1.0 and result["ICC1"]["icc"] < 1.0
    report = stats.icc(long_frame(y), "t", "r", "y")
    assert report["ICC3"]["icc"] == 1.0 and report["ICC3"]["f"] is None
    assert any("F is infinite" in w for w in report["warnings"])


def test_mean_squares_are_pingouins_anova():
    y = random_ratings(4, n=12, k=3)
    ms = icc_mean_squares(y)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        aov = pg.anova(data=long_frame(y), dv="y", between=["t", "r"], ss_type=2)
    assert float(ms["msb"]) == pytest.approx(aov.at[0, "MS"], abs=TOL)
    assert float(ms["msj"]) == pytest.approx(aov.at[1, "MS"], abs=TOL)
    assert float(ms["mse"]) == pytest.approx(aov.at[2, "MS"], abs=TOL)


@pytest.mark.parametrize("make", [random_ratings, constant_rater, near_constant], ids=["random", "constant rater",
                                                                                        "near-constant"])
def test_the_report_icc_with_missing_cells_and_duplicates_equals_pingouin(make):
    """stats.icc (what the reports call): labels in any order, missing cells (listwise deletion), a duplicate
    rating averaged, raters and targets named by strings; equal to pingouin with nan_policy='omit'."""
    y = make(6)
    frame = long_frame(y)
    frame["t"] = "answer-" + frame["t"].astype(str)
    frame["r"] = "rater " + frame["r"].astype(str)
    frame = frame.drop(index=[5, 17, 18]).sample(frac=1.0, random_state=1)  # three missing cells, shuffled
    duplicate = frame.iloc[[0]].assign(y=frame.iloc[0]["y"] + 1.0)
    frame = pd.concat([frame, duplicate], ignore_index=True)
    report = stats.icc(frame, targets="t", raters="r", ratings="y")
    want = pingouin_icc(frame.groupby(["t", "r"], as_index=False)["y"].mean(), nan_policy="omit")
    for form in ICC_KERNEL_FORMS:
        for key, value in report[form].items():
            expected = float(want[form][key])
            if value is None:
                assert not np.isfinite(expected), f"{form} {key}"
            else:
                assert value == pytest.approx(expected, abs=TOL), f"{form} {key}"
    assert report["n_raters"] == y.shape[1] and report["n_targets"] <= len(y) - 2
    assert any("duplicate" in w for w in report["warnings"]) and any("listwise" in w for w in report["warnings"])
    if make is constant_rater:
        assert any("'rater 2'" in w for w in report["warnings"])


@pytest.mark.parametrize("kind", ["random", "constant rater", "near-constant"])
def test_one_pass_agreement_equals_the_three_kernels(kind):
    """The campaign report's shared pass (percent agreement, Fleiss' kappa, AC1 from one matrix product per
    multiplicity matrix) gives exactly what the three kernels give, over the bootstrap and the jackknife."""
    rng = np.random.default_rng(3)
    codes = rng.integers(0, 3, (60, 5))
    if kind == "constant rater":
        codes[:, 1] = 2
    elif kind == "near-constant":
        codes[:] = 1
        codes[4, 2] = 0
    codes[rng.random(codes.shape) < 0.1] = -1  # missing ratings
    table = stats.count_table(codes, 3)
    for freq in (None, stats.bootstrap_freq(stats.bootstrap_indices(60, 200, seed=1), 60), stats.jackknife_freq(60)):
        shared = stats.agreement_counts(table, freq)
        for name, kernel in (("percent_agreement", stats.percent_agreement_counts),
                             ("fleiss_kappa", stats.fleiss_kappa_counts), ("gwet_ac1", stats.gwet_ac1_counts)):
            np.testing.assert_array_equal(shared[name], kernel(table, freq))
