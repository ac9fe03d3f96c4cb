"""Every sentence the statistics write into a figure's ``warnings``, as a message id with ``%(name)s`` placeholders.

The statistics write English (:func:`say`: the message id filled with its parameters, each already written as text),
kept as it is in the API, the downloads and the study archive. A page recognises a stored English warning by
:func:`match` and says it in its own language from the catalogues (``manage.py catalogues`` extracts these ids),
with the parameters (numbers, names, values) as written; reports stored before keep matching as long as the wording
here does not change.
"""

from __future__ import annotations

import functools
import re


def gettext_noop(message: str) -> str:
    """Marks ``message`` for the catalogues (the statistics import no Django)."""
    return message


#: Every message id below, in the order written.
WARNINGS: list[str] = []


def _w(msgid: str) -> str:
    WARNINGS.append(msgid)
    return msgid


def say(msgid: str, **params: object) -> str:
    """The English warning: ``msgid`` filled with ``params`` (``%%`` gives ``%``)."""
    return msgid % params


# ICC (agreement.icc_detail)
ICC_DUPLICATES = _w(gettext_noop("%(n)s duplicate target x rater row(s) were averaged."))
ICC_NO_RATINGS = _w(gettext_noop("ICC is undefined: no ratings."))
ICC_INCOMPLETE = _w(gettext_noop("%(n)s target(s) without a rating from every rater were removed (listwise deletion; "
                                 "ICC needs a complete design)."))
ICC_TWO_RATERS = _w(gettext_noop("ICC is undefined: at least two raters are required (got %(n)s)."))
ICC_TWO_TARGETS = _w(gettext_noop("ICC is undefined: at least two targets are required (got %(n)s)."))
ICC_NO_VARIATION = _w(gettext_noop("ICC is undefined: no variation (every rating is identical)."))
ICC_FLAT_RATERS = _w(gettext_noop("Zero-variance rater(s) %(names)s gave the same rating to every target."))
ICC_SAME_MEANS = _w(gettext_noop("All targets have the same mean rating (no between-target variance)."))
ICC_F_INFINITE = _w(gettext_noop("F is infinite (zero residual / within-target variance); F, p and some CIs are "
                                 "reported as undefined."))
ICC_NEGATIVE = _w(gettext_noop("Negative ICC estimate(s): between-target variance is smaller than error variance."))

# Krippendorff's alpha (agreement.krippendorff_alpha_detail, juries)
ALPHA_EMPTY = _w(gettext_noop("Krippendorff's alpha is undefined: empty input."))
ALPHA_ONE_RATER = _w(gettext_noop("Krippendorff's alpha is undefined: only one rater (coder)."))
ALPHA_ONE_JUROR = _w(gettext_noop("Krippendorff's alpha is undefined: only one juror."))
ALPHA_NOT_PAIRABLE = _w(gettext_noop("Krippendorff's alpha is undefined: no unit was rated by two or more raters (no "
                                     "pairable values)."))
ALPHA_NO_VARIATION = _w(gettext_noop("Krippendorff's alpha is undefined: no variation -- every pairable value is "
                                     "%(value)s, so expected disagreement is 0 (0/0)."))
ALPHA_FLAT_RATERS = _w(gettext_noop("Zero-variance rater(s) %(names)s gave the same value to every unit they "
                                    "rated."))
#: the reason is the krippendorff package's own (English) error message
ALPHA_FAILED = _w(gettext_noop("Krippendorff's alpha is undefined: %(reason)s"))
ALPHA_UNDEFINED = _w(gettext_noop("Krippendorff's alpha is undefined for these data (0/0)."))

# Cohen's kappa (agreement.cohen_kappa_detail, preference)
PAIRS_DROPPED = _w(gettext_noop("%(n)s pair(s) with a missing rating were dropped."))
COHEN_NO_PAIR = _w(gettext_noop("Cohen's kappa is undefined: no subject rated by both raters."))
COHEN_NO_VARIATION = _w(gettext_noop("Cohen's kappa is undefined: no variation -- both raters gave every subject the "
                                     "same rating (%(value)s), so chance agreement is 1 (0/0). Percent agreement and "
                                     "Gwet's AC1 remain defined."))
