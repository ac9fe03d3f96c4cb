"""Pages for the home dashboard, scales and corpora. Views stay thin; logic lives in services."""

from __future__ import annotations

from django.apps import apps as django_apps
from django.contrib import messages
from django.contrib.auth import get_user_model
from django.contrib.auth.decorators import login_required
from django.core.exceptions import ValidationError
from django.db.models import Count, Q
from django.http import HttpResponseBadRequest
from django.shortcuts import redirect, render
from django.urls import reverse
from django.utils.translation import gettext
from django.views.decorators.http import require_POST
from rest_framework.authtoken.models import Token

from annotation import demo, instruments, rating_language, scales
from annotation.campaigns import progress_counts, rating_projects
from annotation.forms import DimensionForm, ItemForm, NewScaleForm, NewVersionForm
from annotation.models import Assignment, Campaign, Corpus, Dialogue, Item, PrivacyStatus, Scale, ScaleVersion
from core.site.paging import paginate
from projects import scoping, tokens
from projects.access import current, get_in_project_or_404, request_has_role, role_required
from projects.roles import ADMIN, ANALYST, COORDINATOR, ROLE_LABELS, ROLES, effective_roles

STAFF_ROLES = (COORDINATOR, ANALYST)


def scale_language(request) -> str:
    """The language the scale's texts are shown in: the page's own (Chinese pages show the items in Chinese) until
    ?lang= switches to the other one, which is then remembered (``annotation.rating_language.chosen``)."""
    return rating_language.chosen(request)


@login_required
def home(request):
    project = getattr(request, "project", None)
    held = effective_roles(request.user, project)
    # A physician's queue spans every project where they rate, whichever project the page is in.
    queue_projects = rating_projects(request.user)
    rates_somewhere = bool(queue_projects)
    context: dict = {"held": held, "no_role": not held and not rates_somewhere, "rates_somewhere": rates_somewhere,
                     "start_here": demo.start_here(request.user, held, project)}
    if project is not None and request_has_role(request, COORDINATOR, ANALYST):
        context["scales"] = [(scale, scale.current_version()) for scale in Scale.objects.order_by("name_en")]
        context["corpora"] = corpora_with_counts()
        context["campaigns"] = Campaign.objects.alive().select_related("corpus")[:20]
    if rates_somewhere:
        with scoping.in_project(queue_projects):
            context["my_campaigns"] = physician_queue(request.user)
    # Work of other kinds waiting for this physician (pending comparisons): each app says, as with start_here.
    context["other_work"] = [row for config in django_apps.get_app_configs()
                             for row in getattr(config, "physician_work", lambda user: [])(request.user)]
    # one work table: its Project column when the campaigns and the other work span several projects
    context["several_projects"] = len({row["campaign__project__name"] for row in context.get("my_campaigns", [])}
                                      | {row["project"] for row in context["other_work"] if "project" in row}) > 1
    if ADMIN in held:
        User = get_user_model()
        context["role_counts"] = [
            (ROLE_LABELS[role], User.objects.filter(groups__name=role, is_active=True).count() if role == ADMIN
             else User.objects.filter(memberships__role=role, memberships__project=project, is_active=True)
             .distinct().count()) for role in ROLES
        ]
    return render(request, "annotation/home.html", context)


def physician_queue(user) -> list[dict]:
    """The physician's campaigns with their own progress (never other raters' work), in the active scope (the
    home page's: every project where they are a physician)."""
    rows = (Assignment.objects.filter(rater=user, campaign__deleted_at__isnull=True)
            .exclude(status=Assignment.Status.WITHDRAWN)
            .values("campaign_id", "campaign__name", "campaign__deadline", "campaign__status",
                    "campaign__project__name", "campaign__scale_version__scale__name_en",
                    "campaign__scale_version__scale__slug")
            .annotate(n_submitted=Count("id", filter=Q(status=Assignment.Status.SUBMITTED)),
                      n_skipped=Count("id", filter=Q(status=Assignment.Status.SKIPPED)),
                      n_all=Count("id"),
                      returned=Count("id", filter=Q(status=Assignment.Status.RETURNED)))
            .order_by("campaign__deadline", "campaign__name"))
    # the counts of every page (annotation.campaigns.progress_counts): done = submitted, skipped apart
    rows = [{**row, **progress_counts({Assignment.Status.SUBMITTED: row["n_submitted"],
                                       Assignment.Status.SKIPPED: row["n_skipped"],
                                       Assignment.Status.ASSIGNED: row["n_all"] - row["n_submitted"]
                                       - row["n_skipped"]})} for row in rows]
    several = len({row["campaign__project__name"] for row in rows}) > 1
    return [{**row, "several_projects": several} for row in rows]


