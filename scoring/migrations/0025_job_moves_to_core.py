"""The background job moves to the core app (core 0001): removed from scoring's state only; its table stays."""

from django.db import migrations


class Migration(migrations.Migration):

    dependencies = [
        ('scoring', '0024_job_kinds_methods_and_blinded'),
        ('core', '0001_initial'),
    ]

    operations = [
        migrations.SeparateDatabaseAndState(
            state_operations=[migrations.DeleteModel(name='Job')],
            database_operations=[],
        ),
    ]
