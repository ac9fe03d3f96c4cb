"""Scoring: everything computed from the labels and by LLMs, one package per job around pure statistics.

``stats`` pure statistics (no Django) · ``llm`` the engine for LLM work · ``judges`` LLM judges ·
``preference`` double-blind preference studies · ``generation`` doctor x patient dialogue generation ·
``reports`` agreement reports, trial report, plots and exports · ``jobs`` background jobs run by Celery workers.
"""
