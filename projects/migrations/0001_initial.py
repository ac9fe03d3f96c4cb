"""Project, Membership and AuditEvent move from the annotation app to projects, the app of access control. Their tables keep their
names (annotation_project, annotation_membership, annotation_auditevent): only Django's state moves here; the
database is not touched. The old app's state lets go of them in annotation 0010."""

import django.db.models.deletion
import django.utils.timezone
from django.conf import settings
from django.db import migrations, models


class Migration(migrations.Migration):

    initial = True

    dependencies = [
        ("annotation", "0009_projects_required"),
        ("contenttypes", "0002_remove_content_type_name"),
        migrations.swappable_dependency(settings.AUTH_USER_MODEL),
    ]

    operations = [
        migrations.SeparateDatabaseAndState(
            database_operations=[],
            state_operations=[
                migrations.CreateModel(
                    name="Project",
                    fields=[
                        ("id", models.BigAutoField(auto_created=True, primary_key=True, serialize=False,
                                                   verbose_name="ID")),
                        ("name", models.CharField(max_length=100, unique=True)),
                        ("description", models.TextField(blank=True)),
                        ("is_demo", models.BooleanField(default=False,
                                                        help_text="The synthetic demo study; not study data.")),
                        ("created_at", models.DateTimeField(default=django.utils.timezone.now)),
                        ("created_by", models.ForeignKey(blank=True, null=True,
                                                         on_delete=django.db.models.deletion.PROTECT,
                                                         related_name="+", to=settings.AUTH_USER_MODEL)),
                    ],
                    options={"db_table": "annotation_project", "ordering": ["name"]},
                ),
                migrations.CreateModel(
                    name="Membership",
                    fields=[
                        ("id", models.BigAutoField(auto_created=True, primary_key=True, serialize=False,
                                                   verbose_name="ID")),
                        ("role", models.CharField(choices=[("physician", "Physician (annotator)"),
                                                           ("coordinator", "Coordinator"), ("analyst", "Analyst")],
                                                  max_length=16)),
                        ("added_at", models.DateTimeField(default=django.utils.timezone.now)),
                        ("added_by", models.ForeignKey(blank=True, null=True,
                                                       on_delete=django.db.models.deletion.SET_NULL,
                                                       related_name="+", to=settings.AUTH_USER_MODEL)),
                        ("user", models.ForeignKey(on_delete=django.db.models.deletion.CASCADE,
                                                   related_name="memberships", to=settings.AUTH_USER_MODEL)),
                        ("project", models.ForeignKey(on_delete=django.db.models.deletion.CASCADE,
                                                      related_name="memberships", to="projects.project")),
                    ],
                    options={
                        "db_table": "annotation_membership",
                        "ordering": ["project", "user__username", "role"],
                        "constraints": [models.UniqueConstraint(fields=("project", "user", "role"),
                                                                name="unique_project_member_role")],
                    },
                ),
                migrations.CreateModel(
                    name="AuditEvent",
                    fields=[
                        ("id", models.BigAutoField(auto_created=True, primary_key=True, serialize=False,
                                                   verbose_name="ID")),
                        ("at", models.DateTimeField(db_index=True, default=django.utils.timezone.now)),
                        ("action", models.CharField(max_length=64)),
                        ("target_id", models.CharField(blank=True, max_length=64)),
                        ("target_repr", models.CharField(blank=True, max_length=300)),
                        ("reason", models.TextField(blank=True)),
                        ("data", models.JSONField(blank=True, default=dict)),
                        ("actor", models.ForeignKey(blank=True, null=True,
                                                    on_delete=django.db.models.deletion.PROTECT,
                                                    related_name="+", to=settings.AUTH_USER_MODEL)),
                        ("target_type", models.ForeignKey(blank=True, null=True,
                                                          on_delete=django.db.models.deletion.PROTECT,
                                                          to="contenttypes.contenttype")),
                        ("project", models.ForeignKey(
                            blank=True, null=True, on_delete=django.db.models.deletion.PROTECT, related_name="+",
                            to="projects.project",
                            help_text="The project the event happened in (empty: instance-wide, e.g. a published "
                                      "scale or a project itself).")),
                    ],
                    options={
                        "db_table": "annotation_auditevent",
                        "ordering": ["-at", "-id"],
                        "indexes": [models.Index(fields=["target_type", "target_id"],
                                                 name="annotation__target__efe6e3_idx")],
                    },
                ),
            ],
        ),
    ]
