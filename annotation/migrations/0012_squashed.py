"""Scales, corpora, campaigns, assignments and labels; the LLM-specific Mini-CEX v1 as published.

Squashed so that a fresh database is built in seconds: every migration of the four apps up to November 2026 in one migration per app, the models
created as they are now in a single :class:`projects.squashing.CreateModels` operation. It replaces the whole
history of the four apps (see :mod:`projects.squashing`), so a fresh database runs this and an existing one
carries on with the history.
"""

import django.db.models.deletion
import django.utils.timezone
from django.conf import settings
from django.db import migrations, models

import annotation.scores
import projects.squashing


def load_mini_cex(apps, schema_editor):
    """The LLM-specific Mini-CEX v1 (Shi et al., LLM-Mini-CEX), published, in the project a fresh instance starts
    with."""
    from types import SimpleNamespace

    from annotation.scales import load_instrument, read_instrument

    project = apps.get_model("projects", "Project").objects.get(name=projects.squashing.DEFAULT_PROJECT)
    models = SimpleNamespace(**{name: apps.get_model("annotation", name)
                                for name in ("Scale", "ScaleVersion", "Dimension", "Item")})
    load_instrument(read_instrument(), models, publish=True, project=project)


class Migration(migrations.Migration):

    initial = True
    replaces = projects.squashing.REPLACED

    dependencies = [
        migrations.swappable_dependency(settings.AUTH_USER_MODEL),
        ('projects', '0003_squashed'),
    ]

    operations = [
        projects.squashing.CreateModels(
            models=[migrations.CreateModel(
                name='Dimension',
                fields=[
                    ('id', models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name='ID')),
                    ('code', models.CharField(max_length=16)),
                    ('order', models.PositiveIntegerField(default=0)),
                    ('name_en', models.CharField(max_length=300)),
                    ('name_zh', models.CharField(blank=True, max_length=300)),
                    ('version', models.ForeignKey(on_delete=django.db.models.deletion.CASCADE, related_name='dimensions', to='annotation.scaleversion')),
                ],
                options={
                    'ordering': ['version', 'order'],
                    'constraints': [models.UniqueConstraint(fields=('version', 'code'), name='unique_dimension_code')],
                },
            ), migrations.CreateModel(
                name='Corpus',
                fields=[
                    ('id', models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name='ID')),
                    ('deleted_at', models.DateTimeField(blank=True, editable=False, null=True)),
                    ('delete_reason', models.TextField(blank=True, editable=False)),
                    ('name', models.CharField(max_length=200)),
                    ('kind', models.CharField(choices=[('dialogue', 'Dialogues'), ('answer', 'Answers to questions')], default='dialogue', max_length=10)),
                    ('description', models.TextField(blank=True)),
                    ('is_demo', models.BooleanField(default=False, help_text='Written for the demo; not study data.')),
                    ('created_at', models.DateTimeField(default=django.utils.timezone.now)),
                    ('created_by', models.ForeignKey(blank=True, null=True, on_delete=django.db.models.deletion.PROTECT, related_name='+', to=settings.AUTH_USER_MODEL)),
                    ('deleted_by', models.ForeignKey(blank=True, editable=False, null=True, on_delete=django.db.models.deletion.PROTECT, related_name='+', to=settings.AUTH_USER_MODEL)),
                    ('project', models.ForeignKey(on_delete=django.db.models.deletion.PROTECT, related_name='+', to='projects.project')),
                ],
                options={
                    'verbose_name_plural': 'corpora',
                    'ordering': ['name'],
                    'constraints': [models.UniqueConstraint(fields=('project', 'name'), name='unique_corpus_name_per_project')],
                },
            ), migrations.CreateModel(
                name='Campaign',
                fields=[
                    ('id', models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name='ID')),
                    ('deleted_at', models.DateTimeField(blank=True, editable=False, null=True)),
                    ('delete_reason', models.TextField(blank=True, editable=False)),
                    ('name', models.CharField(max_length=200)),
                    ('phase', models.CharField(choices=[('trial', 'Trial'), ('formal', 'Formal'), ('imported', 'Imported labels')], default='formal', max_length=10)),
                    ('status', models.CharField(choices=[('open', 'Open'), ('closed', 'Closed')], default='open', max_length=10)),
                    ('overlap', models.PositiveSmallIntegerField(default=3, help_text='Raters per dialogue (k).')),
                    ('filter_split', models.CharField(blank=True, max_length=12)),
                    ('filter_model', models.CharField(blank=True, max_length=200)),
                    ('filter_language', models.CharField(blank=True, max_length=16)),
                    ('instructions', models.TextField(blank=True)),
                    ('deadline', models.DateField(blank=True, null=True)),
                    ('seed', models.PositiveIntegerField(default=0, help_text="Seeds the order of dialogues in each rater's queue.")),
                    ('allow_names', models.BooleanField(default=False, help_text="Analysts may see raters' names instead of pseudonyms in reports and exports.")),
                    ('created_at', models.DateTimeField(default=django.utils.timezone.now)),
                    ('created_by', models.ForeignKey(blank=True, null=True, on_delete=django.db.models.deletion.PROTECT, related_name='+', to=settings.AUTH_USER_MODEL)),
                    ('deleted_by', models.ForeignKey(blank=True, editable=False, null=True, on_delete=django.db.models.deletion.PROTECT, related_name='+', to=settings.AUTH_USER_MODEL)),
                    ('project', models.ForeignKey(on_delete=django.db.models.deletion.PROTECT, related_name='+', to='projects.project')),
                    ('corpus', models.ForeignKey(on_delete=django.db.models.deletion.PROTECT, related_name='campaigns', to='annotation.corpus')),
                    ('scale_version', models.ForeignKey(on_delete=django.db.models.deletion.PROTECT, related_name='campaigns', to='annotation.scaleversion')),
                ],
                options={
                    'ordering': ['-created_at'],
                    'constraints': [models.UniqueConstraint(fields=('project', 'name'), name='unique_campaign_name_per_project')],
                },
            ), migrations.CreateModel(
                name='Dialogue',
                fields=[
                    ('id', models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name='ID')),
                    ('deleted_at', models.DateTimeField(blank=True, editable=False, null=True)),
                    ('delete_reason', models.TextField(blank=True, editable=False)),
                    ('external_id', models.CharField(max_length=200)),
                    ('self_report', models.TextField()),
                    ('turns', models.JSONField(help_text='[{"role": "doctor"|"patient"|"measurement", "text": "..."}]')),
                    ('source_model', models.CharField(blank=True, help_text='The doctor model that produced it.', max_length=200)),
                    ('language', models.CharField(default='en', max_length=16)),
                    ('split', models.CharField(blank=True, choices=[('train', 'Train'), ('validation', 'Validation'), ('test', 'Test'), ('', 'None')], default='', max_length=12)),
                    ('meta', models.JSONField(blank=True, default=dict)),
                    ('case', models.CharField(blank=True, default='', help_text='The question or patient case this text answers; several texts of one model on the same case are its replicates.', max_length=200)),
                    ('replicate', models.PositiveSmallIntegerField(blank=True, help_text="Which repetition of the model's answer to the case (1, 2, ...).", null=True)),
                    ('created_at', models.DateTimeField(default=django.utils.timezone.now)),
                    ('privacy_status', models.CharField(choices=[('clear', 'Nothing found'), ('flagged', 'Flagged for review'), ('redacted', 'Reviewed and redacted'), ('accepted', 'Reviewed, kept as is'), ('excluded', 'Excluded')], db_index=True, default='clear', max_length=10)),
                    ('privacy_matches', models.JSONField(blank=True, default=list, help_text='What the privacy filter found.')),
                    ('corpus', models.ForeignKey(on_delete=django.db.models.deletion.PROTECT, related_name='dialogues', to='annotation.corpus')),
                    ('deleted_by', models.ForeignKey(blank=True, editable=False, null=True, on_delete=django.db.models.deletion.PROTECT, related_name='+', to=settings.AUTH_USER_MODEL)),
                ],
                options={
                    'ordering': ['corpus', 'external_id'],
                    'indexes': [models.Index(fields=['corpus', 'split', 'language'], name='annotation__corpus__5023ca_idx')],
                    'constraints': [models.UniqueConstraint(fields=('corpus', 'external_id'), name='unique_dialogue_external_id')],
                },
            ), migrations.CreateModel(
                name='Assignment',
                fields=[
                    ('id', models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name='ID')),
                    ('status', models.CharField(choices=[('assigned', 'Not started'), ('in_progress', 'In progress'), ('submitted', 'Submitted'), ('skipped', 'Skipped'), ('returned', 'Returned for re-annotation'), ('withdrawn', 'Withdrawn (reassigned)')], db_index=True, default='assigned', max_length=12)),
                    ('position', models.PositiveIntegerField(default=0, help_text="Order in the rater's queue.")),
                    ('comment', models.TextField(blank=True, help_text="The rater's comment on the whole dialogue.")),
                    ('skip_reason', models.TextField(blank=True)),
                    ('flagged', models.BooleanField(default=False)),
                    ('flag_note', models.TextField(blank=True)),
                    ('return_note', models.TextField(blank=True, help_text='Why the coordinator returned it.')),
                    ('created_at', models.DateTimeField(default=django.utils.timezone.now)),
                    ('started_at', models.DateTimeField(blank=True, null=True)),
                    ('submitted_at', models.DateTimeField(blank=True, null=True)),
                    ('updated_at', models.DateTimeField(auto_now=True)),
                    ('rater', models.ForeignKey(on_delete=django.db.models.deletion.PROTECT, related_name='assignments', to=settings.AUTH_USER_MODEL)),
                    ('campaign', models.ForeignKey(on_delete=django.db.models.deletion.PROTECT, related_name='assignments', to='annotation.campaign')),
                    ('dialogue', models.ForeignKey(on_delete=django.db.models.deletion.PROTECT, related_name='assignments', to='annotation.dialogue')),
                ],
                options={
                    'ordering': ['campaign', 'rater', 'position', 'id'],
                    'indexes': [models.Index(fields=['rater', 'status'], name='annotation__rater_i_de6bcc_idx'), models.Index(fields=['campaign', 'status'], name='annotation__campaig_c754f3_idx')],
                    'constraints': [models.UniqueConstraint(fields=('campaign', 'dialogue', 'rater'), name='unique_assignment')],
                },
            ), migrations.CreateModel(
                name='Item',
                fields=[
                    ('id', models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name='ID')),
                    ('code', models.CharField(max_length=16)),
                    ('order', models.PositiveIntegerField(default=0)),
                    ('response_type', models.CharField(choices=[('binary', 'Binary (1 = met, 0 = not met)'), ('ordinal', 'Levels (one of its named levels)'), ('scale', 'Scale (a whole number from min to max)'), ('text', 'Free text (a comment, not analysed)'), ('level', 'Level of a levels item')], max_length=10)),
                    ('value', models.SmallIntegerField(blank=True, help_text='The value a level stands for (1, 2, 3).', null=True)),
                    ('scale_min', models.SmallIntegerField(blank=True, help_text='Scale items: the lowest point.', null=True)),
                    ('scale_max', models.SmallIntegerField(blank=True, help_text='Scale items: the highest point.', null=True)),
                    ('scale_step', models.DecimalField(blank=True, decimal_places=3, help_text='Scale items: the distance between points (e.g. 0.5); empty = 1.', max_digits=6, null=True)),
                    ('anchors', models.JSONField(blank=True, default=dict, help_text='Scale items: labels of some points, {"0": {"en": "...", "zh": "..."}}.')),
                    ('text_en', models.TextField()),
                    ('text_zh', models.TextField(blank=True)),
                    ('guidance_en', models.TextField(blank=True)),
                    ('guidance_zh', models.TextField(blank=True)),
                    ('dimension', models.ForeignKey(on_delete=django.db.models.deletion.CASCADE, related_name='items', to='annotation.dimension')),
                    ('parent', models.ForeignKey(blank=True, null=True, on_delete=django.db.models.deletion.CASCADE, related_name='levels', to='annotation.item')),
                    ('version', models.ForeignKey(on_delete=django.db.models.deletion.CASCADE, related_name='items', to='annotation.scaleversion')),
                ],
                options={
                    'ordering': ['version', 'order'],
                    'constraints': [models.UniqueConstraint(fields=('version', 'code'), name='unique_item_code')],
                },
            ), migrations.CreateModel(
                name='GoldLabel',
                fields=[
                    ('id', models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name='ID')),
                    ('value', annotation.scores.ScoreField()),
                    ('set_at', models.DateTimeField(default=django.utils.timezone.now)),
                    ('campaign', models.ForeignKey(on_delete=django.db.models.deletion.PROTECT, related_name='gold_labels', to='annotation.campaign')),
                    ('dialogue', models.ForeignKey(on_delete=django.db.models.deletion.PROTECT, related_name='gold_labels', to='annotation.dialogue')),
                    ('set_by', models.ForeignKey(null=True, on_delete=django.db.models.deletion.PROTECT, related_name='+', to=settings.AUTH_USER_MODEL)),
                    ('item', models.ForeignKey(on_delete=django.db.models.deletion.PROTECT, related_name='+', to='annotation.item')),
                ],
                options={
                    'constraints': [models.UniqueConstraint(fields=('campaign', 'dialogue', 'item'), name='unique_gold_label')],
                },
            ), migrations.CreateModel(
                name='Adjudication',
                fields=[
                    ('id', models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name='ID')),
                    ('value', annotation.scores.ScoreField()),
                    ('reason', models.TextField()),
                    ('decided_at', models.DateTimeField(default=django.utils.timezone.now)),
                    ('decided_by', models.ForeignKey(null=True, on_delete=django.db.models.deletion.PROTECT, related_name='+', to=settings.AUTH_USER_MODEL)),
                    ('campaign', models.ForeignKey(on_delete=django.db.models.deletion.PROTECT, related_name='adjudications', to='annotation.campaign')),
                    ('dialogue', models.ForeignKey(on_delete=django.db.models.deletion.PROTECT, related_name='adjudications', to='annotation.dialogue')),
                    ('item', models.ForeignKey(on_delete=django.db.models.deletion.PROTECT, related_name='+', to='annotation.item')),
                ],
                options={
                    'constraints': [models.UniqueConstraint(fields=('campaign', 'dialogue', 'item'), name='unique_adjudication')],
                },
            ), migrations.CreateModel(
                name='Label',
                fields=[
                    ('id', models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name='ID')),
                    ('value', annotation.scores.ScoreField(blank=True, null=True)),
                    ('comment', models.TextField(blank=True)),
                    ('client_seq', models.BigIntegerField(default=0, help_text='Last applied client sequence: older saves lose.')),
                    ('created_at', models.DateTimeField(default=django.utils.timezone.now)),
                    ('updated_at', models.DateTimeField(default=django.utils.timezone.now)),
                    ('assignment', models.ForeignKey(on_delete=django.db.models.deletion.PROTECT, related_name='labels', to='annotation.assignment')),
                    ('campaign', models.ForeignKey(on_delete=django.db.models.deletion.PROTECT, related_name='labels', to='annotation.campaign')),
                    ('dialogue', models.ForeignKey(on_delete=django.db.models.deletion.PROTECT, related_name='labels', to='annotation.dialogue')),
                    ('item', models.ForeignKey(on_delete=django.db.models.deletion.PROTECT, related_name='labels', to='annotation.item')),
                    ('rater', models.ForeignKey(on_delete=django.db.models.deletion.PROTECT, related_name='labels', to=settings.AUTH_USER_MODEL)),
                ],
                options={
                    'ordering': ['assignment', 'item__order'],
                    'indexes': [models.Index(fields=['campaign', 'item'], name='annotation__campaig_78f9ed_idx'), models.Index(fields=['dialogue', 'item'], name='annotation__dialogu_47cf7b_idx')],
                    'constraints': [models.UniqueConstraint(fields=('assignment', 'item'), name='unique_label_per_item')],
                },
            ), migrations.CreateModel(
                name='LabelChange',
                fields=[
                    ('id', models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name='ID')),
                    ('changed_at', models.DateTimeField(default=django.utils.timezone.now)),
                    ('old_value', annotation.scores.ScoreField(blank=True, null=True)),
                    ('new_value', annotation.scores.ScoreField(blank=True, null=True)),
                    ('old_comment', models.TextField(blank=True)),
                    ('new_comment', models.TextField(blank=True)),
                    ('source', models.CharField(choices=[('rater', 'Rater'), ('import', 'Import'), ('coordinator', 'Coordinator')], default='rater', max_length=12)),
                    ('reason', models.TextField(blank=True)),
                    ('changed_by', models.ForeignKey(blank=True, null=True, on_delete=django.db.models.deletion.PROTECT, related_name='+', to=settings.AUTH_USER_MODEL)),
                    ('label', models.ForeignKey(on_delete=django.db.models.deletion.PROTECT, related_name='changes', to='annotation.label')),
                ],
                options={
                    'ordering': ['label', 'changed_at', 'id'],
                },
            ), migrations.CreateModel(
                name='RandomSample',
                fields=[
                    ('id', models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name='ID')),
                    ('kind', models.CharField(choices=[('drawn', 'Drawn here with a recorded seed'), ('declared', 'Declared for imported labels')], max_length=10)),
                    ('size', models.PositiveIntegerField(help_text='Dialogues in the sample.')),
                    ('seed', models.BigIntegerField(blank=True, help_text='Drawn samples: the seed of the draw.', null=True)),
                    ('stratified', models.BooleanField(default=False, help_text='Drawn within each doctor model (equal allocation).')),
                    ('population', models.JSONField(default=list, help_text='The dialogues it was drawn from: [[id, doctor model], ...] ascending by id.')),
                    ('dialogues', models.JSONField(default=list, help_text='Ids of the sampled dialogues, ascending.')),
                    ('strata', models.JSONField(blank=True, default=dict, help_text='Per doctor model: {"population": N, "sample": n}.')),
                    ('note', models.TextField(blank=True)),
                    ('created_at', models.DateTimeField(default=django.utils.timezone.now)),
                    ('campaign', models.OneToOneField(on_delete=django.db.models.deletion.PROTECT, related_name='random_sample', to='annotation.campaign')),
                    ('created_by', models.ForeignKey(blank=True, null=True, on_delete=django.db.models.deletion.PROTECT, related_name='+', to=settings.AUTH_USER_MODEL)),
                ],
                options={
                    'abstract': False,
                },
            ), migrations.CreateModel(
                name='RaterProfile',
                fields=[
                    ('id', models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name='ID')),
                    ('is_external', models.BooleanField(default=False)),
                    ('created_at', models.DateTimeField(default=django.utils.timezone.now)),
                    ('user', models.OneToOneField(on_delete=django.db.models.deletion.PROTECT, related_name='rater_profile', to=settings.AUTH_USER_MODEL)),
                ],
            ), migrations.CreateModel(
                name='Redaction',
                fields=[
                    ('id', models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name='ID')),
                    ('field', models.CharField(choices=[('self_report', 'Self-report'), ('turn', 'Turn')], max_length=12)),
                    ('turn', models.PositiveIntegerField(blank=True, help_text='0-based turn index', null=True)),
                    ('start', models.PositiveIntegerField()),
                    ('end', models.PositiveIntegerField()),
                    ('source', models.CharField(choices=[('filter', 'Privacy filter, confirmed by a coordinator'), ('coordinator', 'Coordinator'), ('annotator', 'Annotator while rating')], max_length=12)),
                    ('reason', models.CharField(blank=True, max_length=300)),
                    ('created_at', models.DateTimeField(default=django.utils.timezone.now)),
                    ('revoked_at', models.DateTimeField(blank=True, null=True)),
                    ('created_by', models.ForeignKey(null=True, on_delete=django.db.models.deletion.PROTECT, related_name='+', to=settings.AUTH_USER_MODEL)),
                    ('dialogue', models.ForeignKey(on_delete=django.db.models.deletion.PROTECT, related_name='redactions', to='annotation.dialogue')),
                    ('revoked_by', models.ForeignKey(blank=True, null=True, on_delete=django.db.models.deletion.PROTECT, related_name='+', to=settings.AUTH_USER_MODEL)),
                ],
                options={
                    'ordering': ['dialogue', 'field', 'turn', 'start'],
                },
            ), migrations.CreateModel(
                name='Scale',
                fields=[
                    ('id', models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name='ID')),
                    ('slug', models.SlugField(unique=True)),
                    ('name_en', models.CharField(max_length=200)),
                    ('name_zh', models.CharField(blank=True, max_length=200)),
                    ('description', models.TextField(blank=True)),
                    ('source', models.TextField(blank=True, help_text='Where the instrument comes from (publication, section).')),
                    ('target', models.CharField(choices=[('dialogue', 'Dialogues'), ('answer', 'Answers to questions')], default='dialogue', max_length=10)),
                    ('language', models.CharField(choices=[('en', 'English'), ('zh', '中文')], default='en', help_text='The language the instrument was written in.', max_length=16)),
                    ('show_reference', models.BooleanField(default=True, help_text='Answers: show raters and judges the reference answer when an item has one.')),
                    ('created_at', models.DateTimeField(default=django.utils.timezone.now)),
                    ('created_by', models.ForeignKey(blank=True, null=True, on_delete=django.db.models.deletion.PROTECT, related_name='+', to=settings.AUTH_USER_MODEL)),
                    ('project', models.ForeignKey(on_delete=django.db.models.deletion.PROTECT, related_name='+', to='projects.project')),
                ],
                options={
                    'ordering': ['name_en'],
                },
            ), migrations.CreateModel(
                name='ScaleVersion',
                fields=[
                    ('id', models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name='ID')),
                    ('number', models.PositiveIntegerField()),
                    ('status', models.CharField(choices=[('draft', 'Draft'), ('published', 'Published'), ('retired', 'Retired')], default='draft', max_length=12)),
                    ('note', models.TextField(blank=True, help_text='What changed in this version and why.')),
                    ('created_at', models.DateTimeField(default=django.utils.timezone.now)),
                    ('published_at', models.DateTimeField(blank=True, null=True)),
                    ('locked_at', models.DateTimeField(blank=True, help_text='Set when the version is first used.', null=True)),
                    ('locked_reason', models.CharField(blank=True, max_length=200)),
                    ('judge_keys', models.JSONField(blank=True, default=dict, help_text='How a judge\'s own answer keys map to item codes, e.g. {"question 1": "comprehension"}: its answers are read with these keys as well as the codes.')),
                    ('based_on', models.ForeignKey(blank=True, null=True, on_delete=django.db.models.deletion.PROTECT, related_name='+', to='annotation.scaleversion')),
                    ('created_by', models.ForeignKey(blank=True, null=True, on_delete=django.db.models.deletion.PROTECT, related_name='+', to=settings.AUTH_USER_MODEL)),
                    ('project', models.ForeignKey(on_delete=django.db.models.deletion.PROTECT, related_name='+', to='projects.project')),
                    ('scale', models.ForeignKey(on_delete=django.db.models.deletion.PROTECT, related_name='versions', to='annotation.scale')),
                ],
                options={
                    'ordering': ['scale', 'number'],
                    'constraints': [models.UniqueConstraint(fields=('scale', 'number'), name='unique_scale_version_number')],
                },
            ), migrations.CreateModel(
                name='CampaignRater',
                fields=[
                    ('id', models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name='ID')),
                    ('team', models.CharField(blank=True, max_length=100)),
                    ('capacity', models.PositiveIntegerField(blank=True, help_text='Most dialogues to give; empty = no limit', null=True)),
                    ('available_until', models.DateField(blank=True, null=True)),
                    ('active', models.BooleanField(default=True, help_text='Unavailable raters get no new dialogues.')),
                    ('added_at', models.DateTimeField(default=django.utils.timezone.now)),
                    ('added_by', models.ForeignKey(blank=True, null=True, on_delete=django.db.models.deletion.PROTECT, related_name='+', to=settings.AUTH_USER_MODEL)),
                    ('campaign', models.ForeignKey(on_delete=django.db.models.deletion.CASCADE, related_name='raters', to='annotation.campaign')),
                    ('user', models.ForeignKey(on_delete=django.db.models.deletion.PROTECT, related_name='campaign_roles', to=settings.AUTH_USER_MODEL)),
                ],
                options={
                    'ordering': ['campaign', 'user__username'],
                    'constraints': [models.UniqueConstraint(fields=('campaign', 'user'), name='unique_campaign_rater')],
                },
            )],
        ),
        migrations.RunPython(load_mini_cex, migrations.RunPython.noop),
    ]
