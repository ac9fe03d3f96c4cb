"""Django looks for the models of the ``core`` app here: the background job (its table keeps its first name,
``scoring_job``)."""

from core.jobs.models import Job  # noqa: F401
