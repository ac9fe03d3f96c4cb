"""REST API: the instrument (read-only), corpora and dialogues, campaigns, assignments and labels, and the
shared exception handler.

Who sees what (DESIGN.md section 1): physicians reach only their own assignments, see dialogues there under an
opaque per-campaign id (no external or database id, no source model or metadata) with redactions applied, and
never read other raters' or judges' labels; coordinators, analysts and admins read corpora, campaigns and
labels; analysts see raters by pseudonym unless the campaign allows names.
"""

from __future__ import annotations

import datetime
import logging

from django.core.exceptions import PermissionDenied as DjangoPermissionDenied
from django.core.exceptions import ValidationError as DjangoValidationError
from django.db import IntegrityError
from django.db.models import Count, Prefetch, Q
from django.http import Http404
from django.utils import timezone
from django.utils.dateparse import parse_datetime
from django.utils.translation import gettext
from django.utils.translation import gettext_lazy as _
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiParameter, extend_schema, extend_schema_field, extend_schema_view
from rest_framework import mixins, serializers, status, viewsets
from rest_framework.authtoken.serializers import AuthTokenSerializer
from rest_framework.decorators import action
from rest_framework.exceptions import ParseError
from rest_framework.permissions import BasePermission, IsAuthenticated
from rest_framework.response import Response
from rest_framework.reverse import reverse
from rest_framework.views import APIView
from rest_framework.views import exception_handler as drf_exception_handler

from annotation import labels as label_service
from annotation import sampling, scores
from annotation.campaigns import (
    CampaignClosed,
    CampaignError,
    add_rater,
    assign,
    blind_id,
    create_campaign,
    rater_progress,
    rating_projects,
    shows_names,
)
from annotation.dialogues import redacted
from annotation.labels import LabelError
from annotation.models import (
    Assignment,
    Campaign,
    CampaignRater,
    Corpus,
    Dialogue,
    Dimension,
    Item,
    Label,
    Language,
    PrivacyStatus,
    RandomSample,
    Redaction,
    Scale,
    ScaleVersion,
)
from core.site import failures as db_errors
from core.site import throttle
from projects import tokens
from projects.access import request_has_role, widen
from projects.models import project_id_of
from projects.pseudonyms import pseudonym
from projects.roles import ANALYST, COORDINATOR, PHYSICIAN, has_role, roles_in
from projects.services import member_users


def _summary(errors) -> str:
    """One readable line from DRF/Django error structures ({"field": ["msg"]}, ["msg"], "msg")."""
    if isinstance(errors, dict):
        parts = []
        for key, value in errors.items():
            text = _summary(value)
            parts.append(text if key in ("non_field_errors", "__all__", "detail") else f"{key}: {text}")
        return "; ".join(parts)
    if isinstance(errors, list | tuple):
        return " ".join(_summary(e) for e in errors)
    return str(errors)


def exception_handler(exc, context):
    """DRF's handler, plus the services' refusals and Django errors, always as JSON with a "detail" message.
    A database outage is a 503 with Retry-After (one warning line in the log, no traceback)."""
    request = context.get("request")
    if db_errors.is_database_outage(exc):
        db_errors.log_outage(request, exc)
        response = Response({"detail": db_errors.OUTAGE_MESSAGE}, status=status.HTTP_503_SERVICE_UNAVAILABLE,
                            headers={"Retry-After": str(db_errors.RETRY_AFTER_SECONDS)})
        response._has_been_logged = True  # Django would log a second line for the 5xx
        return response
    if db_errors.is_refused_value(exc):
        db_errors.log_refused_value(request, exc)
        return Response({"detail": db_errors.DATA_MESSAGE}, status=status.HTTP_400_BAD_REQUEST)
    if isinstance(exc, LabelError):
        return Response({"detail": str(exc)}, status=exc.status)
    if isinstance(exc, CampaignClosed):
        return Response({"detail": str(exc)}, status=status.HTTP_409_CONFLICT)
    if isinstance(exc, CampaignError):
        return Response({"detail": str(exc)}, status=status.HTTP_400_BAD_REQUEST)
    if isinstance(exc, IntegrityError):
        return Response({"detail": "This conflicts with data saved at the same time; reload and try again."},
                        status=status.HTTP_409_CONFLICT)
    if isinstance(exc, DjangoValidationError):
        if hasattr(exc, "error_dict"):
            detail = {"detail": _summary(exc.message_dict), **exc.message_dict}
        else:
            detail = {"detail": " ".join(exc.messages)}
        return Response(detail, status=status.HTTP_400_BAD_REQUEST)
    if isinstance(exc, DjangoPermissionDenied):
        return Response({"detail": str(exc) or "Permission denied."}, status=status.HTTP_403_FORBIDDEN)
    if isinstance(exc, Http404):
        return Response({"detail": "Not found."}, status=status.HTTP_404_NOT_FOUND)
    response = drf_exception_handler(exc, context)
    if response is None:
        # A bug: logged with its traceback as Django would, answered as JSON (also with DEBUG on).
        logging.getLogger("django.request").error("Internal Server Error: %s", getattr(request, "path", "?"),
                                                  exc_info=(type(exc), exc, exc.__traceback__))
        response = Response({"detail": "The server failed to answer this request; the error was logged."},
                            status=status.HTTP_500_INTERNAL_SERVER_ERROR)
        response._has_been_logged = True
    elif isinstance(response.data, dict) and "detail" not in response.data:
        response.data = {"detail": _summary(response.data), **response.data}
    elif isinstance(response.data, list):
        response.data = {"detail": _summary(response.data)}
    return response


class LevelSerializer(serializers.ModelSerializer):
    class Meta:
        model = Item
        fields = ["code", "value", "text_en", "text_zh"]


