from django.db import migrations, models


class Migration(migrations.Migration):

    dependencies = [
        # The squash on a fresh database; the history's last migration where the history is used (each app's
        # squash replaces the four apps' whole history, so Django maps either to another node)
        ('delphi', '0005_squashed'),
        ('delphi', '0004_project_moves_to_projects'),
    ]

    operations = [
        migrations.AddField(
            model_name='panelist',
            name='language',
            field=models.CharField(blank=True, help_text="The language the panel link's pages and e-mails are in (a code of settings.LANGUAGES); empty: the language the panellist's browser asks for.", max_length=16),
        ),
    ]