COHEN_FLAT_RATER = _w(gettext_noop("Rater %(rater)s gave the same rating (%(value)s) to every subject (zero "
                                   "variance); kappa is 0 by construction whatever the agreement -- see percent "
                                   "agreement / AC1."))
COHEN_UNDEFINED = _w(gettext_noop("Cohen's kappa is undefined for these data."))
COHEN_NO_VOTES = _w(gettext_noop("Cohen's kappa is undefined: no votes."))

# Fleiss' kappa, Gwet's AC1 and percent agreement (agreement: the multi-rater coefficients)
SUBJECTS_UNRATED = _w(gettext_noop("%(n)s subject(s) with no ratings were ignored."))
SINGLE_RATINGS = _w(gettext_noop("%(n)s subject(s) with a single rating do not contribute to observed agreement."))
#: the multi-rater coefficients' three reasons, by the coefficient's name
MULTI_EMPTY = {
    "Fleiss' kappa": _w(gettext_noop("Fleiss' kappa is undefined: empty input.")),
    "Gwet's AC1": _w(gettext_noop("Gwet's AC1 is undefined: empty input.")),
    "Percent agreement": _w(gettext_noop("Percent agreement is undefined: empty input.")),
}
MULTI_ONE_RATER = {
    "Fleiss' kappa": _w(gettext_noop("Fleiss' kappa is undefined: only one rater.")),
    "Gwet's AC1": _w(gettext_noop("Gwet's AC1 is undefined: only one rater.")),
    "Percent agreement": _w(gettext_noop("Percent agreement is undefined: only one rater.")),
}
MULTI_NOT_PAIRABLE = {
    "Fleiss' kappa": _w(gettext_noop("Fleiss' kappa is undefined: no subject has two or more ratings.")),
    "Gwet's AC1": _w(gettext_noop("Gwet's AC1 is undefined: no subject has two or more ratings.")),
    "Percent agreement": _w(gettext_noop("Percent agreement is undefined: no subject has two or more ratings.")),
}
FLEISS_NO_VARIATION = _w(gettext_noop("Fleiss' kappa is undefined: no variation -- every rating is %(value)s, so "
                                      "chance agreement is 1 (0/0). Percent agreement and Gwet's AC1 remain "
                                      "defined."))
SUBJECT_FLAT_RATERS = _w(gettext_noop("Zero-variance rater(s) %(names)s gave the same rating to every subject."))
FLEISS_UNEQUAL = _w(gettext_noop("Unequal numbers of ratings per subject: Fleiss' kappa computed with Gwet's (2014) "
                                 "generalisation for missing ratings."))
AC1_IDENTICAL = _w(gettext_noop("All ratings are identical: chance agreement pe = 0 for any category set with q >= 2, "
                                "so AC1 = 1.0 (Gwet 2008); kappa-type coefficients are undefined here."))

# Kendall's W (agreement.kendall_w_detail)
W_RATER_LEFT_OUT = _w(gettext_noop("Rater %(rater)s left out of Kendall's W: no rating for %(names)s (W needs every "
                                   "rater to rank every object)."))
W_TWO_RATERS = _w(gettext_noop("Kendall's W is undefined: at least two raters are required (got %(n)s)."))
W_TWO_OBJECTS = _w(gettext_noop("Kendall's W is undefined: at least two objects are required (got %(n)s)."))
W_NO_VARIATION = _w(gettext_noop("Kendall's W is undefined: no variation -- every rater tied all objects (0/0)."))
W_FLAT_RATERS = _w(gettext_noop("Zero-variance rater(s) %(names)s tied all objects."))
W_TIES = _w(gettext_noop("Ties within raters: Kendall's W is given tie-corrected, and also without the correction."))
W_UNDEFINED = _w(gettext_noop("Kendall's W is undefined for these data."))

# The bootstrap (bootstrap)
SMALL_SAMPLE_BCA = _w(gettext_noop("Only %(n)s %(units)s are resampled (fewer than about %(limit)s): bootstrap "
                                   "intervals are rough and BCa intervals are used, which correct part of this, but "
                                   "read them as approximate."))
SMALL_SAMPLE_PERCENTILE = _w(gettext_noop("Only %(n)s %(units)s are resampled (fewer than about %(limit)s): bootstrap "
                                          "intervals are rough and the percentile intervals shown tend to be too "
                                          "narrow; prefer BCa intervals."))
