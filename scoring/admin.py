"""Django looks for ``scoring.admin``: each job's package registers its own admin pages."""

from scoring.generation import admin as generation_admin  # noqa: F401
from scoring.judges import admin as judges_admin  # noqa: F401
from scoring.llm import admin as llm_admin  # noqa: F401
from scoring.preference import admin as preference_admin  # noqa: F401
