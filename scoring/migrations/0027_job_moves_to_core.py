"""The background job moves to the core app (core 0001): removed from scoring's state only; its table stays."""

from django.db import migrations


class Migration(migrations.Migration):

    dependencies = [
        ('scoring', '0026_work_status_vocabulary'),
        ('core', '0001_initial'),
    ]

    operations = [
        migrations.SeparateDatabaseAndState(
            state_operations=[migrations.DeleteModel(name='Job')],
            database_operations=[],
        ),
    ]