RESAMPLES_DROPPED = _w(gettext_noop("%(n)s of %(total)s bootstrap resample(s) gave an undefined statistic and were "
                                    "dropped."))
ESTIMATE_UNDEFINED = _w(gettext_noop("Estimate is undefined on the full sample; no confidence interval."))
TOO_FEW_RESAMPLES = _w(gettext_noop("Too few valid bootstrap resamples for a confidence interval."))
MANY_RESAMPLES_UNDEFINED = _w(gettext_noop("More than 10%% of resamples were undefined; the interval may be biased."))
RESAMPLES_ALL_SAME = _w(gettext_noop("All %(n)s bootstrap resamples give %(value)s: the 95%% interval is not estimable "
                                     "(no variation)."))
BCA_LIMITS_COINCIDE = _w(gettext_noop("The BCa limits coincide at %(value)s: the interval is not estimable (no "
                                      "variation)."))
BCA_LIMITS_UNDEFINED = _w(gettext_noop("BCa limits are undefined (every resample falls on one side of the estimate); "
                                       "percentile interval shown."))
BCA_ACCELERATION_UNDEFINED = _w(gettext_noop("BCa acceleration is undefined (the statistic is undefined when some "
                                             "dialogue is left out); percentile interval shown."))
MIDDLE_RESAMPLES_SAME = _w(gettext_noop("The middle %(share)s of the bootstrap resamples all give %(value)s: the "
                                        "interval is not estimable (no variation)."))
NOTHING_TO_RESAMPLE = _w(gettext_noop("Empty input: nothing to resample."))

# Classification against a reference (classification)
LABEL_PAIRS_DROPPED = _w(gettext_noop("%(n)s pair(s) with a missing label were dropped."))
ACCURACY_UNDEFINED = _w(gettext_noop("Accuracy is undefined: no labelled pairs."))
PRECISION_UNDEFINED = _w(gettext_noop("Precision is undefined: the judge never predicted the positive class (TP + FP "
                                      "= 0)."))
RECALL_UNDEFINED = _w(gettext_noop("Recall is undefined: no positive case in the reference (TP + FN = 0)."))
F1_UNDEFINED = _w(gettext_noop("F1 is undefined: no positive label in either judge or reference."))

# Bland-Altman (method_comparison)
BLAND_ALTMAN_NO_PAIR = _w(gettext_noop("Bland-Altman is undefined: no pair with both values."))
BLAND_ALTMAN_ONE_PAIR = _w(gettext_noop("Bland-Altman limits are undefined: one pair only (no SD)."))
BLAND_ALTMAN_SAME = _w(gettext_noop("Every difference is the same: the limits of agreement coincide with the bias."))

# Shares and Bradley-Terry (preference)
NO_OBSERVATIONS = _w(gettext_noop("Undefined: no observations."))
BT_FEW_SOURCES = _w(gettext_noop("Bradley-Terry is undefined: fewer than two sources."))
BT_NO_COMPARISONS = _w(gettext_noop("Bradley-Terry is undefined: no comparisons."))
BT_NEVER_WINS = _w(gettext_noop("Bradley-Terry is undefined: some source (or group of sources) never beats or ties "
                                "the others, so its strength is 0 or infinite (Hunter 2004, assumption 1)."))
BT_NOT_CONVERGED = _w(gettext_noop("The MM algorithm did not converge in %(n)s iterations."))
BT_FEW_ITEMS = _w(gettext_noop("Too few items for a bootstrap interval."))

# Scale reliability and factorability (reliability)
SUBJECTS_NO_ITEM_SCORES = _w(gettext_noop("%(n)s subject(s) with no item scores were ignored."))
SUBJECTS_INCOMPLETE = _w(gettext_noop("%(n)s subject(s) with missing item scores removed (listwise deletion)."))
CRONBACH_TWO_ITEMS = _w(gettext_noop("Cronbach's alpha is undefined: at least two items are required (got %(n)s)."))
CRONBACH_TWO_SUBJECTS = _w(gettext_noop("Cronbach's alpha is undefined: at least two subjects are required (got "
                                        "%(n)s)."))
ZERO_VARIANCE_ITEMS = _w(gettext_noop("Zero-variance item(s): %(names)s (no variation across subjects; they add "
                                      "nothing to the total-score variance)."))