class ItemSerializer(serializers.ModelSerializer):
    dimension = serializers.CharField(source="dimension.code")
    levels = LevelSerializer(many=True, read_only=True)
    allowed_values = serializers.SerializerMethodField()
    scale_step = serializers.SerializerMethodField(help_text="Scale items: the distance between points (null = 1).")

    class Meta:
        model = Item
        fields = ["id", "code", "dimension", "response_type", "text_en", "text_zh", "guidance_en",
                  "guidance_zh", "allowed_values", "levels", "scale_min", "scale_max", "scale_step", "anchors"]

    def get_allowed_values(self, item: Item) -> list[float]:
        return item.allowed_values()

    def get_scale_step(self, item: Item) -> float | None:
        return scores.normal(item.scale_step) if item.has_step else None


class DimensionSerializer(serializers.ModelSerializer):
    class Meta:
        model = Dimension
        fields = ["code", "name_en", "name_zh"]


class ScaleVersionSerializer(serializers.ModelSerializer):
    scale = serializers.SlugRelatedField(slug_field="slug", read_only=True)
    dimensions = DimensionSerializer(many=True, read_only=True)
    rating_items = serializers.SerializerMethodField(
        help_text="Items rated with a number on a dialogue or answer (binary, levels ('ordinal') and scale).")
    text_items = serializers.SerializerMethodField(help_text="Free-comment items (answered with text, not analysed).")
    secondary_items = serializers.SerializerMethodField(
        help_text="Codes of the secondary items rated for importance in surveys (5-point Likert)."
    )
    is_locked = serializers.BooleanField(read_only=True)

    class Meta:
        model = ScaleVersion
        fields = ["id", "scale", "number", "status", "note", "created_at", "published_at", "is_locked",
                  "dimensions", "rating_items", "text_items", "secondary_items"]

    @extend_schema_field(ItemSerializer(many=True))
    def get_rating_items(self, version: ScaleVersion) -> list[dict]:
        items = version.rating_items().select_related("dimension").prefetch_related("levels").order_by("order")
        return ItemSerializer(items, many=True).data

    @extend_schema_field(ItemSerializer(many=True))
    def get_text_items(self, version: ScaleVersion) -> list[dict]:
        items = version.text_items().select_related("dimension").order_by("order")
        return ItemSerializer(items, many=True).data

    def get_secondary_items(self, version: ScaleVersion) -> list[str]:
        return list(version.secondary_items().order_by("order").values_list("code", flat=True))


class ScaleVersionSummarySerializer(serializers.ModelSerializer):
    class Meta:
        model = ScaleVersion
        fields = ["id", "number", "status", "published_at"]


class ScaleSerializer(serializers.ModelSerializer):
    versions = ScaleVersionSummarySerializer(many=True, read_only=True)

    class Meta:
        model = Scale
        fields = ["id", "slug", "name_en", "name_zh", "description", "source", "target", "language",
                  "show_reference", "versions"]


class ScaleViewSet(viewsets.ReadOnlyModelViewSet):
    """Rating scales and their versions: the project's own, and the library (other projects' published versions)."""

    serializer_class = ScaleSerializer
    lookup_field = "slug"

    def get_queryset(self):
        if getattr(self, "swagger_fake_view", False):  # schema generation
            return Scale.objects.none()
        # The scoped managers give the project's own scales and versions and the library's published ones.
        return Scale.objects.prefetch_related(Prefetch("versions", queryset=ScaleVersion.objects.all())).order_by(
            "name_en")


@extend_schema_view(list=extend_schema(parameters=[
    OpenApiParameter("scale", str, description="Only this scale's versions (its slug, e.g. llm-mini-cex).")]))
class ScaleVersionViewSet(viewsets.ReadOnlyModelViewSet):
    """A scale version with its dimensions and items in English and Chinese."""

    serializer_class = ScaleVersionSerializer

    def get_queryset(self):
        if getattr(self, "swagger_fake_view", False):  # schema generation
            return ScaleVersion.objects.none()
        # The scoped manager: the project's own versions and the library's published ones.
        qs = ScaleVersion.objects.select_related("scale").prefetch_related("dimensions").order_by("scale", "number")
        scale = self.request.query_params.get("scale")
        return qs.filter(scale__slug=scale) if scale else qs


class TokenSerializer(serializers.Serializer):
    token = serializers.CharField()
    expires = serializers.DateTimeField(help_text="The token is refused from then on; ask for a new one.")


class ObtainTokenView(APIView):
    """Exchange a username and password for an API token (failed attempts are counted and paused like the login
    page's, core/site/throttle.py)."""

    authentication_classes: list = []
    permission_classes: list = []
    serializer_class = AuthTokenSerializer

    @extend_schema(request=AuthTokenSerializer, responses={200: TokenSerializer})
    def post(self, request):
        serializer = AuthTokenSerializer(data=request.data, context={"request": request})
        valid = serializer.is_valid()  # authenticate(): axes refuses a paused login and counts a failed one
        if getattr(request, "axes_locked_out", False):
            return Response({"detail": throttle.message()}, status=status.HTTP_429_TOO_MANY_REQUESTS,
                            headers={"Retry-After": throttle.retry_after()})
        if not valid:
            # a missing or blank field is a 400; a wrong username or password a 401
            unauthorized = set(serializer.errors) == {"non_field_errors"}
            return Response({"detail": _summary(serializer.errors), **serializer.errors},
                            status=status.HTTP_401_UNAUTHORIZED if unauthorized else status.HTTP_400_BAD_REQUEST,
                            headers={"WWW-Authenticate": "Token"} if unauthorized else None)
        token = tokens.issue(serializer.validated_data["user"])
        return Response({"token": token.key, "expires": tokens.expires_at(token)})


