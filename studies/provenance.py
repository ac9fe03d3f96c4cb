"""What the study's records say about where its data came from: the facts the methods text and the TRIPOD-LLM
checklist (:mod:`studies.methods`) may state, and nothing more.

- **Labels**: rated in the app (the rating page never shows a text's model; a rater who also holds a coordinator's or
  analyst's role in the project could see the models on other pages, so their blinding is not assured) or imported
  from a file (its name and SHA-256 from the import's audit entry), and who the raters are: the project's physicians
  for labels rated in the app, what the coordinator stated on importing (``Campaign.rater_kind``) otherwise.
- **Random samples**: drawn here (seed, population, size) or declared for imported labels (no seed).
- **Judge runs**: live (model and parameters of the frozen configuration, its prompt set, the requests recorded) or
  imported (file and SHA-256, model as the file named it, prompt text only where the file carried it).
- **The instrument**: what it rates (dialogues or answers) and where it comes from (its ``source``).

Plain data (JSON-able), kept in the methods page's cache with the rest of its view."""

from __future__ import annotations

from typing import Any

#: The raters' kinds as the methods text names them (``Campaign.RaterKind``); "" is not recorded.
RATER_KINDS = {"physicians": "physicians", "experts": "human experts (not physicians)",
               "llm": "LLM scoring iterations"}