CRONBACH_NO_VARIANCE = _w(gettext_noop("Cronbach's alpha is undefined: the total-score variance is zero or cannot be "
                                       "estimated (no variation / too few overlapping scores)."))
CRONBACH_UNDEFINED = _w(gettext_noop("Cronbach's alpha is undefined for these data."))
CRONBACH_NEGATIVE = _w(gettext_noop("Negative alpha: items are negatively correlated on average (check reverse-keyed "
                                    "items)."))
ORDINAL_TOO_SMALL = _w(gettext_noop("Ordinal alpha is undefined: at least two items and two subjects are required."))
ORDINAL_CORRELATION = _w(gettext_noop("Ordinal alpha is undefined: some tetrachoric correlation is undefined."))
TETRACHORIC_NO_VARIATION = _w(gettext_noop("Tetrachoric correlation is undefined: a variable does not vary."))
TETRACHORIC_EMPTY_CELL = _w(gettext_noop("Empty cell in the 2x2 table: %(correction)s added to it (continuity "
                                         "correction, as psych)."))
TETRACHORIC_EMPTY_CELLS = _w(gettext_noop("%(n)s item pair(s) have an empty cell in their 2x2 table: %(correction)s "
                                          "added to it (continuity correction, as psych::tetrachoric)."))
ROWS_INCOMPLETE = _w(gettext_noop("%(n)s row(s) with missing values removed (listwise deletion)."))
TWO_VARIABLES = _w(gettext_noop("Undefined: at least two variables are required (got %(n)s)."))
N_NOT_ABOVE_P = _w(gettext_noop("Undefined: n <= p (%(n)s complete observation(s) for %(p)s variables); the "
                                "correlation matrix is necessarily singular."))
ZERO_VARIANCE_VARIABLES = _w(gettext_noop("Undefined: zero-variance variable(s) %(names)s have no correlation with "
                                          "anything."))
CORRELATION_UNDEFINED = _w(gettext_noop("Undefined: some correlation is undefined."))
SINGULAR = _w(gettext_noop("Undefined: the correlation matrix is singular (rank %(rank)s of %(p)s, condition number "
                           "%(condition)s); some variables are linear combinations of others. No pseudo-inverse value "
                           "is reported."))
NOT_POSITIVE_DEFINITE = _w(gettext_noop("Undefined: the tetrachoric correlation matrix is not positive definite "
                                        "(pairwise estimates need not be mutually consistent); no smoothed value is "
                                        "reported."))
BARTLETT_TOO_SMALL = _w(gettext_noop("Undefined: n = %(n)s is too small for Bartlett's test with %(p)s variables (n - "
                                     "1 - (2p + 5)/6 <= 0)."))
BARTLETT_DETERMINANT = _w(gettext_noop("Undefined: determinant of the correlation matrix is not positive."))

# Repeated answers (replicates)
NO_SCORES = _w(gettext_noop("No scores."))
REPLICATES_TOO_FEW = _w(gettext_noop("The SD over replicates needs at least two replicates; these scores have "
                                     "%(n)s."))
REPLICATES_UNNUMBERED = _w(gettext_noop("The SD over replicates needs at least two replicates; these texts carry no "
                                        "replicate number."))
REPLICATES_SAME_MEAN = _w(gettext_noop("Every replicate has the same mean score (%(value)s): the 95%% interval over "
                                       "replicates is not estimable (no variation)."))
REPLICATES_UNEQUAL = _w(gettext_noop("Replicates answered different numbers of cases (%(low)s to %(high)s): "
                                     "replicate means cover different cases."))

# Prediction-powered inference (ppi)
MEAN_NO_LABELS = _w(gettext_noop("No labelled dialogue: the mean is undefined."))
MEAN_ONE_DIALOGUE = _w(gettext_noop("An interval needs at least two dialogues."))
MEAN_NO_VARIATION = _w(gettext_noop("Every dialogue has the same score: the interval has zero width, which overstates "
                                    "how certain the mean is."))
MEAN_FEW_DIALOGUES = _w(gettext_noop("Only %(n)s dialogues: a normal interval on fewer than %(limit)s is rough."))
PPI_NO_LABELS = _w(gettext_noop("No physician-labelled dialogue: PPI needs some to measure the judge's error."))
PPI_ALL_LABELLED = _w(gettext_noop("Every dialogue the judge scored has physician labels: the judge adds nothing, and "
                                   "the estimate is the physicians' own."))