# --- Permissions and helpers -------------------------------------------------------------------------------------

MAX_ID = 2**63 - 1


class _RolePermission(BasePermission):
    roles: tuple[str, ...] = ()

    def has_permission(self, request, view) -> bool:
        user = request.user
        return bool(user and user.is_authenticated and request_has_role(request, *self.roles))


class IsReader(_RolePermission):
    """Coordinators, analysts and admins."""

    roles = (COORDINATOR, ANALYST)
    message = "This is for coordinators, analysts and admins."


class IsCoordinator(_RolePermission):
    """Coordinators and admins."""

    roles = (COORDINATOR,)
    message = "Only coordinators and admins can do this."


def _int_param(request, name: str) -> int | None:
    """An optional whole-number query parameter; anything else is a 400, not a crash."""
    raw = request.query_params.get(name)
    if raw is None or raw.strip() == "":
        return None
    try:
        value = int(raw)
    except ValueError:
        raise ParseError(gettext('Query parameter "%(name)s" must be a whole-number id; got %(got)s.')
                         % {"name": name, "got": repr(raw)}) from None
    if not 0 <= value <= MAX_ID:
        raise ParseError(gettext('Query parameter "%(name)s" is out of range.') % {"name": name})
    return value


def _rater_name(rater, viewer, campaign: Campaign) -> str:
    """Username or the project's pseudonym, by the rule of annotation.campaigns.shows_names."""
    if shows_names(viewer, campaign):
        return rater.username
    return pseudonym(campaign.project_id, rater)


def _viewer(serializer) -> object | None:
    request = serializer.context.get("request")
    return getattr(request, "user", None)


def _shown(dialogue: Dialogue) -> tuple[str, list[dict]]:
    """Self-report and turns with every active redaction applied (computed once per object)."""
    cached = getattr(dialogue, "_api_shown", None)
    if cached is None:
        cached = dialogue._api_shown = redacted(dialogue)
    return cached


def _active_redactions() -> Prefetch:
    return Prefetch("redactions", queryset=Redaction.objects.filter(revoked_at__isnull=True))


@extend_schema_field({"oneOf": [{"type": "integer"}, {"type": "string"}]})
class IdOrTextField(serializers.Field):
    """A reference given either as a numeric id or as text (an item code, a username)."""

    default_error_messages = {"invalid": "Give a numeric id or a non-empty text reference."}

    def to_internal_value(self, data):
        if isinstance(data, bool) or not isinstance(data, int | str):
            self.fail("invalid")
        if isinstance(data, str):
            data = data.strip()
            if not data:
                self.fail("invalid")
        return data

    def to_representation(self, value):
        return value


def _status_field(choices, **kwargs) -> serializers.CharField:
    """A read-only status, its values listed in the description. (Several models name a field "status"; plain
    strings keep their enums from colliding in the schema's component names.)"""
    values = ", ".join(value for value, _ in choices)
    return serializers.CharField(read_only=True, help_text=f"One of: {values}.", **kwargs)


# --- Serializers ---------------------------------------------------------------------------------------------------


class TurnSerializer(serializers.Serializer):
    role = serializers.ChoiceField(choices=Dialogue.ROLES + Dialogue.QA_ROLES,
                                   help_text="A dialogue's turns: doctor, patient, measurement; a question-answer "
                                             "item's parts: question, answer, reference.")
    text = serializers.CharField()


class CorpusSerializer(serializers.ModelSerializer):
    dialogue_count = serializers.IntegerField(read_only=True)

    class Meta:
        model = Corpus
        fields = ["id", "name", "kind", "description", "is_demo", "created_at", "dialogue_count"]


class _ShownDialogueMixin(serializers.Serializer):
    self_report = serializers.SerializerMethodField(help_text="The patient self-report, redactions applied.")
    turns = serializers.SerializerMethodField(help_text="Ordered turns, redactions applied ([REDACTED]).")

    def get_self_report(self, dialogue: Dialogue) -> str:
        return _shown(dialogue)[0]

    @extend_schema_field(TurnSerializer(many=True))
    def get_turns(self, dialogue: Dialogue) -> list[dict]:
        return _shown(dialogue)[1]


class DialogueSerializer(_ShownDialogueMixin, serializers.ModelSerializer):
    """A dialogue as coordinators and analysts see it (with source model and metadata)."""

    class Meta:
        model = Dialogue
        fields = ["id", "corpus", "external_id", "self_report", "turns", "source_model", "language", "split",
                  "meta", "privacy_status", "created_at"]


class BlindDialogueSerializer(_ShownDialogueMixin, serializers.ModelSerializer):
    """A dialogue as its rater sees it: an opaque id per campaign, no external or database id, no source model,
    no metadata, redactions applied. Coordinators and admins also get ``id`` and ``external_id``."""

    blind_id = serializers.SerializerMethodField(
        help_text='Opaque id of the dialogue in this campaign (e.g. "D-K3QZ7M2A"); quote it when reporting a problem.')
    id = serializers.IntegerField(required=False, help_text="Database id: coordinators and admins only.")
    external_id = serializers.CharField(required=False, help_text="Id in the corpus: coordinators and admins only.")

    class Meta:
        model = Dialogue
        fields = ["blind_id", "id", "external_id", "language", "self_report", "turns"]

    def get_blind_id(self, dialogue: Dialogue) -> str:
        return blind_id(self.context["campaign_id"], dialogue.pk)

    def to_representation(self, dialogue: Dialogue) -> dict:
        data = super().to_representation(dialogue)
        # Read in the dialogue's own project: a coordinator of another project sees it as its rater does.
        if not has_role(_viewer(self), COORDINATOR, project=project_id_of(dialogue)):
            data.pop("id", None)
            data.pop("external_id", None)
        return data