def study_provenance(project) -> dict[str, Any]:
    """The recorded provenance of ``project``'s study (see the module's docstring)."""
    from django.contrib.auth import get_user_model
    from django.contrib.contenttypes.models import ContentType
    from django.db.models import Count, Q

    from annotation.models import Campaign, Label, RandomSample, ScaleVersion
    from projects.models import AuditEvent, Membership
    from projects.roles import ANALYST, COORDINATOR, PHYSICIAN
    from scoring.judges.models import ImportedPrompt, JudgeResult, Prompt
    from studies import figure_rows

    campaigns = list(Campaign.objects.filter(project=project).select_related("scale_version__scale").order_by("pk"))
    runs = figure_rows.run_keys(project)
    versions = {c.scale_version_id: c.scale_version for c in campaigns}
    run_versions = [r.scale_version_id or (r.snapshot or {}).get("scale_version") for r in runs.values()]
    extra = set(filter(None, run_versions)) - set(versions)
    versions.update({v.pk: v for v in ScaleVersion.objects.filter(pk__in=extra).select_related("scale")})

    per_campaign = {row["campaign"]: row for row in Label.objects.filter(campaign__project=project).values(
        "campaign").annotate(labels=Count("id"), raters=Count("rater", distinct=True)).order_by()}
    raters_of: dict[int, set[int]] = {}
    for campaign_id, rater_id in (Label.objects.filter(campaign__project=project).values_list("campaign", "rater")
                                  .distinct().order_by()):
        raters_of.setdefault(campaign_id, set()).add(rater_id)
    everyone = set().union(*raters_of.values()) if raters_of else set()
    physicians = set(Membership.objects.filter(project=project, role=PHYSICIAN, user__in=everyone)
                     .values_list("user", flat=True))
    sees_models = set(Membership.objects.filter(project=project, role__in=[COORDINATOR, ANALYST], user__in=everyone)
                      .values_list("user", flat=True))
    sees_models |= set(get_user_model().objects.filter(Q(is_superuser=True) | Q(groups__name="admin"), pk__in=everyone)
                       .values_list("pk", flat=True))  # administrators (projects.models.is_admin) see every page
    imports: dict[str, list[dict]] = {}
    campaign_type = ContentType.objects.get_for_model(Campaign)
    for target, data in (AuditEvent.objects.filter(action="labels.import", target_type=campaign_type,
                                                   target_id__in=[str(c.pk) for c in campaigns])
                         .order_by("at", "pk").values_list("target_id", "data")):
        imports.setdefault(target, []).append({"file": (data or {}).get("file", ""),
                                               "sha256": (data or {}).get("sha256", "")})

    out_campaigns = []
    for c in campaigns:
        counts = per_campaign.get(c.pk, {"labels": 0, "raters": 0})
        raters = raters_of.get(c.pk, set())
        imported = c.phase == Campaign.Phase.IMPORTED
        kind = c.rater_kind if imported else "physicians" if raters and raters <= physicians else ""
        out_campaigns.append({
            "name": c.name, "phase": c.phase, "deleted": c.is_deleted, "labels": counts["labels"],
            "raters": counts["raters"], "origin": "imported" if imported else "app", "rater_kind": kind,
            "model_visible_raters": 0 if imported else len(raters & sees_models),
            "files": imports.get(str(c.pk), []), "target": c.scale_version.scale.target})

    samples = [{"campaign": s.campaign.name, "kind": s.kind, "size": s.size, "seed": s.seed,
                "population": len(s.population or []), "stratified": s.stratified}
               for s in RandomSample.objects.filter(campaign__project=project).select_related("campaign")
               .order_by("pk")]

    prompt_counts = dict(Prompt.objects.filter(prompt_set__project=project).values("prompt_set")
                         .annotate(n=Count("id")).values_list("prompt_set", "n").order_by())
    results = dict(JudgeResult.objects.filter(run__project=project).values("run").annotate(n=Count("id"))
                   .values_list("run", "n").order_by())
    calls = dict(JudgeResult.objects.filter(run__project=project, call__isnull=False).values("run")
                 .annotate(n=Count("call", distinct=True)).values_list("run", "n").order_by())
    with_prompt = dict(ImportedPrompt.objects.filter(result__run__project=project).values("result__run")
                       .annotate(n=Count("id")).values_list("result__run", "n").order_by())
    out_runs = []
    for key, run in runs.items():
        snap = run.snapshot or {}
        version = versions.get(run.scale_version_id or snap.get("scale_version"))
        entry = {"key": key, "name": run.name, "source": run.source, "model": snap.get("model") or "",
                 "results": results.get(run.pk, 0), "target": version.scale.target if version else ""}
        if run.is_imported:
            entry.update(file=run.source_file, sha256=run.source_sha256, prompts_given=with_prompt.get(run.pk, 0))
        else:
            entry.update({name: snap.get(name) for name in ("temperature", "max_tokens", "seed", "mode")})
            entry.update(prompt_set=snap.get("prompt_set_name") or "",
                         prompts=prompt_counts.get(snap.get("prompt_set"), 0), calls=calls.get(run.pk, 0),
                         requests_sent=run.requests_sent)
        out_runs.append(entry)

    # the instruments the study used: a campaign's with labels, a judge run's
    used = {c.scale_version_id for c in campaigns if per_campaign.get(c.pk)} | set(filter(None, run_versions))
    instruments = [{"key": f"{v.scale.slug}@v{v.number}", "slug": v.scale.slug, "name": v.scale.name_en,
                    "target": v.scale.target, "source": v.scale.source}
                   for v in sorted(versions.values(), key=lambda v: v.pk) if v.pk in used]
    from annotation.models import Dialogue

    texts = dict(Dialogue.objects.filter(corpus__project=project).values("corpus__kind").annotate(n=Count("id"))
                 .values_list("corpus__kind", "n").order_by())
    targets = {i["target"] for i in instruments}
    target = targets.pop() if len(targets) == 1 else ("mixed" if targets else "")
    return {"instruments": instruments, "target": target, "texts": texts, "campaigns": out_campaigns,
            "samples": samples, "judge_runs": out_runs, "software": _software()}


def _software() -> dict[str, str]:
    """The versions of the packages the figures were computed with (the archive's software.json has the rest)."""
    import platform
    from importlib.metadata import PackageNotFoundError, version

    out = {"Python": platform.python_version()}
    for name in ("minicex-workbench", "numpy", "pandas", "scipy", "statsmodels", "pingouin", "krippendorff"):
        try:
            out[name] = version(name)
        except PackageNotFoundError:
            out[name] = "not recorded"
    return out
