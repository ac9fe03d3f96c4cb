"""Projects, step 2: every row now has its project, which becomes required (a separate migration, so that
PostgreSQL applies the data step's updates before the schema changes)."""

import django.db.models.deletion
from django.db import migrations, models

import projects.legacy


class Migration(migrations.Migration):

    dependencies = [
        ("annotation", "0008_projects"),
    ]

    operations = [
        migrations.AlterField(
            model_name='campaign',
            name='project',
            field=models.ForeignKey(default=projects.legacy.default_project_id, on_delete=django.db.models.deletion.PROTECT, related_name='+', to='annotation.project'),
        ),
        migrations.AlterField(
            model_name='corpus',
            name='project',
            field=models.ForeignKey(default=projects.legacy.default_project_id, on_delete=django.db.models.deletion.PROTECT, related_name='+', to='annotation.project'),
        ),
        migrations.AlterField(
            model_name='scale',
            name='project',
            field=models.ForeignKey(default=projects.legacy.default_project_id, on_delete=django.db.models.deletion.PROTECT, related_name='+', to='annotation.project'),
        ),
        migrations.AlterField(
            model_name='scaleversion',
            name='project',
            field=models.ForeignKey(default=projects.legacy.default_project_id, on_delete=django.db.models.deletion.PROTECT, related_name='+', to='annotation.project'),
        ),
        migrations.AddConstraint(
            model_name='campaign',
            constraint=models.UniqueConstraint(fields=('project', 'name'), name='unique_campaign_name_per_project'),
        ),
        migrations.AddConstraint(
            model_name='corpus',
            constraint=models.UniqueConstraint(fields=('project', 'name'), name='unique_corpus_name_per_project'),
        ),
        migrations.AddConstraint(
            model_name='membership',
            constraint=models.UniqueConstraint(fields=('project', 'user', 'role'), name='unique_project_member_role'),
        ),
    ]
