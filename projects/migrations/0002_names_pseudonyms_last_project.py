"""Project names that cannot be mistaken for one another (``name_key``), the project a member last worked in, and
pseudonyms per project. The moved models' content types follow them to this app, so their permissions and the
audit trail's references to projects stay valid."""

import django.db.models.deletion
import django.utils.timezone
from django.conf import settings
from django.db import migrations, models

MOVED = ("project", "membership", "auditevent")


def fill_name_keys(apps, schema_editor):
    from projects.names import key

    Project = apps.get_model("projects", "Project")
    seen = set()
    for project in Project.objects.order_by("pk"):
        value = key(project.name)
        if value in seen:  # two existing names that can no longer both be told apart: the later one keeps its name
            value = f"{value}#{project.pk}"
        seen.add(value)
        Project.objects.filter(pk=project.pk).update(name_key=value)


def move_content_types(apps, schema_editor):
    ContentType = apps.get_model("contenttypes", "ContentType")
    for model in MOVED:
        if not ContentType.objects.filter(app_label="projects", model=model).exists():
            ContentType.objects.filter(app_label="annotation", model=model).update(app_label="projects")


def content_types_back(apps, schema_editor):
    ContentType = apps.get_model("contenttypes", "ContentType")
    for model in MOVED:
        if not ContentType.objects.filter(app_label="annotation", model=model).exists():
            ContentType.objects.filter(app_label="projects", model=model).update(app_label="annotation")


class Migration(migrations.Migration):

    dependencies = [
        ("projects", "0001_initial"),
        ("annotation", "0010_project_moves_to_projects"),
        migrations.swappable_dependency(settings.AUTH_USER_MODEL),
    ]

    operations = [
        migrations.RunPython(move_content_types, content_types_back),
        migrations.AddField(
            model_name="membership",
            name="last_used_at",
            field=models.DateTimeField(blank=True, null=True, help_text="When the user last chose to work in the "
                                                                        "project: later logins open it."),
        ),
        migrations.AddField(
            model_name="project",
            name="name_key",
            field=models.CharField(editable=False, max_length=400, null=True),
        ),
        migrations.RunPython(fill_name_keys, migrations.RunPython.noop),
        migrations.AlterField(
            model_name="project",
            name="name_key",
            field=models.CharField(editable=False, max_length=400, unique=True,
                                   help_text="The name as compared (projects.names.key): no two projects' names can "
                                             "be mistaken for one another."),
        ),
        migrations.AlterField(
            model_name="auditevent",
            name="project",
            field=models.ForeignKey(blank=True, null=True, on_delete=django.db.models.deletion.PROTECT,
                                    related_name="+", to="projects.project",
                                    help_text="The project the event happened in (empty: instance-wide, e.g. an "
                                              "account)."),
        ),
        migrations.CreateModel(
            name="Pseudonym",
            fields=[
                ("id", models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name="ID")),
                ("code", models.CharField(max_length=16)),
                ("created_at", models.DateTimeField(default=django.utils.timezone.now)),
                ("project", models.ForeignKey(on_delete=django.db.models.deletion.PROTECT, related_name="+",
                                              to="projects.project")),
                ("user", models.ForeignKey(on_delete=django.db.models.deletion.PROTECT, related_name="pseudonyms",
                                           to=settings.AUTH_USER_MODEL)),
            ],
            options={
                "ordering": ["project", "code"],
                "constraints": [
                    models.UniqueConstraint(fields=("project", "user"), name="unique_pseudonym_per_user"),
                    models.UniqueConstraint(fields=("project", "code"), name="unique_pseudonym_code"),
                ],
            },
        ),
    ]