PPI_ONE_LABEL = _w(gettext_noop("PPI++ needs at least two physician-labelled dialogues to measure the judge's error; "
                                "the value shown is the single physician score."))
PPI_CONSTANT_JUDGE = _w(gettext_noop("The judge gave every dialogue the same score: it carries no information, lambda "
                                     "is 0 and the estimate is the physicians' own."))
PPI_CONSTANT_LABELS = _w(gettext_noop("Every physician-labelled dialogue has the same score: the interval has zero "
                                      "width (it overstates how certain the mean is) and the judge's worth is "
                                      "undefined."))
FEW_LABELLED = _w(gettext_noop("Only %(n)s physician-labelled dialogues: a normal interval on fewer than %(limit)s "
                               "is rough."))
PILOT_TOO_SMALL = _w(gettext_noop("The pilot needs at least two physician-labelled dialogues with judge scores."))
PILOT_NO_VARIATION = _w(gettext_noop("The pilot's physician scores do not vary: no sample size can be planned from "
                                     "it."))
PILOT_NO_CORRELATION = _w(gettext_noop("The judge's scores do not correlate positively with the physicians' in the "
                                       "pilot: it would not narrow the interval (lambda 0)."))
PILOT_ROUGH = _w(gettext_noop("The pilot has only %(n)s labelled dialogues: the plan is rough."))
PILOTS_TOO_SMALL = _w(gettext_noop("Each model's pilot needs at least two physician-labelled dialogues with judge "
                                   "scores."))

# Active sampling (active)
ACTIVE_NO_LABELS = _w(gettext_noop("No physician-labelled dialogue in the active sample: the estimate needs some to "
                                   "measure the judge's error."))
ACTIVE_ONE_LABEL = _w(gettext_noop("The active estimate needs at least two physician-labelled dialogues."))
ACTIVE_ALL_LABELLED = _w(gettext_noop("Every dialogue has physician labels: the judge adds nothing."))
ACTIVE_CONSTANT_JUDGE = _w(gettext_noop("The judge gave every dialogue the same score: it carries no information and "
                                        "the estimate is the physicians' own (weighted by the sampling "
                                        "probabilities)."))
ACTIVE_CONSTANT_LABELS = _w(gettext_noop("Every physician-labelled dialogue has the same score: the interval may have "
                                         "(nearly) zero width, which overstates how certain the mean is."))
ACTIVE_PILOT_TOO_SMALL = _w(gettext_noop("The pilot needs at least three labelled dialogues with judge scores and an "
                                         "uncertainty."))
ACTIVE_NO_GAIN = _w(gettext_noop("On the pilot the judge's errors do not grow with its uncertainty: the active rule "
                                 "would not save labels."))

#: Placeholders whose value is a list of names (``_fmt_names``: "'a', 'b' (+3 more)").
NAMES = "names"
#: The names list's tail when it is cut short: its English, as :func:`core.stats._common._fmt_names` writes it.
MORE = re.compile(r"^(?P<names>.*) \(\+(?P<n>\d+) more\)$", re.S)


@functools.cache
def _patterns() -> list[tuple[str, re.Pattern]]:
    """Each message id as a pattern of its English text (a placeholder matches any text); the ones with more fixed
    text first, so that a message whose placeholder ends it (``%(reason)s``) never hides a longer one."""
    out = []
    for msgid in WARNINGS:
        parts = re.split(r"%\((\w+)\)s", msgid.replace("%%", "%"))
        pattern = "".join(re.escape(part) if i % 2 == 0 else f"(?P<{part}>.+?)" for i, part in enumerate(parts))
        fixed = sum(len(part) for part in parts[::2])
        out.append((fixed, msgid, re.compile(f"^{pattern}$", re.S)))
    return [(msgid, pattern) for _, msgid, pattern in sorted(out, key=lambda entry: -entry[0])]


def match(text: str) -> tuple[str, dict[str, str]] | None:
    """The message id of an English warning the statistics wrote and its parameters as written, else None."""
    if not isinstance(text, str):
        return None
    for msgid, pattern in _patterns():
        found = pattern.match(text)
        if found:
            return msgid, found.groupdict()
    return None