class ProjectRelatedField(serializers.PrimaryKeyRelatedField):
    """A reference to a row the request's project may use (its corpora; its own and the library's scale
    versions); any other id is "does not exist", as a missing one. The queryset is made per request, in the
    request's scope (``rows`` is called then)."""

    def __init__(self, rows, **kwargs):
        self.rows = rows
        super().__init__(queryset=None, **kwargs)

    def get_queryset(self):
        return self.rows()


class CampaignSerializer(serializers.ModelSerializer):
    corpus = ProjectRelatedField(lambda: Corpus.objects.alive())
    corpus_name = serializers.CharField(source="corpus.name", read_only=True)
    scale_version = ProjectRelatedField(lambda: ScaleVersion.objects.all(),
                                        help_text="A published scale version (it becomes locked).")
    scale = serializers.CharField(source="scale_version.scale.slug", read_only=True)
    scale_version_number = serializers.IntegerField(source="scale_version.number", read_only=True)
    overlap = serializers.IntegerField(min_value=1, max_value=100, default=3, help_text="Raters per dialogue (k).")
    filter_split = serializers.ChoiceField(choices=[c for c, _ in Dialogue.Split.choices], required=False,
                                           allow_blank=True)
    status = _status_field(Campaign.Status.choices)

    class Meta:
        model = Campaign
        fields = ["id", "name", "corpus", "corpus_name", "scale_version", "scale", "scale_version_number", "phase",
                  "status", "overlap", "filter_split", "filter_model", "filter_language", "instructions", "deadline",
                  "seed", "rating_language", "created_at"]
        read_only_fields = ["status", "created_at"]

    def validate_name(self, name: str) -> str:
        """Names are unique per project (another project may use the same name)."""
        if Campaign.objects.filter(name=name.strip()).exists():
            raise serializers.ValidationError("A campaign with this name exists already.")
        return name

    def create(self, validated_data):
        return create_campaign(user=_viewer(self), **validated_data)


class RaterInputSerializer(serializers.Serializer):
    user = IdOrTextField(help_text="The physician's user id or username.")
    team = serializers.CharField(max_length=100, required=False, allow_blank=True, default="")
    capacity = serializers.IntegerField(min_value=0, max_value=1_000_000, required=False, allow_null=True,
                                        default=None, help_text="Most dialogues to give; empty = no limit.")
    available_until = serializers.DateField(required=False, allow_null=True, default=None)

    def validate_user(self, ref):
        # Only the project's own members are looked up: any other account answers as a missing one, so the form
        # cannot be used to learn who else has an account.
        project = self.context["project"]  # the campaign's
        users = member_users(project)
        user = None
        if isinstance(ref, str):
            user = users.filter(username=ref).first()
            if user is None and ref.isdigit() and len(ref) <= 19:  # a bigint at most: longer is no id
                ref = int(ref)
        if user is None and isinstance(ref, int) and 0 <= ref <= MAX_ID:
            user = users.filter(pk=ref).first()
        if user is None:
            raise serializers.ValidationError(gettext('No member "%(member)s" in this project.')
                                              % {"member": str(ref)[:40]})
        if PHYSICIAN not in roles_in(user, project):
            raise serializers.ValidationError(gettext("%(user)s is not a physician of this project; only its "
                                                      "physicians rate its dialogues.") % {"user": user.username})
        return user


class CampaignRaterSerializer(serializers.ModelSerializer):
    rater = serializers.SerializerMethodField(
        help_text="Username (coordinators, admins) or pseudonym (analysts, unless the campaign allows names).")

    class Meta:
        model = CampaignRater
        fields = ["rater", "team", "capacity", "available_until", "active", "added_at"]

    def get_rater(self, row: CampaignRater) -> str:
        return _rater_name(row.user, _viewer(self), row.campaign)


class AssignResultSerializer(serializers.Serializer):
    created = serializers.IntegerField(help_text="Assignments created by this run.")
    short = serializers.IntegerField(help_text="Dialogues that still have fewer raters than the overlap.")
    missing = serializers.IntegerField(help_text="Rater slots still missing over all dialogues.")
    complete = serializers.BooleanField()


class RaterProgressSerializer(serializers.Serializer):
    rater = serializers.CharField(
        help_text="Username (coordinators, admins) or pseudonym (analysts, unless the campaign allows names).")
    team = serializers.CharField()
    total = serializers.IntegerField()
    submitted = serializers.IntegerField()
    in_progress = serializers.IntegerField()
    not_started = serializers.IntegerField()
    skipped = serializers.IntegerField()
    returned = serializers.IntegerField()
    percent = serializers.IntegerField(help_text="Submitted as a percentage of the total.")


class SampleInputSerializer(serializers.Serializer):
    size = serializers.IntegerField(min_value=1, max_value=10_000_000, help_text="Dialogues to sample.")
    stratified = serializers.BooleanField(default=False, help_text="Draw within each doctor model (equal "
                                                                   "allocation).")
    seed = serializers.IntegerField(min_value=0, max_value=MAX_ID, required=False, allow_null=True, default=None,
                                    help_text="Seed of the draw (empty: a fresh one, recorded).")


class RandomSampleSerializer(serializers.ModelSerializer):
    population_size = serializers.SerializerMethodField()
    created_by = serializers.SlugRelatedField(slug_field="username", read_only=True)
    text = serializers.SerializerMethodField(help_text="The sample in one sentence.")
    reproduces = serializers.SerializerMethodField(
        help_text="Drawn samples: whether drawing again from the recorded population and seed gives the same ids.")

    class Meta:
        model = RandomSample
        fields = ["kind", "size", "seed", "stratified", "population_size", "strata", "dialogues", "note",
                  "created_by", "created_at", "text", "reproduces", "probabilities", "rule"]

    def get_population_size(self, sample: RandomSample) -> int:
        return len(sample.population)

    def get_text(self, sample: RandomSample) -> str:
        return sampling.describe(sample)

    def get_reproduces(self, sample: RandomSample) -> bool | None:
        if sample.kind not in (RandomSample.Kind.DRAWN, RandomSample.Kind.ACTIVE):
            return None
        return sampling.reproduce(sample) == sample.dialogues


