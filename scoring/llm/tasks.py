"""Worker start-up of the LLM engine."""

from celery.signals import worker_init


@worker_init.connect
def _warm_up(sender=None, **kwargs) -> None:
    """Import the openai client (about half a second) before the worker consumes, so the first tasks of a run call
    the endpoint at once instead of every worker thread importing it then. The task modules themselves are imported
    by Celery's autodiscovery before the worker consumes."""
    import openai  # noqa: F401
