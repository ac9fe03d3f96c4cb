"""The project model moved to the projects app (same table): Django's state follows, the database is untouched."""

import django.db.models.deletion
from django.db import migrations, models


class Migration(migrations.Migration):

    dependencies = [
        ("delphi", "0003_projects_required"),
        ("projects", "0001_initial"),
    ]

    operations = [
        migrations.SeparateDatabaseAndState(
            database_operations=[],
            state_operations=[
                migrations.AlterField(
                    model_name="delphistudy",
                    name="project",
                    field=models.ForeignKey(on_delete=django.db.models.deletion.PROTECT, related_name="+",
                                            to="projects.project"),
                ),
            ],
        ),
    ]