class AssignmentCampaignSerializer(serializers.ModelSerializer):
    status = _status_field(Campaign.Status.choices)

    class Meta:
        model = Campaign
        fields = ["id", "name", "phase", "status", "instructions", "deadline", "scale_version"]


class AssignmentSerializer(serializers.ModelSerializer):
    campaign = AssignmentCampaignSerializer(read_only=True)
    dialogue = serializers.SerializerMethodField()
    rater = serializers.CharField(source="rater.username", read_only=True)
    status = _status_field(Assignment.Status.choices)

    class Meta:
        model = Assignment
        fields = ["id", "campaign", "dialogue", "rater", "status", "position", "comment", "skip_reason", "flagged",
                  "flag_note", "return_note", "created_at", "started_at", "submitted_at", "updated_at"]

    @extend_schema_field(BlindDialogueSerializer)
    def get_dialogue(self, assignment: Assignment) -> dict:
        context = {**self.context, "campaign_id": assignment.campaign_id}
        return BlindDialogueSerializer(assignment.dialogue, context=context).data


@extend_schema_field({"type": "number", "nullable": True})
class ScoreValueField(serializers.Field):
    """A label's value: a whole number, or a point of a scale in steps such as 0.5 (4.5); never written 4.0."""

    default_error_messages = {"invalid": "Give a number (e.g. 1, 0 or 4.5), or null to clear."}

    def __init__(self, **kwargs):
        kwargs.setdefault("allow_null", True)
        super().__init__(**kwargs)

    def to_internal_value(self, data):
        try:
            return scores.parse(data) if not isinstance(data, str) or data.strip() else None
        except (TypeError, ValueError):
            self.fail("invalid")

    def to_representation(self, value):
        return scores.normal(value)


class OwnLabelSerializer(serializers.ModelSerializer):
    item_code = serializers.CharField(source="item.code", read_only=True)
    value = ScoreValueField(read_only=True)

    class Meta:
        model = Label
        fields = ["id", "item", "item_code", "value", "comment", "client_seq", "item_language", "updated_at"]


class LabelInputSerializer(serializers.Serializer):
    item = IdOrTextField(help_text='The item code ("1.1", "4"), or its numeric id given as a JSON number.')
    value = ScoreValueField(help_text="1/0 for binary items, 1-3 for item 4, a point of a scale (4, or 4.5 on a scale "
                                      "in half points); null clears.")
    comment = serializers.CharField(required=False, allow_blank=True, max_length=label_service.MAX_TEXT)
    client_seq = serializers.IntegerField(required=False, default=0, min_value=0, max_value=MAX_ID,
                                          help_text="Increasing per click; an older click arriving late is ignored.")
    item_language = serializers.ChoiceField(
        choices=Language.choices, required=False,
        help_text='The language of the item text the rater answered ("en", "zh"); left out: the stored one stays '
                  "(empty: not recorded).")


class AnswerInputSerializer(serializers.Serializer):
    item = IdOrTextField(help_text='The item code ("1.1", "4"), or its numeric id given as a JSON number.')
    value = ScoreValueField(help_text="As for one answer: null clears.")


class AnswersInputSerializer(serializers.Serializer):
    answers = AnswerInputSerializer(many=True, allow_empty=False, max_length=1000,
                                    help_text="The answers, each item at most once.")


class AnswersResultSerializer(serializers.Serializer):
    changed = serializers.IntegerField(help_text="Answers that changed a stored one (equal ones change nothing).")
    labels = OwnLabelSerializer(many=True, help_text="Every label of the assignment after the save.")


class SubmitInputSerializer(serializers.Serializer):
    comment = serializers.CharField(required=False, allow_blank=True, max_length=label_service.MAX_TEXT,
                                    help_text="Optional comment on the whole dialogue.")


class SkipInputSerializer(serializers.Serializer):
    reason = serializers.CharField(max_length=label_service.MAX_TEXT, help_text="Why you skip the dialogue.",
                                   error_messages={"blank": _("Say why you skip this dialogue."),
                                                   "required": _("Say why you skip this dialogue.")})


class FlagInputSerializer(serializers.Serializer):
    note = serializers.CharField(max_length=label_service.MAX_TEXT, help_text="The problem with the dialogue.",
                                 error_messages={"blank": _("Describe the problem you are flagging."),
                                                 "required": _("Describe the problem you are flagging.")})


class SubmitErrorSerializer(serializers.Serializer):
    detail = serializers.CharField()
    missing = serializers.ListField(child=serializers.CharField(), required=False,
                                    help_text="Codes of the items still unanswered.")


class LabelSerializer(serializers.ModelSerializer):
    """A rater's label, for coordinators and analysts."""

    rater = serializers.SerializerMethodField(
        help_text="Username (coordinators, admins) or pseudonym (analysts, unless the campaign allows names).")
    item_code = serializers.CharField(source="item.code", read_only=True)
    dialogue_external_id = serializers.CharField(source="dialogue.external_id", read_only=True)
    assignment_status = serializers.ChoiceField(choices=Assignment.Status.choices, source="assignment.status",
                                                read_only=True)
    value = ScoreValueField(read_only=True)

    class Meta:
        model = Label
        fields = ["id", "campaign", "dialogue", "dialogue_external_id", "assignment", "assignment_status", "rater",
                  "item", "item_code", "value", "comment", "item_language", "created_at", "updated_at"]

    def get_rater(self, label: Label) -> str:
        return _rater_name(label.rater, _viewer(self), label.campaign)


