"""Background jobs whose state and result live in the database (reports, the worker check): the Job model, the
runner with its registered handlers, the Celery task and the system page."""
