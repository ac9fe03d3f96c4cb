"""Project, Membership and AuditEvent now live in the projects app (same tables; projects 0001): the annotation
app's state lets go of them. The database is untouched."""

import django.db.models.deletion
from django.db import migrations, models


class Migration(migrations.Migration):

    dependencies = [
        ("annotation", "0009_projects_required"),
        ("projects", "0001_initial"),
        ("delphi", "0004_project_moves_to_projects"),
        ("scoring", "0014_project_moves_to_projects"),
    ]

    operations = [
        migrations.SeparateDatabaseAndState(
            database_operations=[],
            state_operations=[
                *[migrations.AlterField(
                    model_name=model, name="project",
                    field=models.ForeignKey(on_delete=django.db.models.deletion.PROTECT, related_name="+",
                                            to="projects.project"))
                  for model in ("scale", "scaleversion", "corpus", "campaign")],
                migrations.DeleteModel(name="AuditEvent"),
                migrations.DeleteModel(name="Membership"),
                migrations.DeleteModel(name="Project"),
            ],
        ),
    ]