# --- Viewsets ------------------------------------------------------------------------------------------------------

NAME_FILTER = OpenApiParameter("name", str, description="Only the one with this name (exact).")
UPDATED_AFTER = OpenApiParameter(
    "updated_after", OpenApiTypes.DATETIME,
    description="Incremental sync: only rows changed at or after this time (ISO 8601, e.g. "
                "2026-05-01T09:30:00Z; give the largest updated_at you hold: rows of that very moment come again).")
DIALOGUE_FILTERS = [
    OpenApiParameter("split", str, enum=[c for c, _ in Dialogue.Split.choices]),
    OpenApiParameter("language", str),
    OpenApiParameter("model", str, description="The doctor model that produced the dialogue."),
    OpenApiParameter("privacy_status", str, enum=[c for c, _ in Dialogue._meta.get_field("privacy_status").choices]),
]


def _filter_dialogues(qs, request):
    params = request.query_params
    for param, lookup in (("split", "split"), ("language", "language"), ("model", "source_model"),
                          ("privacy_status", "privacy_status")):
        if params.get(param) is not None:
            qs = qs.filter(**{lookup: params[param]})
    return qs


def _dialogues():
    return Dialogue.objects.alive().filter(corpus__deleted_at__isnull=True).prefetch_related(_active_redactions())


def _datetime_param(request, name: str):
    """An optional ISO 8601 date-time query parameter (RequestChecks refused a malformed one); naive is UTC."""
    raw = request.query_params.get(name)
    if not raw:
        return None
    moment = parse_datetime(raw)
    return moment if timezone.is_aware(moment) else timezone.make_aware(moment, datetime.UTC)


@extend_schema_view(list=extend_schema(parameters=[NAME_FILTER]))
class CorpusViewSet(viewsets.ReadOnlyModelViewSet):
    """Dialogue corpora (coordinators, analysts, admins)."""

    serializer_class = CorpusSerializer
    permission_classes = [IsReader]

    def get_queryset(self):
        if getattr(self, "swagger_fake_view", False):  # schema generation
            return Corpus.objects.none()
        qs = (Corpus.objects.alive()
              .annotate(dialogue_count=Count("dialogues", filter=Q(dialogues__deleted_at__isnull=True)))
              .order_by("name"))
        if self.action == "list" and self.request.query_params.get("name"):
            qs = qs.filter(name=self.request.query_params["name"])
        return qs

    @extend_schema(parameters=DIALOGUE_FILTERS, responses=DialogueSerializer(many=True),
                   summary="The corpus's dialogues, redactions applied")
    @action(detail=True, methods=["get"])
    def dialogues(self, request, pk=None, format=None):
        corpus = self.get_object()
        qs = _filter_dialogues(_dialogues().filter(corpus=corpus).order_by("external_id", "id"), request)
        page = self.paginate_queryset(qs)
        return self.get_paginated_response(DialogueSerializer(page, many=True, context={"request": request}).data)


@extend_schema_view(list=extend_schema(parameters=[OpenApiParameter("corpus", int), *DIALOGUE_FILTERS]))
class DialogueViewSet(viewsets.ReadOnlyModelViewSet):
    """Dialogues with redactions applied (coordinators, analysts, admins). Filter with ?corpus=ID."""

    serializer_class = DialogueSerializer
    permission_classes = [IsReader]

    def get_queryset(self):
        if getattr(self, "swagger_fake_view", False):  # schema generation
            return Dialogue.objects.none()
        qs = _dialogues().order_by(
            "corpus_id", "external_id", "id")
        if self.action == "list":
            corpus = _int_param(self.request, "corpus")
            if corpus is not None:
                qs = qs.filter(corpus_id=corpus)
            qs = _filter_dialogues(qs, self.request)
        return qs


@extend_schema_view(list=extend_schema(parameters=[
    OpenApiParameter("corpus", int), NAME_FILTER,
    OpenApiParameter("status", str, enum=[c for c, _ in Campaign.Status.choices]),
    OpenApiParameter("phase", str, enum=[c for c, _ in Campaign.Phase.choices])]))