def corpora_with_counts():
    return Corpus.objects.alive().annotate(
        n_dialogues=Count("dialogues", filter=Q(dialogues__deleted_at__isnull=True)),
        n_flagged=Count("dialogues", filter=Q(dialogues__deleted_at__isnull=True,
                                              dialogues__privacy_status=PrivacyStatus.FLAGGED)),
    ).order_by("-is_demo", "name")


@login_required
def scale_list(request):
    """The project's scales and the library (other projects' published versions, read-only)."""
    rows = [(scale, scale.versions.order_by("-number")) for scale in Scale.objects.order_by("name_en")]
    can_build = request_has_role(request, COORDINATOR)
    ready = [r for r in instruments.shipped_available() if not r["installed"]] if can_build else []
    return render(request, "annotation/scale_list.html", {"rows": rows, "can_build": can_build, "ready": ready})


@login_required
def scale_detail(request, slug: str, number: int | None = None):
    scale = get_in_project_or_404(Scale, request, slug=slug)
    versions = scale.versions.all()
    if number:
        version = get_in_project_or_404(versions, request, number=number)
    else:
        version = (versions.filter(status=ScaleVersion.Status.PUBLISHED).order_by("-number").first()
                   or versions.order_by("-number").first())
    return render(request, "annotation/scale_detail.html", _scale_context(request, scale, version))


def _scale_context(request, scale: Scale, version: ScaleVersion | None, **forms) -> dict:
    if version is None:
        return {"scale": scale, "version": None}
    lang = scale_language(request)
    dimensions = []
    items = list(version.items.select_related("dimension", "parent").order_by("order"))
    dims = list(version.dimensions.order_by("order"))
    for dim in dims:
        dim_items = [i for i in items if i.dimension_id == dim.pk and i.parent_id is None]
        for item in dim_items:
            item.level_list = [lv for lv in items if lv.parent_id == item.pk]
        dimensions.append((dim, dim_items))
    project = current(request)
    can_version = request_has_role(request, COORDINATOR) and scale.editable_in(project)
    can_edit = can_version and version.editable_in(project) and not version.is_locked
    context = {
        "scale": scale, "version": version, "lang": lang, "dimensions": dimensions,
        "versions": scale.versions.order_by("-number"),
        "library": not scale.editable_in(project),
        "n_secondary": sum(1 for i in items if i.response_type in (Item.ResponseType.BINARY, Item.ResponseType.LEVEL,
                                                                   Item.ResponseType.SCALE)),
        "n_rating": sum(1 for i in items if i.response_type in Item.SCORED_TYPES),
        "n_text": sum(1 for i in items if i.response_type == Item.ResponseType.TEXT),
        "can_edit": can_edit,
        "can_version": can_version,
        "new_version_form": NewVersionForm() if can_version else None,
    }
    if can_edit:
        context["dimension_form"] = forms.get("dimension_form") or DimensionForm()
        context["item_form"] = forms.get("item_form") or ItemForm(dimensions=dims)
    return context


@role_required(COORDINATOR)
def scale_new(request):
    """Build an instrument in the browser: a new scale with an empty draft, then dimensions and items."""
    form = NewScaleForm(request.POST or None)
    if request.method == "POST" and form.is_valid():
        try:
            version = instruments.create_scale(**form.cleaned_data, user=request.user)
        except instruments.InstrumentError as exc:
            _form_errors(form, exc, {"slug": "slug", "name": "name_en", "language": "language", "target": "target"})
        else:
            messages.success(request, f"Created {version.scale}: add its dimensions and items, then publish it.")
            return redirect("scale-version", slug=version.scale.slug, number=version.number)
    return render(request, "annotation/scale_new.html", {"form": form})


def _form_errors(form, exc: instruments.InstrumentError, fields: dict[str, str]) -> None:
    """Show "path: message" errors of the instrument rules on the form field the path names."""
    for error in exc.errors:
        path, _, message = error.partition(": ")
        parts = path.replace("item.", "", 1).replace("response.", "", 1).split(".")
        key = parts[0].split("[")[0]
        field = fields.get(key)
        form.add_error(field if field in form.fields else None, message if field in form.fields else error)


ITEM_ERROR_FIELDS = {"code": "code", "dimension": "dimension", "text": "text_en", "guidance": "guidance_en",
                     "type": "response", "min": "scale_min", "max": "scale_max", "step": "scale_step",
                     "anchors": "anchors",
                     "levels": "levels"}


