"""What the migrations written before the projects app still name. Nothing else may import this module."""

from __future__ import annotations


def default_project_id() -> int:
    """The field default of the 2026-11 migrations that made ``project`` required: the "Default" project those
    migrations moved existing data into (they create it first). Read with SQL because the model has moved on since."""
    from django.db import connection

    if "annotation_project" not in connection.introspection.table_names():
        # A database the history never ran on, asked for these migrations' SQL (``sqlmigrate``): the project
        # 0008 creates first in the table it creates.
        return 1
    with connection.cursor() as cursor:
        cursor.execute("SELECT id FROM annotation_project WHERE name = %s", ["Default"])
        row = cursor.fetchone()
    if row is None:
        raise RuntimeError('the "Default" project of migration annotation 0008 is missing')
    return row[0]