class CampaignViewSet(mixins.CreateModelMixin, mixins.ListModelMixin, mixins.RetrieveModelMixin,
                      viewsets.GenericViewSet):
    """Annotation campaigns: coordinators, analysts and admins read them; coordinators create and staff them."""

    serializer_class = CampaignSerializer

    def get_permissions(self):
        writes = self.action in ("create", "assign") or (self.action in ("raters", "sample")
                                                         and self.request.method == "POST")
        return [IsCoordinator()] if writes else [IsReader()]

    def get_queryset(self):
        if getattr(self, "swagger_fake_view", False):  # schema generation
            return Campaign.objects.none()
        qs = (Campaign.objects.alive()
              .select_related("corpus", "scale_version__scale").order_by("-created_at", "-id"))
        if self.action == "list":
            corpus = _int_param(self.request, "corpus")
            if corpus is not None:
                qs = qs.filter(corpus_id=corpus)
            for param in ("status", "phase", "name"):
                if self.request.query_params.get(param):
                    qs = qs.filter(**{param: self.request.query_params[param]})
        return qs

    def create(self, request, *args, **kwargs):
        response = super().create(request, *args, **kwargs)
        response["Location"] = reverse("api-campaign-detail", args=[response.data["id"]], request=request)
        return response

    @extend_schema(methods=["GET"], responses=CampaignRaterSerializer(many=True), summary="The campaign's raters")
    @extend_schema(methods=["POST"], request=RaterInputSerializer, responses={201: CampaignRaterSerializer},
                   summary="Add a physician to the campaign (or update team, capacity, availability)")
    @action(detail=True, methods=["get", "post"], pagination_class=None)
    def raters(self, request, pk=None, format=None):
        campaign = self.get_object()
        context = self.get_serializer_context()
        if request.method == "GET":
            rows = campaign.raters.select_related("campaign", "user").order_by("team", "user__username")
            return Response(CampaignRaterSerializer(rows, many=True, context=context).data)
        data = RaterInputSerializer(data=request.data, context={"project": campaign.project})
        data.is_valid(raise_exception=True)
        row = add_rater(campaign, added_by=request.user, **data.validated_data)
        return Response(CampaignRaterSerializer(row, context=context).data, status=status.HTTP_201_CREATED,
                        headers={"Location": reverse("api-campaign-raters", args=[campaign.pk], request=request)})

    @extend_schema(request=None, responses={200: AssignResultSerializer},
                   summary="Give every dialogue in scope its overlap of raters (tops up; never moves work)")
    @action(detail=True, methods=["post"])
    def assign(self, request, pk=None, format=None):
        result = assign(self.get_object(), user=request.user)  # a closed campaign: 409 (CampaignClosed)
        return Response({"created": result.created, "short": len(result.short),
                         "missing": sum(result.short.values()), "complete": result.complete})

    @extend_schema(methods=["GET"], responses={200: RandomSampleSerializer, 404: None},
                   summary="The campaign's random sample (drawn here, or declared for imported labels)")
    @extend_schema(methods=["POST"], request=SampleInputSerializer, responses={201: RandomSampleSerializer},
                   summary="Draw the campaign's random sample of dialogues (before assigning; once)")
    @action(detail=True, methods=["get", "post"])
    def sample(self, request, pk=None, format=None):
        campaign = self.get_object()
        if request.method == "GET":
            sample = sampling.sample_of(campaign)
            if sample is None:
                return Response({"detail": sampling.describe(None)}, status=status.HTTP_404_NOT_FOUND)
            return Response(RandomSampleSerializer(sample).data)
        data = SampleInputSerializer(data=request.data)
        data.is_valid(raise_exception=True)
        if sampling.sample_of(campaign) is not None or Assignment.objects.filter(campaign=campaign).exists():
            return Response({"detail": gettext("This campaign already has a random sample or assignments; a sample "
                                               "is drawn once, before assigning.")}, status=status.HTTP_409_CONFLICT)
        sample = sampling.draw_sample(campaign, user=request.user, **data.validated_data)
        return Response(RandomSampleSerializer(sample).data, status=status.HTTP_201_CREATED,
                        headers={"Location": reverse("api-campaign-sample", args=[campaign.pk], request=request)})

    @extend_schema(responses=RaterProgressSerializer(many=True), summary="Counts per rater")
    @action(detail=True, methods=["get"], pagination_class=None)
    def progress(self, request, pk=None, format=None):
        campaign = self.get_object()
        rows = rater_progress(campaign)
        for row in rows:
            row["team"] = row["rater"].team
            row["rater"] = _rater_name(row["rater"].user, request.user, campaign)
        return Response(RaterProgressSerializer(rows, many=True).data)


@extend_schema_view(list=extend_schema(parameters=[
    OpenApiParameter("campaign", int),
    OpenApiParameter("status", str, enum=[c for c, _ in Assignment.Status.choices]), UPDATED_AFTER]))
