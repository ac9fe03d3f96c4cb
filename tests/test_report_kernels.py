"""The campaign report's faster paths against what they replace and against the reference
libraries: every item's bootstrap agreement from one matrix product (``stats.agreement_many``) equals the per-item
kernels and, on the full data, statsmodels' Fleiss kappa and the krippendorff package; the numeric fast paths of label
encoding, zero-variance raters and numeric frames equal the general paths. Random raters, a constant rater, a
near-constant item and missing cells."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from core import stats
from core.stats import _common, agreement, kernels
from tests.lazy import lazy

krippendorff = lazy("krippendorff")

TOL = 1e-12
KINDS = ["random", "constant rater", "near-constant item", "missing cells"]
VALUES = [1.0, 2.0, 3.0]


def ratings(kind: str, seed: int = 5, n: int = 80, k: int = 6) -> np.ndarray:
    """Subjects x raters codes 0..2 (-1: not rated)."""
    rng = np.random.default_rng(seed)
    codes = rng.integers(0, 3, (n, k))
    if kind == "constant rater":
        codes[:, 2] = 1
    elif kind == "near-constant item":
        codes[:] = 2
        codes[11, 3] = 1
    elif kind == "missing cells":
        codes[rng.random(codes.shape) < 0.3] = -1
        codes[0, :] = -1  # a subject nobody rated
        codes[1, 1:] = -1  # a subject rated once
    return codes


def tables(kind: str) -> list[np.ndarray]:
    return [stats.count_table(ratings(kind, seed), 3) for seed in (5, 6, 7)]


def resamplings(n: int) -> list:
    return [stats.bootstrap_freq(stats.bootstrap_indices(n, 300, seed=2), n), stats.jackknife_freq(n)]


def close(a, b) -> None:
    np.testing.assert_allclose(np.asarray(a, dtype=float), np.asarray(b, dtype=float), rtol=TOL, atol=TOL,
                               equal_nan=True)


@pytest.mark.parametrize("kind", KINDS)
def test_all_items_in_one_product_equal_the_per_item_kernels(kind):
    many = tables(kind)
    levels = ["nominal", "ordinal", "interval"]
    for freq in resamplings(80):
        got = stats.agreement_many(many, [VALUES] * 3, levels, freq)
        for table, level, result in zip(many, levels, got, strict=True):
            one = stats.agreement_counts(table, freq)
            for name in ("percent_agreement", "fleiss_kappa", "gwet_ac1"):
                close(result[name], one[name])
            close(result["krippendorff_alpha"], stats.krippendorff_alpha_counts(table, VALUES, level, freq))


@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("level", ["nominal", "ordinal", "interval"])
def test_all_items_on_the_full_data_equal_the_reference_libraries(kind, level):
    """A resample that draws every subject once is the data itself: statsmodels' Fleiss kappa (equal numbers of
    ratings) or Gwet's generalisation, the detail functions, and the krippendorff package."""
    codes = ratings(kind)
    table = stats.count_table(codes, 3)
    (got,) = stats.agreement_many([table], [VALUES], [level], np.ones((1, len(codes))))
    wide = pd.DataFrame(np.where(codes >= 0, codes + 1.0, np.nan))
    for name, detail in (("percent_agreement", stats.percent_agreement_detail(wide)),
                         ("fleiss_kappa", stats.fleiss_kappa_detail(wide, categories=VALUES)),
                         ("gwet_ac1", stats.gwet_ac1_detail(wide, categories=VALUES))):
        want = detail["value"] if detail["value"] is not None else np.nan
        close(got[name][0], want)
    reliability = np.where(codes >= 0, codes + 1.0, np.nan).T  # raters x units, as the package takes them
    want = krippendorff.alpha(reliability_data=reliability, level_of_measurement=level, value_domain=VALUES)
    np.testing.assert_allclose(got["krippendorff_alpha"][0], want, rtol=1e-9, atol=1e-9, equal_nan=True)


def test_all_items_need_a_known_level():
    with pytest.raises(ValueError, match="level"):
        stats.agreement_many(tables("random"), [VALUES] * 3, ["nominal", "ratio", "nominal"], np.ones((1, 80)))
    assert stats.agreement_many([], [], [], np.ones((1, 80))) == []


def encode_general(data, categories=None):
    """encode_labels through its general path (object labels), as before the numeric fast path."""
    return kernels.encode_labels(np.asarray(data, dtype=object), categories)


@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("categories", [None, [1, 2, 3], [3.0, 1.0, 2.0], [1, 2, 3, 4]])
def test_numeric_label_encoding_equals_the_general_path(kind, categories):
    codes = ratings(kind)
    values = np.where(codes >= 0, codes + 1.0, np.nan)
    fast = kernels.encode_labels(values, categories)
    general = encode_general(values, categories)
    np.testing.assert_array_equal(fast[0], general[0])
    assert fast[1] == general[1]
    assert kernels._encode_numeric(values, categories) is not None  # the fast path was taken
    ints = np.where(codes >= 0, codes + 1, 1)
    np.testing.assert_array_equal(kernels.encode_labels(ints, categories)[0], encode_general(ints, categories)[0])


