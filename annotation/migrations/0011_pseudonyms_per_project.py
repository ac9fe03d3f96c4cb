"""Pseudonyms are per project now (projects.Pseudonym, random): the instance-wide, sequential ones go (they told an
analyst how many raters the instance had and linked a person across projects)."""

from django.db import migrations


class Migration(migrations.Migration):

    dependencies = [
        ("annotation", "0010_project_moves_to_projects"),
    ]

    operations = [
        migrations.RemoveField(model_name="raterprofile", name="pseudonym"),
    ]
