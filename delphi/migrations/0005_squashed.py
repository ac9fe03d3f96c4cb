"""Delphi studies, rounds, panellists and their answers.

Squashed so that a fresh database is built in seconds: every migration of the four apps up to November 2026 in one migration per app, the models
created as they are now in a single :class:`projects.squashing.CreateModels` operation. It replaces the whole
history of the four apps (see :mod:`projects.squashing`), so a fresh database runs this and an existing one
carries on with the history.
"""

import django.db.models.deletion
import django.utils.timezone
from django.conf import settings
from django.db import migrations, models

import projects.squashing


class Migration(migrations.Migration):

    initial = True
    replaces = projects.squashing.REPLACED

    dependencies = [
        ('annotation', '0012_squashed'),
        migrations.swappable_dependency(settings.AUTH_USER_MODEL),
        ('projects', '0003_squashed'),
    ]

    operations = [
        projects.squashing.CreateModels(
            models=[migrations.CreateModel(
                name='DelphiStudy',
                fields=[
                    ('id', models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name='ID')),
                    ('deleted_at', models.DateTimeField(blank=True, editable=False, null=True)),
                    ('delete_reason', models.TextField(blank=True, editable=False)),
                    ('title', models.CharField(max_length=200)),
                    ('status', models.CharField(choices=[('setup', 'Setting up'), ('running', 'Delphi rounds'), ('validation', 'Validation survey'), ('published', 'Agreed version published')], default='setup', max_length=12)),
                    ('invitation', models.TextField(blank=True, help_text='The e-mail text sent with each personal link.')),
                    ('instructions', models.TextField(blank=True, help_text='Shown at the top of the questionnaire.')),
                    ('consensus_min_mean', models.DecimalField(blank=True, decimal_places=2, default=3.5, help_text='Mean importance at least this (empty: not used).', max_digits=4, null=True)),
                    ('consensus_max_cv', models.DecimalField(blank=True, decimal_places=2, default=0.25, help_text='Coefficient of variation at most this (empty: not used).', max_digits=4, null=True)),
                    ('consensus_min_agreement', models.DecimalField(blank=True, decimal_places=1, help_text='At least this % of panelists rate the item at or above the agreement level (empty: not used).', max_digits=5, null=True)),
                    ('agreement_level', models.PositiveSmallIntegerField(default=4, help_text='Ratings at or above this agree (4 = 4-5).')),
                    ('consensus_fixed_at', models.DateTimeField(blank=True, help_text='Last change of the rule.', null=True)),
                    ('consensus_locked_at', models.DateTimeField(blank=True, help_text='Set when round 1 opens.', null=True)),
                    ('planned_rounds', models.PositiveSmallIntegerField(default=3)),
                    ('familiarity_threshold', models.PositiveSmallIntegerField(choices=[(5, 'Very familiar'), (4, 'Familiar'), (3, 'Generally familiar'), (2, 'Less familiar'), (1, 'Very unfamiliar')], default=4, help_text='Panelists who rate their familiarity below this are not invited to the next round.')),
                    ('reminder_days', models.PositiveSmallIntegerField(default=7, help_text='Remind non-responders every N days (0: no automatic reminders).')),
                    ('link_valid_days', models.PositiveSmallIntegerField(default=60, help_text='Personal links expire after N days.')),
                    ('site_url', models.CharField(blank=True, help_text='Base address used in e-mailed links.', max_length=300)),
                    ('created_at', models.DateTimeField(default=django.utils.timezone.now)),
                    ('agreed_version', models.ForeignKey(blank=True, null=True, on_delete=django.db.models.deletion.PROTECT, related_name='+', to='annotation.scaleversion')),
                    ('base_version', models.ForeignKey(on_delete=django.db.models.deletion.PROTECT, related_name='+', to='annotation.scaleversion')),
                    ('created_by', models.ForeignKey(blank=True, null=True, on_delete=django.db.models.deletion.PROTECT, related_name='+', to=settings.AUTH_USER_MODEL)),
                    ('deleted_by', models.ForeignKey(blank=True, editable=False, null=True, on_delete=django.db.models.deletion.PROTECT, related_name='+', to=settings.AUTH_USER_MODEL)),
                    ('project', models.ForeignKey(on_delete=django.db.models.deletion.PROTECT, related_name='+', to='projects.project')),
                    ('scale', models.ForeignKey(on_delete=django.db.models.deletion.PROTECT, related_name='delphi_studies', to='annotation.scale')),
                ],
                options={
                    'verbose_name': 'Delphi study',
                    'verbose_name_plural': 'Delphi studies',
                    'ordering': ['-created_at'],
                    'constraints': [models.UniqueConstraint(fields=('project', 'title'), name='unique_delphi_title_per_project')],
                },
            ), migrations.CreateModel(
                name='Panelist',
                fields=[
                    ('id', models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name='ID')),
                    ('deleted_at', models.DateTimeField(blank=True, editable=False, null=True)),
                    ('delete_reason', models.TextField(blank=True, editable=False)),
                    ('pseudonym', models.CharField(help_text='Shown in exports instead of the name, e.g. P007.', max_length=12)),
                    ('name', models.CharField(blank=True, max_length=200)),
                    ('email', models.EmailField(blank=True, max_length=254)),
                    ('token_version', models.PositiveIntegerField(default=1, help_text='Raising it revokes every link sent so far.')),
                    ('gender', models.CharField(blank=True, max_length=40)),
                    ('age', models.PositiveSmallIntegerField(blank=True, null=True)),
                    ('education', models.CharField(blank=True, max_length=100)),
                    ('professional_title', models.CharField(blank=True, max_length=100)),
                    ('working_years', models.PositiveSmallIntegerField(blank=True, null=True)),
                    ('added_at', models.DateTimeField(default=django.utils.timezone.now)),
                    ('added_by', models.ForeignKey(blank=True, null=True, on_delete=django.db.models.deletion.PROTECT, related_name='+', to=settings.AUTH_USER_MODEL)),
                    ('deleted_by', models.ForeignKey(blank=True, editable=False, null=True, on_delete=django.db.models.deletion.PROTECT, related_name='+', to=settings.AUTH_USER_MODEL)),
                    ('study', models.ForeignKey(on_delete=django.db.models.deletion.PROTECT, related_name='panelists', to='delphi.delphistudy')),
                    ('user', models.ForeignKey(blank=True, null=True, on_delete=django.db.models.deletion.PROTECT, related_name='delphi_panelists', to=settings.AUTH_USER_MODEL)),
                ],
                options={
                    'ordering': ['study', 'pseudonym'],
                    'constraints': [models.UniqueConstraint(fields=('study', 'pseudonym'), name='unique_panelist_pseudonym')],
                },
            ), migrations.CreateModel(
                name='Participation',
                fields=[
                    ('id', models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name='ID')),
                    ('invited_at', models.DateTimeField(blank=True, null=True)),
                    ('last_reminded_at', models.DateTimeField(blank=True, null=True)),
                    ('reminders_sent', models.PositiveSmallIntegerField(default=0)),
                    ('started_at', models.DateTimeField(blank=True, null=True)),
                    ('completed_at', models.DateTimeField(blank=True, null=True)),
                    ('familiarity', models.PositiveSmallIntegerField(blank=True, choices=[(5, 'Very familiar'), (4, 'Familiar'), (3, 'Generally familiar'), (2, 'Less familiar'), (1, 'Very unfamiliar')], null=True)),
                    ('basis_practice', models.CharField(blank=True, choices=[('high', 'High'), ('medium', 'Medium'), ('low', 'Low')], max_length=6)),
                    ('basis_theory', models.CharField(blank=True, choices=[('high', 'High'), ('medium', 'Medium'), ('low', 'Low')], max_length=6)),
                    ('basis_literature', models.CharField(blank=True, choices=[('high', 'High'), ('medium', 'Medium'), ('low', 'Low')], max_length=6)),
                    ('basis_intuition', models.CharField(blank=True, choices=[('high', 'High'), ('medium', 'Medium'), ('low', 'Low')], max_length=6)),
                    ('withdrawn_at', models.DateTimeField(blank=True, null=True)),
                    ('withdrawn_reason', models.TextField(blank=True)),
                    ('panelist', models.ForeignKey(on_delete=django.db.models.deletion.PROTECT, related_name='participations', to='delphi.panelist')),
                    ('round', models.ForeignKey(on_delete=django.db.models.deletion.PROTECT, related_name='participations', to='delphi.round')),
                ],
                options={
                    'ordering': ['round', 'panelist__pseudonym'],
                    'constraints': [models.UniqueConstraint(fields=('round', 'panelist'), name='unique_participation')],
                },
            ), migrations.CreateModel(
                name='Proposal',
                fields=[
                    ('id', models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name='ID')),
                    ('deleted_at', models.DateTimeField(blank=True, editable=False, null=True)),
                    ('delete_reason', models.TextField(blank=True, editable=False)),
                    ('dimension_code', models.CharField(blank=True, help_text='The dimension it belongs to.', max_length=16)),
                    ('text', models.TextField()),
                    ('reason', models.TextField(blank=True)),
                    ('adoption', models.CharField(blank=True, choices=[('', 'Not decided'), ('adopt', 'Adopt'), ('not_adopt', 'Not adopt')], default='', max_length=10)),
                    ('adoption_note', models.TextField(blank=True)),
                    ('adoption_at', models.DateTimeField(blank=True, null=True)),
                    ('created_at', models.DateTimeField(default=django.utils.timezone.now)),
                    ('adoption_by', models.ForeignKey(blank=True, null=True, on_delete=django.db.models.deletion.PROTECT, related_name='+', to=settings.AUTH_USER_MODEL)),
                    ('deleted_by', models.ForeignKey(blank=True, editable=False, null=True, on_delete=django.db.models.deletion.PROTECT, related_name='+', to=settings.AUTH_USER_MODEL)),
                    ('participation', models.ForeignKey(on_delete=django.db.models.deletion.PROTECT, related_name='proposals', to='delphi.participation')),
                ],
                options={
                    'ordering': ['participation__round', 'created_at', 'id'],
                },
            ), migrations.CreateModel(
                name='Response',
                fields=[
                    ('id', models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name='ID')),
                    ('importance', models.PositiveSmallIntegerField(blank=True, null=True)),
                    ('comment', models.TextField(blank=True)),
                    ('proposed_wording', models.TextField(blank=True)),
                    ('adoption', models.CharField(blank=True, choices=[('', 'Not decided'), ('adopt', 'Adopt'), ('not_adopt', 'Not adopt')], default='', max_length=10)),
                    ('adoption_note', models.TextField(blank=True)),
                    ('adoption_at', models.DateTimeField(blank=True, null=True)),
                    ('created_at', models.DateTimeField(default=django.utils.timezone.now)),
                    ('updated_at', models.DateTimeField(default=django.utils.timezone.now)),
                    ('adoption_by', models.ForeignKey(blank=True, null=True, on_delete=django.db.models.deletion.PROTECT, related_name='+', to=settings.AUTH_USER_MODEL)),
                    ('item', models.ForeignKey(on_delete=django.db.models.deletion.PROTECT, related_name='delphi_responses', to='annotation.item')),
                    ('participation', models.ForeignKey(on_delete=django.db.models.deletion.PROTECT, related_name='responses', to='delphi.participation')),
                ],
                options={
                    'ordering': ['participation', 'item__order'],
                    'constraints': [models.UniqueConstraint(fields=('participation', 'item'), name='unique_delphi_response')],
                },
            ), migrations.CreateModel(
                name='ResponseChange',
                fields=[
                    ('id', models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name='ID')),
                    ('changed_at', models.DateTimeField(default=django.utils.timezone.now)),
                    ('old_importance', models.PositiveSmallIntegerField(blank=True, null=True)),
                    ('new_importance', models.PositiveSmallIntegerField(blank=True, null=True)),
                    ('old_comment', models.TextField(blank=True)),
                    ('new_comment', models.TextField(blank=True)),
                    ('old_wording', models.TextField(blank=True)),
                    ('new_wording', models.TextField(blank=True)),
                    ('response', models.ForeignKey(on_delete=django.db.models.deletion.PROTECT, related_name='changes', to='delphi.response')),
                ],
                options={
                    'ordering': ['response', 'changed_at', 'id'],
                },
            ), migrations.CreateModel(
                name='Round',
                fields=[
                    ('id', models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name='ID')),
                    ('number', models.PositiveSmallIntegerField()),
                    ('kind', models.CharField(choices=[('delphi', 'Delphi round'), ('validation', 'Validation survey')], default='delphi', max_length=12)),
                    ('status', models.CharField(choices=[('draft', 'Not opened'), ('open', 'Open'), ('closed', 'Closed')], default='draft', max_length=8)),
                    ('deadline', models.DateField(blank=True, null=True)),
                    ('opened_at', models.DateTimeField(blank=True, null=True)),
                    ('closed_at', models.DateTimeField(blank=True, null=True)),
                    ('close_note', models.TextField(blank=True)),
                    ('created_at', models.DateTimeField(default=django.utils.timezone.now)),
                    ('closed_by', models.ForeignKey(blank=True, null=True, on_delete=django.db.models.deletion.PROTECT, related_name='+', to=settings.AUTH_USER_MODEL)),
                    ('next_version', models.ForeignKey(blank=True, help_text="The version the focus group's decisions produced.", null=True, on_delete=django.db.models.deletion.PROTECT, related_name='+', to='annotation.scaleversion')),
                    ('study', models.ForeignKey(on_delete=django.db.models.deletion.PROTECT, related_name='rounds', to='delphi.delphistudy')),
                    ('version', models.ForeignKey(on_delete=django.db.models.deletion.PROTECT, related_name='delphi_rounds', to='annotation.scaleversion')),
                ],
                options={
                    'ordering': ['study', 'number'],
                    'constraints': [models.UniqueConstraint(fields=('study', 'number'), name='unique_delphi_round_number')],
                },
            ), migrations.CreateModel(
                name='ItemDecision',
                fields=[
                    ('id', models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name='ID')),
                    ('deleted_at', models.DateTimeField(blank=True, editable=False, null=True)),
                    ('delete_reason', models.TextField(blank=True, editable=False)),
                    ('action', models.CharField(choices=[('reserve', 'Reserve'), ('revise', 'Revise'), ('delete', 'Delete'), ('merge', 'Merge'), ('add', 'Add')], max_length=8)),
                    ('new_code', models.CharField(blank=True, help_text='Code of an added item.', max_length=16)),
                    ('dimension_code', models.CharField(blank=True, help_text='Dimension of an added item.', max_length=16)),
                    ('new_text_en', models.TextField(blank=True)),
                    ('new_text_zh', models.TextField(blank=True)),
                    ('new_guidance_en', models.TextField(blank=True)),
                    ('reason', models.TextField(blank=True)),
                    ('decided_at', models.DateTimeField(default=django.utils.timezone.now)),
                    ('decided_by', models.ForeignKey(blank=True, null=True, on_delete=django.db.models.deletion.PROTECT, related_name='+', to=settings.AUTH_USER_MODEL)),
                    ('deleted_by', models.ForeignKey(blank=True, editable=False, null=True, on_delete=django.db.models.deletion.PROTECT, related_name='+', to=settings.AUTH_USER_MODEL)),
                    ('item', models.ForeignKey(blank=True, help_text='The item decided on (empty for Add).', null=True, on_delete=django.db.models.deletion.PROTECT, related_name='+', to='annotation.item')),
                    ('merge_into', models.ForeignKey(blank=True, help_text='Merge: the item that absorbs this one.', null=True, on_delete=django.db.models.deletion.PROTECT, related_name='+', to='annotation.item')),
                    ('proposal', models.ForeignKey(blank=True, null=True, on_delete=django.db.models.deletion.PROTECT, related_name='decisions', to='delphi.proposal')),
                    ('round', models.ForeignKey(on_delete=django.db.models.deletion.PROTECT, related_name='decisions', to='delphi.round')),
                ],
                options={
                    'ordering': ['round', 'id'],
                    'constraints': [models.UniqueConstraint(condition=models.Q(('deleted_at__isnull', True), ('item__isnull', False)), fields=('round', 'item'), name='unique_item_decision')],
                },
            )],
        ),
    ]
