"""The judge report's verdict settings, in a module of their own: the commands and pages that look a stored report
up by its settings need them without loading the statistics stack (:mod:`scoring.judges.report`, pandas)."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class VerdictSettings:
    """What a coordinator can set per report; printed with it."""

    floor: float = 0.40  # physicians' own agreement below this: item unreliable (0.40 starts "moderate")
    min_dialogues: int = 30  # fewer dialogues with judge and physician labels: not enough data
    margin: float = 0.10  # non-inferiority margin on the agreement difference
    ci_method: str = "percentile"  # or "bca"
    paper_accuracy: float = 0.80  # the paper's rule, shown for comparison

    def __post_init__(self):
        if not -1.0 <= self.floor <= 1.0:
            raise ValueError("The reliability floor must be between -1 and 1.")
        if self.min_dialogues < 2:
            raise ValueError("The minimum number of dialogues must be at least 2.")
        if not 0.0 <= self.margin <= 1.0:
            raise ValueError("The non-inferiority margin must be between 0 and 1.")
        if self.ci_method not in ("percentile", "bca"):
            raise ValueError("The interval method must be 'percentile' or 'bca'.")

    def as_dict(self) -> dict:
        return {"floor": self.floor, "min_dialogues": self.min_dialogues, "margin": self.margin,
                "ci_method": self.ci_method, "paper_accuracy": self.paper_accuracy}