def _draft(request, slug: str, number: int) -> ScaleVersion:
    """A version the request's project drafted, of a scale it owns (edits, publishing); any other is a 404 here."""
    project = current(request)
    return get_in_project_or_404(ScaleVersion.objects.select_related("scale"), request, scale__slug=slug,
                                 number=number, scale__project=project, project=project)


def _own_version(request, slug: str, number: int) -> ScaleVersion:
    """A version of a scale the request's project owns that it sees (its own drafts and the published versions;
    another project's draft of the scale is not among them): what a new version is copied from."""
    return get_in_project_or_404(ScaleVersion.objects.select_related("scale"), request, scale__slug=slug,
                                 number=number, scale__project=current(request))


@require_POST
@role_required(COORDINATOR)
def scale_add_dimension(request, slug: str, number: int):
    version = _draft(request, slug, number)
    form = DimensionForm(request.POST)
    if form.is_valid():
        try:
            instruments.add_dimension(version, **form.cleaned_data, user=request.user)
        except (instruments.InstrumentError, ValidationError) as exc:
            if isinstance(exc, instruments.InstrumentError):
                _form_errors(form, exc, {"code": "code", "name": "name_en"})
            else:
                form.add_error(None, " ".join(exc.messages))
        else:
            messages.success(request, f"Dimension {form.cleaned_data['code']} added.")
            return redirect("scale-version", slug=slug, number=number)
    context = _scale_context(request, version.scale, version, dimension_form=form)
    return render(request, "annotation/scale_detail.html", context, status=400)


@require_POST
@role_required(COORDINATOR)
def scale_add_item(request, slug: str, number: int):
    version = _draft(request, slug, number)
    form = ItemForm(request.POST, dimensions=version.dimensions.order_by("order"))
    if form.is_valid():
        try:
            item = instruments.add_item(version, form.entry(), user=request.user)
        except (instruments.InstrumentError, ValidationError) as exc:
            if isinstance(exc, instruments.InstrumentError):
                _form_errors(form, exc, ITEM_ERROR_FIELDS)
            else:
                form.add_error(None, " ".join(exc.messages))
        else:
            messages.success(request, f"Item {item.code} added.")
            return redirect(f"{reverse('scale-version', args=[slug, number])}#item-{item.pk}")
    context = _scale_context(request, version.scale, version, item_form=form)
    return render(request, "annotation/scale_detail.html", context, status=400)


@require_POST
@role_required(COORDINATOR)
def item_remove(request, pk: int):
    item = get_in_project_or_404(Item.objects.select_related("version__scale"), request, pk=pk,
                                 parent__isnull=True, version__project=current(request))
    version = item.version
    try:
        instruments.remove_item(item, request.user)
    except ValidationError as exc:
        messages.error(request, " ".join(exc.messages))
    else:
        messages.success(request, f"Item {item.code} removed from draft version {version.number}.")
    return redirect("scale-version", slug=version.scale.slug, number=version.number)


@require_POST
@role_required(COORDINATOR)
def scale_install(request, slug: str):
    """Install one of the ready instruments shipped with the app (HIVMedQA, AgentClinic)."""
    try:
        version, created = instruments.install_shipped(slug, request.user)
    except instruments.InstrumentError as exc:
        messages.error(request, str(exc))
        return redirect("scale-list")
    if created:
        messages.success(request, f"Installed {version}.")
    return redirect("scale-version", slug=version.scale.slug, number=version.number)


@require_POST
@role_required(COORDINATOR)
def scale_new_version(request, slug: str, number: int):
    version = _own_version(request, slug, number)
    form = NewVersionForm(request.POST)
    if not form.is_valid():
        messages.error(request, "Say why a new version is needed.")
        return redirect("scale-version", slug=slug, number=number)
    draft = scales.new_version(version, request.user, form.cleaned_data["note"])
    messages.success(request, f"Created draft version {draft.number} from version {version.number}. "
                              "Edit its items, then publish it.")
    return redirect("scale-version", slug=slug, number=draft.number)


@require_POST
@role_required(COORDINATOR)
def scale_publish(request, slug: str, number: int):
    version = _draft(request, slug, number)
    try:
        scales.publish(version, request.user)
    except ValueError as exc:
        messages.error(request, str(exc))
    else:
        messages.success(request, f"Version {version.number} is published and can no longer be changed.")
    return redirect("scale-version", slug=slug, number=number)


ITEM_FIELDS = ("text_en", "text_zh", "guidance_en", "guidance_zh")


