import django.db.models.deletion
import django.utils.timezone
from django.conf import settings
from django.db import migrations, models


class Migration(migrations.Migration):

    dependencies = [
        # The squash on a fresh database; the history's last migration where the history is used (each app's
        # squash replaces the four apps' whole history, so Django maps either to another node)
        ('projects', '0003_squashed'),
        ('projects', '0002_names_pseudonyms_last_project'),
        migrations.swappable_dependency(settings.AUTH_USER_MODEL),
    ]

    operations = [
        migrations.CreateModel(
            name='AccountSettings',
            fields=[
                ('id', models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name='ID')),
                ('language', models.CharField(blank=True, help_text='A code of settings.LANGUAGES (e.g. zh-hans); empty: the language the browser asks for.', max_length=16)),
                ('updated_at', models.DateTimeField(default=django.utils.timezone.now)),
                ('user', models.OneToOneField(on_delete=django.db.models.deletion.CASCADE, related_name='account_settings', to=settings.AUTH_USER_MODEL)),
            ],
        ),
    ]
