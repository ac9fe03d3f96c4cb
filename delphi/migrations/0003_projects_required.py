"""Projects, step 2: every row has its project now, which becomes required (apart from the data step, so that
PostgreSQL applies its updates before the schema changes)."""

import django.db.models.deletion
from django.db import migrations, models

import projects.legacy


class Migration(migrations.Migration):

    dependencies = [
        ("delphi", "0002_projects"),
    ]

    operations = [
        migrations.AlterField(
            model_name='delphistudy',
            name='project',
            field=models.ForeignKey(default=projects.legacy.default_project_id, on_delete=django.db.models.deletion.PROTECT, related_name='+', to='annotation.project'),
        ),
        migrations.AlterField(
            model_name='delphistudy',
            name='title',
            field=models.CharField(max_length=200),
        ),
        migrations.AddConstraint(
            model_name='delphistudy',
            constraint=models.UniqueConstraint(fields=('project', 'title'), name='unique_delphi_title_per_project'),
        ),
    ]
