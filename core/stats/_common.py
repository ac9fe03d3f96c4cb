"""Shared helpers of the statistics package: conversions to plain values and input checks."""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import numpy as np
import pandas as pd

SINGULAR_COND = 1e12
#: Denominators at or below this are treated as zero (0/0 -> undefined).
_EPS = 1e-12


# --------------------------------------------------------------------------------------
# small helpers
# --------------------------------------------------------------------------------------
def _num(x: Any) -> float | None:
    """Python float, or None when x is None / NaN / +-inf (JSON has no NaN)."""
    if x is None:
        return None
    try:
        v = float(x)
    except (TypeError, ValueError):
        return None
    return v if math.isfinite(v) else None


def _nan(x: Any) -> float:
    """Python float, NaN for None / non-finite."""
    v = _num(x)
    return float("nan") if v is None else v


def _py(x: Any) -> Any:
    """Convert numpy / pandas scalars (and containers) to plain Python objects."""
    if isinstance(x, dict):
        return {k if isinstance(k, str) else str(_py(k)): _py(v) for k, v in x.items()}
    if isinstance(x, list | tuple):
        return [_py(v) for v in x]
    if isinstance(x, np.ndarray):
        return [_py(v) for v in x.tolist()]
    if isinstance(x, np.bool_):
        return bool(x)
    if isinstance(x, np.integer):
        return int(x)
    if isinstance(x, np.floating | float):
        return _num(x)
    if isinstance(x, np.generic):
        return x.item()
    return x


def _label(x: Any) -> Any:
    """A category label as a JSON-friendly Python value."""
    if isinstance(x, np.generic):
        x = x.item()
    if isinstance(x, float) and x.is_integer():
        return int(x)
    return x


def _frame(data: Any, name: str = "data") -> pd.DataFrame:
    if isinstance(data, pd.DataFrame):
        return data
    if isinstance(data, pd.Series):
        return data.to_frame()
    arr = np.asarray(data, dtype=object) if not isinstance(data, np.ndarray) else data
    if arr.ndim == 1 and arr.size == 0:
        return pd.DataFrame()
    if arr.ndim != 2:
        raise ValueError(f"{name} must be two-dimensional, got shape {arr.shape}")
    return pd.DataFrame(arr)


def _numeric_frame(df: Any, name: str = "data") -> pd.DataFrame:
    df = _frame(df, name)
    if df.shape[1] and all(dtype.kind in "iuf" for dtype in df.dtypes):  # numbers already: no per-column parse
        out = df.astype(float)
        out.columns = [str(c) for c in out.columns]
        return out
    try:
        out = df.apply(pd.to_numeric, errors="raise").astype(float)
    except (ValueError, TypeError) as exc:
        raise ValueError(f"{name} must contain numbers only: {exc}") from exc
    out.columns = [str(c) for c in out.columns]
    return out


def _zero_variance(df: pd.DataFrame) -> list[str]:
    var = df.var(ddof=1, skipna=True)
    return [str(c) for c, v in var.items() if not (np.isfinite(v) and v > 0)]


def _fmt_names(names: Sequence[str], limit: int = 10) -> str:
    names = [str(n) for n in names]
    shown = ", ".join(repr(n) for n in names[:limit])
    return shown + (f" (+{len(names) - limit} more)" if len(names) > limit else "")


class LeaveOneOut:
    """The ``(n, n)`` jackknife multiplicity matrix (all ones but the diagonal), without building it.

    The vectorised kernels take bootstrap multiplicities ``freq`` and form ``freq @ x``; with this object in
    place of ``freq`` they give the n leave-one-out (jackknife) values that BCa intervals need, at the cost of one
    sum: row i of ``freq @ x`` is ``x.sum(0) - x[i]``.
    """

    def __init__(self, n: int):
        self.n = int(n)
        self.shape = (self.n, self.n)


def weighted_sums(freq: Any, x: np.ndarray) -> np.ndarray:
    """``freq @ x`` for a ``(B, n)`` multiplicity matrix or a :class:`LeaveOneOut`."""
    x = np.asarray(x, dtype=float)
    if isinstance(freq, LeaveOneOut):
        return x.sum(axis=0)[None, ...] - x
    return np.asarray(freq, dtype=float) @ x
