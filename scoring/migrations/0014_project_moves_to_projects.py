"""The project model moved to the projects app (same table): Django's state follows, the database is untouched.
Report jobs lose their field default (a job names its project)."""

import django.db.models.deletion
from django.db import migrations, models


def _project_fk(**extra):
    return models.ForeignKey(on_delete=django.db.models.deletion.PROTECT, related_name="+", to="projects.project",
                             **extra)


class Migration(migrations.Migration):

    dependencies = [
        ("scoring", "0013_projects_required"),
        ("projects", "0001_initial"),
    ]

    operations = [
        migrations.SeparateDatabaseAndState(
            database_operations=[],
            state_operations=[
                *[migrations.AlterField(model_name=model, name="project", field=_project_fk())
                  for model in ("caseset", "generationjob", "judgeconfig", "judgerun", "preferencejudgerun",
                                "preferencestudy", "promptset")],
                migrations.AlterField(
                    model_name="job", name="project",
                    field=_project_fk(blank=True, null=True,
                                      help_text="Empty for instance-wide jobs (the worker check).")),
                migrations.AlterField(
                    model_name="llmendpoint", name="projects",
                    field=models.ManyToManyField(blank=True, related_name="endpoints", to="projects.project",
                                                 help_text="The projects whose coordinators may choose this "
                                                           "endpoint.")),
            ],
        ),
    ]
