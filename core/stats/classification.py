"""Judge against a reference: accuracy, precision, recall and F1."""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd

from core.stats import messages as M
from core.stats._common import _label


# --------------------------------------------------------------------------------------
# judge vs reference classification
# --------------------------------------------------------------------------------------
def classification_report(judge: Any, reference: Any, positive: Any = 1) -> dict:
    """Accuracy, precision, recall and F1 of ``judge`` against ``reference``.

    Labels equal to ``positive`` are the positive class, everything else negative; pairs
    with a missing label are dropped.  F1 = 2 TP / (2 TP + FP + FN).  Undefined ratios
    (zero denominators) are ``None`` with the reason.  ``support`` = reference positives.
    """
    j = np.asarray(judge.to_numpy() if isinstance(judge, pd.Series) else judge,
                   dtype=object).ravel()
    r = np.asarray(reference.to_numpy() if isinstance(reference, pd.Series) else reference,
                   dtype=object).ravel()
    if j.shape != r.shape:
        raise ValueError(f"judge and reference differ in length ({j.size} vs {r.size})")
    warns: list[str] = []
    keep = ~(pd.isna(j) | pd.isna(r))
    if (~keep).any():
        warns.append(M.say(M.LABEL_PAIRS_DROPPED, n=int((~keep).sum())))
    j, r = j[keep], r[keep]
    jp = np.array([x == positive for x in j], dtype=bool)
    rp = np.array([x == positive for x in r], dtype=bool)
    tp = int((jp & rp).sum())
    fp = int((jp & ~rp).sum())
    fn = int((~jp & rp).sum())
    tn = int((~jp & ~rp).sum())
    n = tp + fp + fn + tn

    def ratio(num: int, den: int, reason: str) -> float | None:
        if den == 0:
            warns.append(reason)
            return None
        return num / den

    out = {
        "accuracy": ratio(tp + tn, n, M.say(M.ACCURACY_UNDEFINED)),
        "precision": ratio(tp, tp + fp, M.say(M.PRECISION_UNDEFINED)),
        "recall": ratio(tp, tp + fn, M.say(M.RECALL_UNDEFINED)),
        "f1": ratio(2 * tp, 2 * tp + fp + fn, M.say(M.F1_UNDEFINED)),
        "positive_class": _label(positive),
        "n": n, "support": tp + fn, "tp": tp, "fp": fp, "fn": fn, "tn": tn,
        "warnings": warns,
    }
    return out
