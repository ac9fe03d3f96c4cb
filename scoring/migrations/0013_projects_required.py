"""Projects, step 2: every row has its project now, which becomes required (apart from the data step, so that
PostgreSQL applies its updates before the schema changes)."""

import django.db.models.deletion
from django.db import migrations, models

import projects.legacy


class Migration(migrations.Migration):

    dependencies = [
        ("scoring", "0012_projects"),
    ]

    operations = [
        migrations.RemoveConstraint(
            model_name='promptset',
            name='unique_prompt_set_version',
        ),
        migrations.AlterField(
            model_name='caseset',
            name='project',
            field=models.ForeignKey(default=projects.legacy.default_project_id, on_delete=django.db.models.deletion.PROTECT, related_name='+', to='annotation.project'),
        ),
        migrations.AlterField(
            model_name='generationjob',
            name='project',
            field=models.ForeignKey(default=projects.legacy.default_project_id, on_delete=django.db.models.deletion.PROTECT, related_name='+', to='annotation.project'),
        ),
        migrations.AlterField(
            model_name='job',
            name='project',
            field=models.ForeignKey(blank=True, default=projects.legacy.default_project_id, help_text='Empty for instance-wide jobs (the worker check).', null=True, on_delete=django.db.models.deletion.PROTECT, related_name='+', to='annotation.project'),
        ),
        migrations.AlterField(
            model_name='judgeconfig',
            name='project',
            field=models.ForeignKey(default=projects.legacy.default_project_id, on_delete=django.db.models.deletion.PROTECT, related_name='+', to='annotation.project'),
        ),
        migrations.AlterField(
            model_name='judgerun',
            name='project',
            field=models.ForeignKey(default=projects.legacy.default_project_id, on_delete=django.db.models.deletion.PROTECT, related_name='+', to='annotation.project'),
        ),
        migrations.AlterField(
            model_name='preferencejudgerun',
            name='project',
            field=models.ForeignKey(default=projects.legacy.default_project_id, on_delete=django.db.models.deletion.PROTECT, related_name='+', to='annotation.project'),
        ),
        migrations.AlterField(
            model_name='preferencestudy',
            name='project',
            field=models.ForeignKey(default=projects.legacy.default_project_id, on_delete=django.db.models.deletion.PROTECT, related_name='+', to='annotation.project'),
        ),
        migrations.AlterField(
            model_name='promptset',
            name='project',
            field=models.ForeignKey(default=projects.legacy.default_project_id, on_delete=django.db.models.deletion.PROTECT, related_name='+', to='annotation.project'),
        ),
        migrations.AlterField(
            model_name='caseset',
            name='name',
            field=models.CharField(max_length=200),
        ),
        migrations.AlterField(
            model_name='judgeconfig',
            name='name',
            field=models.CharField(max_length=120),
        ),
        migrations.AlterField(
            model_name='preferencestudy',
            name='name',
            field=models.CharField(max_length=200),
        ),
        migrations.AddConstraint(
            model_name='caseset',
            constraint=models.UniqueConstraint(fields=('project', 'name'), name='unique_case_set_name_per_project'),
        ),
        migrations.AddConstraint(
            model_name='judgeconfig',
            constraint=models.UniqueConstraint(fields=('project', 'name'), name='unique_judge_name_per_project'),
        ),
        migrations.AddConstraint(
            model_name='preferencestudy',
            constraint=models.UniqueConstraint(fields=('project', 'name'), name='unique_preference_name_per_project'),
        ),
        migrations.AddConstraint(
            model_name='promptset',
            constraint=models.UniqueConstraint(fields=('project', 'name', 'version'), name='unique_prompt_set_version'),
        ),
    ]
