"""Migration operations of our own, for the migrations of every app (the ground floor, so any app's may import it)."""

from __future__ import annotations

from django.db.migrations.operations import AlterModelOptions
from django.db.migrations.operations.base import Operation


class AlterNames(Operation):
    """Models and fields changed only in what no database stores (verbose names, choices, help texts, the options
    ``AlterModelOptions`` changes): Django's state alone, in one operation. As one ``AlterField`` per field, each
    rendered its model and the models related to it again, and each operation copied the rendered state: the
    migrations that named ~460 fields for the admin made a fresh ``migrate`` on SQLite take 21 s instead of 3 s.

    ``models``: ``(model name, its options or None, [(field name, field), ...])`` per model."""

    reduces_to_sql = True  # to no SQL: sqlmigrate lists it without saying it cannot be written as SQL
    reversible = True

    def __init__(self, models: list):
        self.models = models

    def deconstruct(self):
        return self.__class__.__name__, [], {"models": self.models}

    def state_forwards(self, app_label, state):
        keys = []
        for model_name, options, fields in self.models:
            key = app_label, model_name.lower()
            keys.append(key)
            model_state = state.models[key]
            if options is not None:  # as ProjectState.alter_model_options, rendered below with the rest
                kept = {k: v for k, v in model_state.options.items()
                        if k not in AlterModelOptions.ALTER_OPTION_KEYS or k in options}
                model_state.options = {**kept, **options}
            held = model_state.fields
            for name, field in fields:
                old = held[name]  # replaced in place: the fields keep their order, as AlterField keeps it
                if state._relations is not None and old.is_relation:
                    state.resolve_model_field_relations(key, name, old)
                held[name] = field
                if state._relations is not None and field.is_relation:
                    state.resolve_model_field_relations(key, name, field)
        state.reload_models(keys, delay=True)  # once for all the models and those related to them

    def database_forwards(self, app_label, schema_editor, from_state, to_state):
        """Nothing: no database stores the changed attributes."""

    def database_backwards(self, app_label, schema_editor, from_state, to_state):
        """Nothing, as forwards."""

    def describe(self) -> str:
        return f"Alter the names, choices or help texts of {len(self.models)} models and their fields"

    @property
    def migration_name_fragment(self) -> str:
        return "names"
