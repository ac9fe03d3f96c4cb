"""Reports for analysts: the campaign agreement report (computed by a background job and cached), the trial
report, plots and label exports (CSV, XLSX, JSON, SPSS)."""
