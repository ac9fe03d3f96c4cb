"""Reliability, agreement and accuracy statistics for the Mini-CEX Workbench.

Pure module: pandas / numpy in, plain JSON-serialisable values out (Python ``float``,
``int``, ``str``, ``None``, ``list`` and ``dict`` only -- never numpy scalars).  It must stay
importable without Django; nothing here touches the ORM or settings.

Conventions (DESIGN.md section 4 "Statistics conventions")
---------------------------------------------------------
* Statistics are delegated to established libraries wherever one exists:
  pingouin (Cronbach's alpha, ICC, Kendall's W via Friedman), krippendorff (Krippendorff's
  alpha), statsmodels (Cohen's and Fleiss' kappa), factor_analyzer (KMO, Bartlett) and scipy.
  Gwet's AC1 has no implementation in those libraries; it is implemented here from
  Gwet (2008), see :func:`gwet_ac1_counts`.
* A statistic that is undefined for the data (empty input, no variation, a single rater,
  n <= p, singular correlation matrix, ...) is reported as undefined with a human-readable
  reason -- ``None`` inside dicts, ``float('nan')`` from the float-returning functions --
  never as 0, 1 or a pseudo-inverse value.  Zero-variance items / raters are flagged by
  name in ``warnings``.  Every float-returning coefficient has a ``*_detail`` companion that
  returns ``{"value": float | None, "warnings": [...], ...}`` so reports can show the reason.
* Programming errors (unknown column, non-numeric ratings where numbers are required,
  mismatched lengths, unknown option) raise ``ValueError``; data-dependent undefinedness
  never raises.
* Bootstrap confidence intervals resample dialogues (rows) with a recorded seed; percentile
  (default), basic or BCa (:func:`bca_interval`, jackknife from :func:`jackknife_freq`).  For speed
  the agreement coefficients also exist as vectorised numpy kernels working on integer
  codes / count tables (:func:`cohen_kappa_codes`, :func:`gwet_ac1_counts`,
  :func:`fleiss_kappa_counts`, :func:`percent_agreement_counts`) which accept a leading
  batch axis or bootstrap multiplicities (``freq=``), so :func:`bootstrap_ci` can evaluate
  all resamples in one call (``vectorized=True`` or ``vectorized="freq"``).
"""

from __future__ import annotations

from core.stats._common import SINGULAR_COND, LeaveOneOut, weighted_sums  # noqa: F401
from core.stats.agreement import (  # noqa: F401
    ICC_FORMS,
    cohen_kappa,
    cohen_kappa_detail,
    fleiss_kappa,
    fleiss_kappa_detail,
    gwet_ac1,
    gwet_ac1_detail,
    icc,
    kendall_w,
    krippendorff_alpha,
    krippendorff_alpha_detail,
    percent_agreement,
    percent_agreement_detail,
)
from core.stats.bootstrap import (  # noqa: F401
    CI_METHOD_NAMES,
    CI_METHODS,
    NO_VARIATION,
    SMALL_SAMPLE,
    bca_interval,
    bootstrap_ci,
    bootstrap_freq,
    bootstrap_indices,
    bootstrap_summary,
    jackknife_freq,
    small_sample_warning,
)
from core.stats.classification import classification_report  # noqa: F401
from core.stats.interpretation import (  # noqa: F401
    band_at,
    band_bounds,
    bands_text,
    format_p,
    interpret,
    interpret_interval,
)
from core.stats.kernels import (  # noqa: F401
    agreement_counts,
    agreement_many,
    agreement_weights,
    cohen_kappa_codes,
    count_table,
    encode_labels,
    fleiss_kappa_counts,
    gwet_ac1_counts,
    gwet_ac1_pair_tables,
    gwet_ac2_counts,
    icc_kernel,
    icc_mean_squares,
    krippendorff_alpha_counts,
    ordered_labels,
    pair_tables,
    percent_agreement_counts,
    weighted_agreement_counts,
)
from core.stats.method_comparison import (  # noqa: F401
    LOA_Z,
    bland_altman,
    bland_altman_clustered,
    bland_altman_sums,
    cluster_sums,
    differences_from_others,
)
from core.stats.pairs import (  # noqa: F401
    ac2_from_tables,
    kappa_from_tables,
    mean_over_pairs,
    pairwise_tables,
    weighted_agreement_from_tables,
)
from core.stats.preference import (  # noqa: F401
    PREFERENCE_OUTCOMES,
    bradley_terry,
    bradley_terry_bootstrap,
    position_bias,
    vote_agreement,
    wilson_ci,
    win_tie_loss,
)
from core.stats.reliability import (  # noqa: F401
    CORRELATIONS,
    alpha_if_deleted,
    bartlett_from_correlations,
    bartlett_sphericity,
    bivariate_normal_cdf,
    correlation_matrix,
    cronbach_alpha,
    cronbach_alpha_clustered,
    kmo,
    kmo_from_correlations,
    ordinal_alpha,
    ordinal_alpha_clustered,
    standardized_alpha,
    tetrachoric_clustered,
    tetrachoric_counts,
    tetrachoric_detail,
    tetrachoric_matrix,
)
from core.stats.replicates import mixed_replicates, replicate_summary, replicate_table  # noqa: F401
