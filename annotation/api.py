"""REST API for the instrument (read-only) and the shared exception handler."""

from __future__ import annotations

from django.core.exceptions import PermissionDenied as DjangoPermissionDenied
from django.core.exceptions import ValidationError as DjangoValidationError
from django.http import Http404
from drf_spectacular.utils import extend_schema
from rest_framework import serializers, status, viewsets
from rest_framework.authtoken.models import Token
from rest_framework.authtoken.serializers import AuthTokenSerializer
from rest_framework.response import Response
from rest_framework.views import APIView
from rest_framework.views import exception_handler as drf_exception_handler

from annotation import throttle
from annotation.models import Dimension, Item, Scale, ScaleVersion


def exception_handler(exc, context):
    """DRF's handler, plus Django validation errors as 400 with their messages."""
    if isinstance(exc, DjangoValidationError):
        detail = exc.message_dict if hasattr(exc, "error_dict") else {"detail": exc.messages}
        return Response(detail, status=status.HTTP_400_BAD_REQUEST)
    if isinstance(exc, DjangoPermissionDenied):
        return Response({"detail": str(exc) or "Permission denied."}, status=status.HTTP_403_FORBIDDEN)
    if isinstance(exc, Http404):
        return Response({"detail": "Not found."}, status=status.HTTP_404_NOT_FOUND)
    return drf_exception_handler(exc, context)


class LevelSerializer(serializers.ModelSerializer):
    class Meta:
        model = Item
        fields = ["code", "value", "text_en", "text_zh"]


class ItemSerializer(serializers.ModelSerializer):
    dimension = serializers.CharField(source="dimension.code")
    levels = LevelSerializer(many=True, read_only=True)
    allowed_values = serializers.SerializerMethodField()

    class Meta:
        model = Item
        fields = ["id", "code", "dimension", "response_type", "text_en", "text_zh", "guidance_en",
                  "guidance_zh", "allowed_values", "levels"]

    def get_allowed_values(self, item: Item) -> list[int]:
        return item.allowed_values()


class DimensionSerializer(serializers.ModelSerializer):
    class Meta:
        model = Dimension
        fields = ["code", "name_en", "name_zh"]


class ScaleVersionSerializer(serializers.ModelSerializer):
    scale = serializers.SlugRelatedField(slug_field="slug", read_only=True)
    dimensions = DimensionSerializer(many=True, read_only=True)
    rating_items = serializers.SerializerMethodField(help_text="Items rated on a dialogue (binary and ordinal).")
    secondary_items = serializers.SerializerMethodField(
        help_text="Codes of the secondary items rated for importance in surveys (5-point Likert)."
    )
    is_locked = serializers.BooleanField(read_only=True)

    class Meta:
        model = ScaleVersion
        fields = ["id", "scale", "number", "status", "note", "created_at", "published_at", "is_locked",
                  "dimensions", "rating_items", "secondary_items"]

    @extend_schema(responses=ItemSerializer(many=True))
    def get_rating_items(self, version: ScaleVersion) -> list[dict]:
        items = version.rating_items().select_related("dimension").prefetch_related("levels").order_by("order")
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
        fields = ["id", "slug", "name_en", "name_zh", "description", "versions"]


class ScaleViewSet(viewsets.ReadOnlyModelViewSet):
    """Rating scales and their versions."""

    queryset = Scale.objects.prefetch_related("versions").order_by("name_en")
    serializer_class = ScaleSerializer
    lookup_field = "slug"


class ScaleVersionViewSet(viewsets.ReadOnlyModelViewSet):
    """A scale version with its dimensions and items in English and Chinese."""

    queryset = ScaleVersion.objects.select_related("scale").prefetch_related("dimensions").order_by("scale", "number")
    serializer_class = ScaleVersionSerializer

    def get_queryset(self):
        qs = super().get_queryset()
        scale = self.request.query_params.get("scale")
        return qs.filter(scale__slug=scale) if scale else qs


class TokenSerializer(serializers.Serializer):
    token = serializers.CharField()


class ObtainTokenView(APIView):
    """Exchange a username and password for an API token (throttled like the login page)."""

    authentication_classes: list = []
    permission_classes: list = []
    serializer_class = AuthTokenSerializer

    @extend_schema(request=AuthTokenSerializer, responses={200: TokenSerializer})
    def post(self, request):
        username = str(request.data.get("username", ""))
        address = throttle.client_address(request)
        if throttle.is_locked(username, address):
            return Response({"detail": "Too many failed attempts; try again later."},
                            status=status.HTTP_429_TOO_MANY_REQUESTS)
        serializer = AuthTokenSerializer(data=request.data, context={"request": request})
        if not serializer.is_valid():
            throttle.record_failure(username, address)
            return Response(serializer.errors, status=status.HTTP_400_BAD_REQUEST)
        throttle.reset(username, address)
        token, _ = Token.objects.get_or_create(user=serializer.validated_data["user"])
        return Response({"token": token.key})
