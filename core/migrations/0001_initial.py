"""The background job moves from the scoring app to core: its state only. The table keeps its name (``scoring_job``,
created by scoring's migrations), and its content type is relabelled so that permissions granted on it stay."""

import django.db.models.deletion
import django.utils.timezone
from django.conf import settings
from django.db import migrations, models


def relabel_content_type(apps, schema_editor) -> None:
    ContentType = apps.get_model("contenttypes", "ContentType")
    if not ContentType.objects.filter(app_label="core", model="job").exists():
        ContentType.objects.filter(app_label="scoring", model="job").update(app_label="core")


def restore_content_type(apps, schema_editor) -> None:
    ContentType = apps.get_model("contenttypes", "ContentType")
    if not ContentType.objects.filter(app_label="scoring", model="job").exists():
        ContentType.objects.filter(app_label="core", model="job").update(app_label="scoring")


class Migration(migrations.Migration):

    initial = True

    dependencies = [
        ('contenttypes', '0002_remove_content_type_name'),
        ('projects', '0005_invitation'),
        ('scoring', '0024_job_kinds_methods_and_blinded'),
        migrations.swappable_dependency(settings.AUTH_USER_MODEL),
    ]

    operations = [
        migrations.SeparateDatabaseAndState(
            state_operations=[
                migrations.CreateModel(
                    name='Job',
                    fields=[
                        ('id', models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name='ID')),
                        ('kind', models.CharField(choices=[('worker_check', 'End-to-end worker check'), ('campaign_report', 'Campaign agreement report'), ('judge_report', 'Judge vs physicians report'), ('study_export', 'Study archive export'), ('preference_results', 'Preference study results'), ('delphi_round', 'Delphi round statistics'), ('judge_compare', 'Two judge runs compared against physicians'), ('judge_selection', 'Judge selection of a campaign'), ('judge_planner', 'Sample-size plan from a pilot'), ('study_methods', 'Methods page of a study'), ('preference_blinded', 'Preference study figures before unblinding')], max_length=40)),
                        ('status', models.CharField(choices=[('queued', 'Queued'), ('running', 'Running'), ('succeeded', 'Succeeded'), ('failed', 'Failed')], db_index=True, default='queued', max_length=12)),
                        ('params', models.JSONField(blank=True, default=dict)),
                        ('result', models.JSONField(blank=True, default=dict)),
                        ('error', models.TextField(blank=True)),
                        ('progress', models.FloatField(default=0.0)),
                        ('message', models.CharField(blank=True, help_text='What the job is doing now.', max_length=200)),
                        ('created_at', models.DateTimeField(default=django.utils.timezone.now)),
                        ('started_at', models.DateTimeField(blank=True, null=True)),
                        ('finished_at', models.DateTimeField(blank=True, null=True)),
                        ('attempts', models.PositiveIntegerField(default=0)),
                        ('enqueued_at', models.DateTimeField(blank=True, help_text='Last message sent to the workers.', null=True)),
                        ('heartbeat_at', models.DateTimeField(blank=True, help_text='Last sign of life of the worker running it.', null=True)),
                        ('project', models.ForeignKey(blank=True, help_text='Empty for instance-wide jobs (the worker check).', null=True, on_delete=django.db.models.deletion.PROTECT, related_name='+', to='projects.project')),
                        ('requested_by', models.ForeignKey(blank=True, null=True, on_delete=django.db.models.deletion.PROTECT, related_name='+', to=settings.AUTH_USER_MODEL)),
                    ],
                    options={
                        'db_table': 'scoring_job',
                        'ordering': ['-created_at', '-id'],
                    },
                ),
            ],
            database_operations=[],
        ),
        migrations.RunPython(relabel_content_type, restore_content_type, elidable=True),
    ]