@role_required(COORDINATOR)
def item_edit(request, pk: int):
    """htmx partial: show or save one item's texts in a draft version."""
    item = get_in_project_or_404(Item.objects.select_related("version__scale"), request, pk=pk,
                                 version__project=current(request))
    lang = scale_language(request)
    if item.version.is_locked:
        return HttpResponseBadRequest(f"Version {item.version.number} is locked; create a new version to edit it.")
    errors = {}
    if request.method == "POST":
        for name in ITEM_FIELDS:
            setattr(item, name, request.POST.get(name, "").strip())
        language = item.version.scale.language
        if not (item.text_zh if language == "zh" else item.text_en):
            field = "text_zh" if language == "zh" else "text_en"
            errors[field] = f"{'Chinese' if language == 'zh' else 'English'} text is required (the instrument's " \
                            "language)."
        if not errors:
            try:
                item.save()
            except ValidationError as exc:
                errors["form"] = " ".join(exc.messages)
            else:
                return render(request, "annotation/partials/item_row.html",
                              {"item": _with_levels(item), "lang": lang, "can_edit": True, "saved": True})
    if request.GET.get("cancel"):
        return render(request, "annotation/partials/item_row.html",
                      {"item": _with_levels(item), "lang": lang, "can_edit": True})
    return render(request, "annotation/partials/item_form.html", {"item": item, "errors": errors})


def _with_levels(item: Item) -> Item:
    item.level_list = list(item.levels.order_by("order"))
    return item


@role_required(*STAFF_ROLES)
def corpus_list(request):
    return render(request, "annotation/corpus_list.html", {"corpora": corpora_with_counts()})


@role_required(*STAFF_ROLES)
def corpus_detail(request, pk: int):
    corpus = get_in_project_or_404(Corpus.objects.alive(), request, pk=pk)
    dialogues = corpus.dialogues.alive().order_by("external_id")
    summary = dialogues.values("language", "split", "source_model").annotate(n=Count("id")).order_by(
        "language", "split", "source_model"
    )
    summary = list(summary)
    # A page of the dialogues at a time; the composition above counts them all (its sum is the pager's count).
    pager = paginate(request, dialogues, label=gettext("dialogues"), count=sum(row["n"] for row in summary),
                     anchor="dialogues")
    return render(request, "annotation/corpus_detail.html",
                  {"corpus": corpus, "dialogues": pager.rows, "pager": pager, "summary": summary,
                   "flagged_count": dialogues.filter(privacy_status=PrivacyStatus.FLAGGED).count()})


@role_required(*STAFF_ROLES)
def dialogue_detail(request, pk: int):
    from annotation.campaigns import rater_names
    from annotation.dialogues import view_model
    from annotation.models import Redaction

    dialogue = get_in_project_or_404(Dialogue.objects.alive().select_related("corpus"), request, pk=pk)
    redactions = list(dialogue.redactions.select_related("created_by", "revoked_by").order_by("created_at"))
    # Redactions made while rating name a physician: analysts see the rater's pseudonym.
    by_raters = rater_names([r.created_by for r in redactions if r.source == Redaction.Source.ANNOTATOR],
                            request.user, project=dialogue.corpus.project_id)
    for redaction in redactions:
        redaction.by_name = by_raters.get(redaction.created_by_id) or getattr(redaction.created_by, "username", "")
    return render(request, "annotation/dialogue_detail.html",
                  {"dialogue": dialogue, "view": view_model(dialogue), "redactions": redactions})


@require_POST
@role_required(COORDINATOR)
def redaction_revoke(request, pk: int):
    from annotation.dialogues import revoke_redaction
    from annotation.models import Redaction

    redaction = get_in_project_or_404(Redaction.objects.select_related("dialogue"), request, pk=pk,
                                      revoked_at__isnull=True)
    try:
        revoke_redaction(redaction, request.user, request.POST.get("reason", ""))
    except ValueError as exc:
        messages.error(request, str(exc))
    else:
        messages.success(request, "Redaction undone; the text is visible again.")
    return redirect("dialogue-detail", pk=redaction.dialogue_id)


@login_required
def api_token(request):
    """The signed-in user's API token: when it expires, and a button to make a new one."""
    if request.method == "POST":
        if request.POST.get("action") == "delete":
            Token.objects.filter(user=request.user).delete()
            messages.success(request, "Your API token was deleted; it no longer works.")
        else:
            tokens.replace(request.user)
            messages.success(request, "A new API token was made; the previous one no longer works.")
        return redirect("api-token-page")
    token = Token.objects.filter(user=request.user).first()
    return render(request, "registration/api_token.html", {
        "token": token, "expires": tokens.expires_at(token) if token else None,
        "expired": bool(token) and tokens.is_expired(token), "days": tokens.lifetime().days})
