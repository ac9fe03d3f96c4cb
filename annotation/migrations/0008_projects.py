"""Projects: existing data moves into one project, "Default", and every holder of a physician,
coordinator or analyst role becomes its member with the same role, so an upgraded instance behaves as before."""

import django.db.models.deletion
import django.utils.timezone
from django.conf import settings
from django.db import migrations, models

DEFAULT = "Default"
PROJECT_ROLES = ("physician", "coordinator", "analyst")


def into_default(apps, schema_editor):
    Project = apps.get_model("annotation", "Project")
    Membership = apps.get_model("annotation", "Membership")
    Group = apps.get_model("auth", "Group")
    project, _ = Project.objects.get_or_create(name=DEFAULT, defaults={
        "description": "Everything that existed before projects were introduced."})
    for model in ("Campaign", "Corpus", "Scale", "ScaleVersion", "AuditEvent"):
        apps.get_model("annotation", model).objects.filter(project__isnull=True).update(project=project)
    for group in Group.objects.filter(name__in=PROJECT_ROLES):
        Membership.objects.bulk_create(
            [Membership(project=project, user_id=user_id, role=group.name)
             for user_id in group.user_set.values_list("id", flat=True)], ignore_conflicts=True)


class Migration(migrations.Migration):

    dependencies = [
        ('annotation', '0007_score_grid_replicates_judge_keys'),
        migrations.swappable_dependency(settings.AUTH_USER_MODEL),
    ]

    operations = [
        migrations.AlterField(
            model_name='campaign',
            name='name',
            field=models.CharField(max_length=200),
        ),
        migrations.AlterField(
            model_name='corpus',
            name='name',
            field=models.CharField(max_length=200),
        ),
        migrations.CreateModel(
            name='Project',
            fields=[
                ('id', models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name='ID')),
                ('name', models.CharField(max_length=100, unique=True)),
                ('description', models.TextField(blank=True)),
                ('is_demo', models.BooleanField(default=False, help_text='The synthetic demo study; not study data.')),
                ('created_at', models.DateTimeField(default=django.utils.timezone.now)),
                ('created_by', models.ForeignKey(blank=True, null=True, on_delete=django.db.models.deletion.PROTECT, related_name='+', to=settings.AUTH_USER_MODEL)),
            ],
            options={
                'ordering': ['name'],
            },
        ),
        migrations.CreateModel(
            name='Membership',
            fields=[
                ('id', models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name='ID')),
                ('role', models.CharField(choices=[('physician', 'Physician (annotator)'), ('coordinator', 'Coordinator'), ('analyst', 'Analyst')], max_length=16)),
                ('added_at', models.DateTimeField(default=django.utils.timezone.now)),
                ('added_by', models.ForeignKey(blank=True, null=True, on_delete=django.db.models.deletion.SET_NULL, related_name='+', to=settings.AUTH_USER_MODEL)),
                ('user', models.ForeignKey(on_delete=django.db.models.deletion.CASCADE, related_name='memberships', to=settings.AUTH_USER_MODEL)),
                ('project', models.ForeignKey(on_delete=django.db.models.deletion.CASCADE, related_name='memberships', to='annotation.project')),
            ],
            options={
                'ordering': ['project', 'user__username', 'role'],
            },
        ),
        migrations.AddField(
            model_name='auditevent',
            name='project',
            field=models.ForeignKey(blank=True, help_text='The project the event happened in (empty: instance-wide, e.g. a published scale or a project itself).', null=True, on_delete=django.db.models.deletion.PROTECT, related_name='+', to='annotation.project'),
        ),
        migrations.AddField(
            model_name='campaign',
            name='project',
            field=models.ForeignKey(null=True, on_delete=django.db.models.deletion.PROTECT, related_name='+', to='annotation.project'),
        ),
        migrations.AddField(
            model_name='corpus',
            name='project',
            field=models.ForeignKey(null=True, on_delete=django.db.models.deletion.PROTECT, related_name='+', to='annotation.project'),
        ),
        migrations.AddField(
            model_name='scale',
            name='project',
            field=models.ForeignKey(null=True, on_delete=django.db.models.deletion.PROTECT, related_name='+', to='annotation.project'),
        ),
        migrations.AddField(
            model_name='scaleversion',
            name='project',
            field=models.ForeignKey(null=True, on_delete=django.db.models.deletion.PROTECT, related_name='+', to='annotation.project'),
        ),
        migrations.RunPython(into_default, migrations.RunPython.noop),
    ]