class AssignmentViewSet(viewsets.ReadOnlyModelViewSet):
    """A physician's own assignments (coordinators and admins see all). The dialogue is shown blind: no source
    model, no metadata, redactions applied."""

    serializer_class = AssignmentSerializer
    permission_classes = [IsAuthenticated]

    def initial(self, request, *args, **kwargs):
        super().initial(request, *args, **kwargs)
        # The physician's queue spans every project where they rate: the view works in those and the request's.
        widen(request, rating_projects(request.user))

    def get_queryset(self):
        if getattr(self, "swagger_fake_view", False):  # schema generation
            return Assignment.objects.none()
        user = self.request.user
        qs = (Assignment.objects.filter(campaign__deleted_at__isnull=True, dialogue__deleted_at__isnull=True)
              .select_related("campaign", "dialogue", "rater")
              .prefetch_related(Prefetch("dialogue__redactions",
                                         queryset=Redaction.objects.filter(revoked_at__isnull=True)))
              .order_by("campaign_id", "rater_id", "position", "id"))
        # Coordinators see their project's assignments; a physician sees their own in every project where they
        # are a physician (their rating queue), never anybody else's. Roles are read in each row's project: an
        # assignment of a project where the user only rates is shown as to its rater (blind, privacy-excluded
        # dialogues left out), whatever role they hold in the request's project.
        coordinated = [self.request.project.pk] if request_has_role(self.request, COORDINATOR) else []
        qs = qs.filter(Q(campaign__project__in=coordinated)
                       | Q(rater=user, campaign__project__in=rating_projects(user)))
        qs = qs.filter(Q(campaign__project__in=coordinated) | ~Q(dialogue__privacy_status=PrivacyStatus.EXCLUDED))
        if self.action == "list":
            campaign = _int_param(self.request, "campaign")
            if campaign is not None:
                qs = qs.filter(campaign_id=campaign)
            if self.request.query_params.get("status"):
                qs = qs.filter(status=self.request.query_params["status"])
            updated_after = _datetime_param(self.request, "updated_after")
            if updated_after is not None:
                qs = qs.filter(updated_at__gte=updated_after)
        return qs

    def _respond(self, assignment: Assignment) -> Response:
        fresh = self.get_queryset().get(pk=assignment.pk)
        return Response(AssignmentSerializer(fresh, context=self.get_serializer_context()).data)

    @extend_schema(methods=["GET"], responses=OwnLabelSerializer(many=True), summary="The assignment's labels")
    @extend_schema(methods=["POST"], request=LabelInputSerializer, responses={200: OwnLabelSerializer},
                   summary="Save one answer at once (with history); only the assigned rater can")
    @action(detail=True, methods=["get", "post"], pagination_class=None)
    def labels(self, request, pk=None, format=None):
        assignment = self.get_object()
        if request.method == "GET":
            rows = assignment.labels.select_related("item").order_by("item__order", "id")
            return Response(OwnLabelSerializer(rows, many=True).data)
        data = LabelInputSerializer(data=request.data)
        data.is_valid(raise_exception=True)
        item_id = _resolve_item(assignment, data.validated_data["item"])
        label = label_service.save_label(assignment, item_id, data.validated_data["value"], request.user,
                                         comment=data.validated_data.get("comment"),
                                         client_seq=data.validated_data["client_seq"],
                                         item_language=data.validated_data.get("item_language"))
        label = Label.objects.select_related("item").get(pk=label.pk)
        return Response(OwnLabelSerializer(label).data)

    @extend_schema(request=AnswersInputSerializer, responses={200: AnswersResultSerializer},
                   summary="Save several answers of the dialogue in one request: all or none, each with the checks "
                           "and history of a single save; only the assigned rater can")
    @action(detail=True, methods=["post"])
    def answers(self, request, pk=None, format=None):
        assignment = self.get_object()
        data = AnswersInputSerializer(data=request.data)
        data.is_valid(raise_exception=True)
        answers = {}
        for answer in data.validated_data["answers"]:
            item_id = _resolve_item(assignment, answer["item"])
            if item_id in answers:
                raise LabelError(gettext("Item %(item)s is answered twice in this request.")
                                 % {"item": repr(answer["item"])})
            answers[item_id] = answer["value"]
        changed = label_service.save_answers(assignment, answers, request.user)
        rows = assignment.labels.select_related("item").order_by("item__order", "id")
        return Response({"changed": changed, "labels": OwnLabelSerializer(rows, many=True).data})

    @extend_schema(request=SubmitInputSerializer,
                   responses={200: AssignmentSerializer, 400: SubmitErrorSerializer},
                   summary="Submit the answers (every item must be answered)")
    @action(detail=True, methods=["post"])
    def submit(self, request, pk=None, format=None):
        assignment = self.get_object()
        data = SubmitInputSerializer(data=request.data)
        data.is_valid(raise_exception=True)
        try:
            updated = label_service.submit(assignment, request.user, comment=data.validated_data.get("comment"))
        except LabelError as exc:
            body = {"detail": str(exc)}
            if exc.status == status.HTTP_400_BAD_REQUEST:
                body["missing"] = label_service.missing_items(assignment)
            return Response(body, status=exc.status)
        return self._respond(updated)

    @extend_schema(request=SkipInputSerializer, responses={200: AssignmentSerializer},
                   summary="Skip the dialogue, saying why")
    @action(detail=True, methods=["post"])
    def skip(self, request, pk=None, format=None):
        assignment = self.get_object()
        data = SkipInputSerializer(data=request.data)
        data.is_valid(raise_exception=True)
        return self._respond(label_service.skip(assignment, request.user, data.validated_data["reason"]))

    @extend_schema(request=FlagInputSerializer, responses={200: AssignmentSerializer},
                   summary="Report a problem with the dialogue")
    @action(detail=True, methods=["post"])
    def flag(self, request, pk=None, format=None):
        assignment = self.get_object()
        data = FlagInputSerializer(data=request.data)
        data.is_valid(raise_exception=True)
        return self._respond(label_service.flag(assignment, request.user, data.validated_data["note"]))


def _resolve_item(assignment: Assignment, ref: int | str) -> int:
    """The id of a rating item of the campaign's scale version, given its code or (as a number) its id."""
    items = label_service.rating_items(assignment.campaign.scale_version_id)
    if isinstance(ref, str):
        by_code = {code: item_id for item_id, (code, _) in items.items()}
        if ref in by_code:
            return by_code[ref]
        if ref.isdigit() and len(ref) <= 19:
            ref = int(ref)
    if isinstance(ref, int) and ref in items:
        return ref
    raise LabelError(gettext("Item %(item)s is not a rating item of this campaign's scale.") % {"item": repr(ref)})


@extend_schema_view(list=extend_schema(parameters=[
    OpenApiParameter("campaign", int), OpenApiParameter("dialogue", int),
    OpenApiParameter("item", str, description="Item code, e.g. 1.1 or 4"), UPDATED_AFTER]))
class LabelViewSet(viewsets.ReadOnlyModelViewSet):
    """Raters' labels for coordinators, analysts and admins (analysts see raters by pseudonym).
    Physicians read only their own labels, through their assignments."""

    serializer_class = LabelSerializer
    permission_classes = [IsReader]

    def get_queryset(self):
        if getattr(self, "swagger_fake_view", False):  # schema generation
            return Label.objects.none()
        qs = (Label.objects.filter(campaign__deleted_at__isnull=True)
              .select_related("item", "dialogue", "assignment", "campaign", "rater")
              .order_by("campaign_id", "dialogue_id", "assignment_id", "item__order", "id"))
        if self.action == "list":
            for param in ("campaign", "dialogue"):
                value = _int_param(self.request, param)
                if value is not None:
                    qs = qs.filter(**{f"{param}_id": value})
            if self.request.query_params.get("item"):
                qs = qs.filter(item__code=self.request.query_params["item"].strip())
            updated_after = _datetime_param(self.request, "updated_after")
            if updated_after is not None:
                qs = qs.filter(updated_at__gte=updated_after)
        return qs