@pytest.mark.filterwarnings("ignore:Constructing a Categorical")
def test_numeric_label_encoding_refuses_what_the_general_path_refuses():
    values = np.array([[1.0, 2.5], [np.nan, 3.0]])
    with pytest.raises(ValueError, match=r"labels not in categories: 2\.5"):
        kernels.encode_labels(values, [1, 2, 3])
    with pytest.raises(ValueError, match=r"labels not in categories: 2\.5"):
        encode_general(values, [1, 2, 3])
    with pytest.raises(ValueError, match="unique"):
        kernels.encode_labels(values, [1, 2, 2])
    # categories that are not plain numbers, or equal numbers written twice, take the general path
    assert kernels._encode_numeric(values, ["1", "2"]) is None
    assert kernels._encode_numeric(values, [True, False]) is None
    assert kernels._encode_numeric(np.array([["a"]]), None) is None


@pytest.mark.parametrize("kind", KINDS)
def test_zero_variance_raters_equal_the_column_loop(kind):
    codes = ratings(kind)
    frame = pd.DataFrame(np.where(codes >= 0, codes + 1.0, np.nan), columns=[f"rater {i}" for i in range(6)])
    frame["rater 5"] = np.nan  # nobody: not flat
    frame.iloc[:, 4] = np.where(np.arange(len(frame)) == 3, 2.0, np.nan)  # one rating: not flat
    general = agreement._zero_variance_raters(frame.astype(object))  # the loop over columns
    assert agreement._zero_variance_raters(frame) == general
    if kind == "constant rater":
        assert general == ["rater 2"]


def test_numeric_frames_equal_the_parsing_path():
    frame = pd.DataFrame({1: [1, 0, 1], "b": [0.5, np.nan, 2.0]})
    fast = _common._numeric_frame(frame)
    slow = _common._numeric_frame(frame.astype(object))
    pd.testing.assert_frame_equal(fast, slow)
    assert list(fast.columns) == ["1", "b"]
    with pytest.raises(ValueError, match="numbers only"):
        _common._numeric_frame(pd.DataFrame({"a": ["x", 1]}))



@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("q", [2, 3])
def test_two_raters_ac1_from_their_tables_equals_the_count_table_kernel(kind, q):
    """The rater matrix's AC1 per pair and item from the pair's q x q tables: exactly what gwet_ac1_counts gives on
    the subjects x categories count table of the subjects both rated, for a stack of items at once."""
    codes = np.stack([ratings(kind, seed) % q for seed in (5, 6, 7, 8)])  # (items, subjects, raters)
    codes = np.where(np.stack([ratings(kind, seed) for seed in (5, 6, 7, 8)]) >= 0, codes, -1)
    for a, b in ((0, 1), (1, 2), (2, 3), (0, 5)):
        both = (codes[..., a] >= 0) & (codes[..., b] >= 0)
        x, y = np.where(both, codes[..., a], -1), np.where(both, codes[..., b], -1)
        tables = stats.pair_tables(x, y, q)
        assert tables.shape == (4, q, q) and tables.sum() == both.sum()
        want = stats.gwet_ac1_counts(stats.count_table(np.stack([x, y], axis=-1), q))
        np.testing.assert_array_equal(stats.gwet_ac1_pair_tables(tables), want)
    nobody = np.full((2, 10), -1)
    assert np.isnan(stats.gwet_ac1_pair_tables(stats.pair_tables(nobody, nobody, 2))).all()


@pytest.mark.parametrize("design", ["crossed", "not crossed", "incomplete", "duplicate", "tie"])
def test_rater_sets_equal_grouping_by_dialogue(design):
    """The ICC's design read with numpy equals pandas' group-by into sorted tuples of raters."""
    from scoring.reports.agreement import rater_sets

    rng = np.random.default_rng(4)
    rows = [(d, r) for d in range(30) for r in (3, 1, 2)]
    if design == "not crossed":
        rows = [(d, r + (d % 4)) for d, r in rows]
    elif design == "incomplete":
        rows = [(d, r) for d, r in rows if not (d % 7 == 0 and r == 2)]
    elif design == "duplicate":
        rows += [(5, 1)]
    elif design == "tie":  # as many dialogues with two raters as with three: the smaller k, as pandas' mode
        rows = [(d, r) for d, r in rows if not (d < 15 and r == 3)]
    frame = pd.DataFrame(rows, columns=["dialogue", "rater"]).sample(frac=1.0, random_state=int(rng.integers(99)))
    per_dialogue = frame.groupby("dialogue")["rater"].apply(lambda r: tuple(sorted(r)))
    k = int(per_dialogue.map(len).mode().iloc[0])
    complete = per_dialogue[per_dialogue.map(len) == k]
    n, ids, got_k, crossed = rater_sets(frame["dialogue"].to_numpy(), frame["rater"].to_numpy())
    assert (n, got_k, crossed) == (len(per_dialogue), k, complete.nunique() == 1)
    assert ids.tolist() == complete.index.tolist()
    assert crossed == (design in ("crossed", "incomplete", "duplicate", "tie"))
