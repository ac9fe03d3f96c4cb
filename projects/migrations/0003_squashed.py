"""Projects, their members, pseudonyms and audit events; the project every instance starts with.

Squashed so that a fresh database is built in seconds: every migration of the four apps up to November 2026 in one migration per app, the models
created as they are now in a single :class:`projects.squashing.CreateModels` operation. It replaces the whole
history of the four apps (see :mod:`projects.squashing`), so a fresh database runs this and an existing one
carries on with the history.
"""

import django.db.models.deletion
import django.utils.timezone
from django.conf import settings
from django.db import migrations, models

import projects.squashing


def create_default_project(apps, schema_editor):
    """The project a fresh instance starts with, as the history left it on every upgraded instance."""
    from projects.names import key

    Project = apps.get_model("projects", "Project")
    Project.objects.get_or_create(name=projects.squashing.DEFAULT_PROJECT, defaults={
        "description": "Everything that existed before projects were introduced.",
        "name_key": key(projects.squashing.DEFAULT_PROJECT)})


class Migration(migrations.Migration):

    initial = True
    replaces = projects.squashing.REPLACED

    dependencies = [
        migrations.swappable_dependency(settings.AUTH_USER_MODEL),
        ('contenttypes', '0002_remove_content_type_name'),
    ]

    operations = [
        projects.squashing.CreateModels(
            models=[migrations.CreateModel(
                name='Project',
                fields=[
                    ('id', models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name='ID')),
                    ('name', models.CharField(max_length=100, unique=True)),
                    ('name_key', models.CharField(editable=False, help_text="The name as compared (projects.names.key): no two projects' names can be mistaken for one another.", max_length=400, unique=True)),
                    ('description', models.TextField(blank=True)),
                    ('is_demo', models.BooleanField(default=False, help_text='The synthetic demo study; not study data.')),
                    ('created_at', models.DateTimeField(default=django.utils.timezone.now)),
                    ('created_by', models.ForeignKey(blank=True, null=True, on_delete=django.db.models.deletion.PROTECT, related_name='+', to=settings.AUTH_USER_MODEL)),
                ],
                options={
                    'db_table': 'annotation_project',
                    'ordering': ['name'],
                },
            ), migrations.CreateModel(
                name='Membership',
                fields=[
                    ('id', models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name='ID')),
                    ('role', models.CharField(choices=[('physician', 'Physician (annotator)'), ('coordinator', 'Coordinator'), ('analyst', 'Analyst')], max_length=16)),
                    ('added_at', models.DateTimeField(default=django.utils.timezone.now)),
                    ('last_used_at', models.DateTimeField(blank=True, help_text='When the user last chose to work in the project: later logins open it.', null=True)),
                    ('added_by', models.ForeignKey(blank=True, null=True, on_delete=django.db.models.deletion.SET_NULL, related_name='+', to=settings.AUTH_USER_MODEL)),
                    ('user', models.ForeignKey(on_delete=django.db.models.deletion.CASCADE, related_name='memberships', to=settings.AUTH_USER_MODEL)),
                    ('project', models.ForeignKey(on_delete=django.db.models.deletion.CASCADE, related_name='memberships', to='projects.project')),
                ],
                options={
                    'db_table': 'annotation_membership',
                    'ordering': ['project', 'user__username', 'role'],
                    'constraints': [models.UniqueConstraint(fields=('project', 'user', 'role'), name='unique_project_member_role')],
                },
            ), migrations.CreateModel(
                name='AuditEvent',
                fields=[
                    ('id', models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name='ID')),
                    ('at', models.DateTimeField(db_index=True, default=django.utils.timezone.now)),
                    ('action', models.CharField(max_length=64)),
                    ('target_id', models.CharField(blank=True, max_length=64)),
                    ('target_repr', models.CharField(blank=True, max_length=300)),
                    ('reason', models.TextField(blank=True)),
                    ('data', models.JSONField(blank=True, default=dict)),
                    ('actor', models.ForeignKey(blank=True, null=True, on_delete=django.db.models.deletion.PROTECT, related_name='+', to=settings.AUTH_USER_MODEL)),
                    ('target_type', models.ForeignKey(blank=True, null=True, on_delete=django.db.models.deletion.PROTECT, to='contenttypes.contenttype')),
                    ('project', models.ForeignKey(blank=True, help_text='The project the event happened in (empty: instance-wide, e.g. an account).', null=True, on_delete=django.db.models.deletion.PROTECT, related_name='+', to='projects.project')),
                ],
                options={
                    'db_table': 'annotation_auditevent',
                    'ordering': ['-at', '-id'],
                    'indexes': [models.Index(fields=['target_type', 'target_id'], name='annotation__target__efe6e3_idx')],
                },
            ), migrations.CreateModel(
                name='Pseudonym',
                fields=[
                    ('id', models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name='ID')),
                    ('code', models.CharField(max_length=16)),
                    ('created_at', models.DateTimeField(default=django.utils.timezone.now)),
                    ('project', models.ForeignKey(on_delete=django.db.models.deletion.PROTECT, related_name='+', to='projects.project')),
                    ('user', models.ForeignKey(on_delete=django.db.models.deletion.PROTECT, related_name='pseudonyms', to=settings.AUTH_USER_MODEL)),
                ],
                options={
                    'ordering': ['project', 'code'],
                    'constraints': [models.UniqueConstraint(fields=('project', 'user'), name='unique_pseudonym_per_user'), models.UniqueConstraint(fields=('project', 'code'), name='unique_pseudonym_code')],
                },
            )],
        ),
        migrations.RunPython(create_default_project, migrations.RunPython.noop),
    ]
