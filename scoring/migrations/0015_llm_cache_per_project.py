"""The LLM cache is per project, so that no project learns what another has judged: each call records the project that sent it, and its key includes that
project (scoring.llm.gateway.request_key), so another project's identical request is not answered from it. Existing
calls take the project of the first unit that used them and are re-keyed the same way; a call no unit used keeps
its key (reachable only when an administrator shares the cache)."""

import hashlib

import django.db.models.deletion
from django.db import migrations, models

# (model, field holding the call, path from the model to its project)
USERS = (
    ("JudgeResult", "call", "run__project"),
    ("PreferenceVerdict", "call", "run__project"),
    ("GenerationTurn", "call", "generated__job__project"),
    ("GenerationCall", "call", "job__project"),
    ("GeneratedDialogue", "moderator_call", "job__project"),
)


def project_key(project_id: int, key: str) -> str:
    """As scoring.llm.gateway.project_key."""
    return hashlib.sha256(f"project:{project_id}:{key}".encode()).hexdigest()


def per_project(apps, schema_editor):
    LLMCall = apps.get_model("scoring", "LLMCall")
    owner: dict[int, int] = {}
    for model_name, field, path in USERS:
        model = apps.get_model("scoring", model_name)
        rows = (model.objects.filter(**{f"{field}__isnull": False}).order_by("pk")
                .values_list(f"{field}_id", path).iterator(chunk_size=5000))
        for call_id, project_id in rows:
            if project_id is not None:
                owner.setdefault(call_id, project_id)
    for call in LLMCall.objects.filter(pk__in=list(owner)).only("pk", "key").iterator(chunk_size=2000):
        project_id = owner[call.pk]
        LLMCall.objects.filter(pk=call.pk).update(project_id=project_id, key=project_key(project_id, call.key))


class Migration(migrations.Migration):

    dependencies = [
        ("scoring", "0014_project_moves_to_projects"),
        ("projects", "0002_names_pseudonyms_last_project"),
    ]

    operations = [
        migrations.AddField(
            model_name="llmcall",
            name="project",
            field=models.ForeignKey(blank=True, null=True, on_delete=django.db.models.deletion.PROTECT,
                                    related_name="+", to="projects.project",
                                    help_text="The project that sent (and paid for) the request."),
        ),
        migrations.RunPython(per_project, migrations.RunPython.noop),
    ]
