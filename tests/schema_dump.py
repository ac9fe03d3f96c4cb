"""Print a database's schema, the rows its migrations wrote and the migrations it records as applied, as JSON, for
comparing two databases.

Run in the database's own settings (DATABASE_URL, or MINICEX_VAR_DIR in the embedded mode):
    python tests/schema_dump.py
Columns, indexes, unique and foreign-key constraints of every table through Django's introspection (so the same
on SQLite and PostgreSQL; column order and constraint names left out where Django generates them differently per
path), and the rows of the app tables a migration fills, without their timestamps.
"""

from __future__ import annotations

import json
import os
import re
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")
os.environ.setdefault("SECRET_KEY", "schema-dump")

APPS = ("projects", "annotation", "delphi", "scoring")


def dump() -> dict:
    import django

    django.setup()
    from django.db import connection

    introspection = connection.introspection
    schema, rows = {}, {}
    with connection.cursor() as cursor:
        for table in sorted(introspection.table_names(cursor)):
            if table == "django_migrations":
                continue
            description = introspection.get_table_description(cursor, table)
            columns = sorted([column.name, introspection.get_field_type(column.type_code, column), bool(column.null_ok)]
                             for column in description)
            constraints = []
            for name, info in introspection.get_constraints(cursor, table).items():
                entry = {key: info.get(key) for key in ("columns", "primary_key", "unique", "foreign_key", "check",
                                                         "index")}
                # Django names only what it generates from table and columns; a name given in the model counts.
                # (PostgreSQL names a UNIQUE made with the table <table>_<column>_key, one added later *_uniq)
                generated = (re.fullmatch(r"fk_\d+|sqlite_autoindex_.*|__.*|.*_fk_.*|.*_[0-9a-f]{8}_uniq", name)
                             or name == f"{table}_{'_'.join(info.get('columns') or ())}_key"
                             or info.get("primary_key"))
                entry["name"] = None if generated else name
                if info.get("check") and not info.get("columns"):
                    continue  # SQLite reports unnamed CHECKs of positive integers this way on one path only
                constraints.append(entry)
            schema[table] = {"columns": columns, "constraints": sorted(constraints, key=json.dumps)}
            if table.split("_")[0] in APPS:
                dates = {column.name for column in description
                         if introspection.get_field_type(column.type_code, column) in ("DateTimeField", "DateField")}
                names = [column.name for column in description]
                cursor.execute(f"SELECT * FROM {connection.ops.quote_name(table)}")
                found = [{name: value for name, value in zip(names, row, strict=True) if name not in dates}
                         for row in cursor.fetchall()]
                if found:
                    rows[table] = sorted(found, key=lambda row: json.dumps(row, sort_keys=True, default=str))
    from django.db.migrations.recorder import MigrationRecorder

    recorded = sorted(MigrationRecorder(connection).applied_migrations())
    return {"schema": schema, "rows": rows, "recorded": recorded}


if __name__ == "__main__":
    json.dump(dump(), sys.stdout, indent=1, sort_keys=True, default=str)
