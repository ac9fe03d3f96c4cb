"""What the squashed migrations of November 2026 share (so that a fresh database is built in seconds).

The four apps' history (36 migrations, with a model moved between apps on the way) is replaced by one migration per
app, ``projects`` -> ``annotation`` -> ``delphi`` -> ``scoring``, each creating its app's models as they are now.

**Every squashed migration replaces the whole history of all four apps** (:data:`REPLACED`), not only its own app's:
the history interleaves the apps (``annotation`` 0010 waits for ``scoring`` 0014 and ``delphi`` 0004, which wait for
``projects`` 0001, which waits for ``annotation`` 0009), so per-app squashes would inherit those cross-links and form
a cycle. With the whole history in each, Django decides for all four at once (``MigrationLoader.build_graph``):

* a fresh database (none of the history applied) runs the four squashed migrations;
* a database on which the whole history ran marks them applied and runs nothing;
* a database part-way (any earlier release) runs the rest of the history, as before; at the end ``migrate`` records
  the squashed migrations as applied too.

Django records a squashed migration by recording everything it replaces, so once ``projects``' squashed migration
has run on a fresh database the whole history reads as applied. A first ``migrate`` interrupted before the other
three would leave their tables missing with nothing left to run: :func:`missing_tables` finds that and the
``pre_migrate`` and ``post_migrate`` check in :mod:`projects.apps` says what to do (the database holds nothing yet:
create it again). ``make run`` builds a new embedded database under another name (``config.run.migrate_database``),
so there this cannot happen; and each squashed migration's tables and records are one transaction
(:meth:`CreateModels.database_forwards`), so no stop leaves part of the history recorded.

**A migration made after the squash depends on its app's squashed migration and on its app's last migration of the
history** (e.g. ``("annotation", "0012_squashed")`` and ``("annotation", "0011_pseudonyms_per_project")``). Where the
history is used, Django points a dependency on a squashed migration at the history's last node (``scoring`` 0018),
which is not in the app's own chain; the second dependency keeps one leaf per app.

:class:`CreateModels` creates one app's models in a single operation: the migration state is rendered once for all of
them rather than once per model (which made a fresh ``migrate`` take 15 s on SQLite), and the foreign keys between
the app's models need no second pass.
"""

from __future__ import annotations

from django.db.migrations.operations.base import Operation
from django.db.migrations.state import ModelState

# Every migration of the four apps up to the squash, in the order they ran on the released instances.
REPLACED: list[tuple[str, str]] = [
    ("annotation", "0001_initial"),
    ("annotation", "0002_mini_cex_v1"),
    ("annotation", "0003_campaigns_labels_privacy"),
    ("annotation", "0004_campaign_allow_names"),
    ("annotation", "0005_instruments"),
    ("annotation", "0006_campaign_random_sample"),
    ("annotation", "0007_score_grid_replicates_judge_keys"),
    ("annotation", "0008_projects"),
    ("annotation", "0009_projects_required"),
    ("annotation", "0010_project_moves_to_projects"),
    ("annotation", "0011_pseudonyms_per_project"),
    ("delphi", "0001_initial"),
    ("delphi", "0002_projects"),
    ("delphi", "0003_projects_required"),
    ("delphi", "0004_project_moves_to_projects"),
    ("projects", "0001_initial"),
    ("projects", "0002_names_pseudonyms_last_project"),
    ("scoring", "0001_initial"),
    ("scoring", "0002_job_message_report_kind"),
    ("scoring", "0003_judges"),
    ("scoring", "0004_preference_generation"),
    ("scoring", "0005_llm_endpoints"),
    ("scoring", "0006_engine"),
    ("scoring", "0007_endpoint_limits_shared"),
    ("scoring", "0008_job_state_and_spend"),
    ("scoring", "0009_imported_judge_runs_score_values"),
    ("scoring", "0010_admin_verbose_names"),
    ("scoring", "0011_judge_report_job"),
    ("scoring", "0012_projects"),
    ("scoring", "0013_projects_required"),
    ("scoring", "0014_project_moves_to_projects"),
    ("scoring", "0015_llm_cache_per_project"),
    ("scoring", "0016_juries"),
    ("scoring", "0017_study_export_jobs"),
    ("scoring", "0018_figures_jobs"),
]

# The squashed migrations, in the order they run on a fresh database.
SQUASHED: list[tuple[str, str]] = [
    ("projects", "0003_squashed"),
    ("annotation", "0012_squashed"),
    ("delphi", "0005_squashed"),
    ("scoring", "0019_squashed"),
]

DEFAULT_PROJECT = "Default"


class CreateModels(Operation):
    """Create several models of one app at once (see the module docstring).

    ``models`` are :class:`~django.db.migrations.operations.CreateModel` operations; each holds all of its
    fields, indexes and constraints, and may point at any other of them.
    """

    reversible = True

    def __init__(self, models: list) -> None:
        self.models = models

    def deconstruct(self):
        return self.__class__.__name__, [self.models], {}

    def state_forwards(self, app_label, state):
        keys = []
        for op in self.models:
            key = (app_label, op.name_lower)
            if key in state.models:
                # Only where the graph holds the history beside the squash (loaded without replacing, as
                # ``sqlmigrate`` does) can the history have made the model already: its own operations, before
                # and after this one, keep the state, which they leave as the squash makes it.
                continue
            state.models[key] = ModelState(app_label, op.name, list(op.fields), dict(op.options), tuple(op.bases),
                                           list(op.managers))
            keys.append(key)
        if state._relations is not None:
            for key in keys:
                state.resolve_model_relations(key)
        state.reload_models(keys, delay=True)

    def database_forwards(self, app_label, schema_editor, from_state, to_state):
        for op in self.models:
            model = to_state.apps.get_model(app_label, op.name)
            if self.allow_migrate_model(schema_editor.connection.alias, model):
                schema_editor.create_model(model)
        # The statements Django defers to the end of a migration (indexes; foreign keys on PostgreSQL) run now, as the
        # tables they need exist: with none left, Django records the migration, that is the whole history it
        # replaces, inside the migration's transaction. Left deferred, it records after the commit one row at a time,
        # and a first `migrate` stopped there kept part of the history recorded with the tables of the rest missing.
        for statement in schema_editor.deferred_sql:
            schema_editor.execute(statement)
        schema_editor.deferred_sql.clear()

    def database_backwards(self, app_label, schema_editor, from_state, to_state):
        for op in reversed(self.models):
            model = from_state.apps.get_model(app_label, op.name)
            if self.allow_migrate_model(schema_editor.connection.alias, model):
                schema_editor.delete_model(model)

    def references_model(self, name, app_label):
        return True  # nothing is optimised across this operation

    def describe(self):
        return f"Create models {', '.join(op.name for op in self.models)}"

    @property
    def migration_name_fragment(self):
        return "squashed"


def missing_tables(connection) -> list[str]:
    """Tables of the four apps' models that the database lacks (empty once ``migrate`` has finished)."""
    from django.apps import apps

    existing = set(connection.introspection.table_names())
    wanted = []
    for label in ("projects", "annotation", "delphi", "scoring"):
        for model in apps.get_app_config(label).get_models():
            if model._meta.managed and not model._meta.proxy:
                wanted.append(model._meta.db_table)
    return sorted(set(wanted) - existing)
