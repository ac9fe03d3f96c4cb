"""LLM judges: configurations, versioned prompt sets, per-item and per-dialogue modes, parsing, runs on the LLM
engine, judge labels in the exports, the judge-vs-physicians report, pages, forms and tasks."""
