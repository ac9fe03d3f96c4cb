"""Read-only API of dialogue generation jobs: state, reason, requests and cost, and the progress on the detail."""

from __future__ import annotations

from scoring.generation import services as generation
from scoring.generation.models import GenerationJob
from scoring.llm.api import JOB_FIELDS, EngineJobSerializer, EngineJobViewSet


class GenerationJobSerializer(EngineJobSerializer):
    class Meta:
        model = GenerationJob
        fields = [*JOB_FIELDS, "name", "case_set", "corpus", "doctor_models", "patient_model", "max_turns",
                  "progress"]


class GenerationJobViewSet(EngineJobViewSet):
    """Doctor models talking with a patient simulator over a case set."""

    serializer_class = GenerationJobSerializer

    def jobs(self):
        return GenerationJob.objects.order_by("-created_at", "-id")

    progress = staticmethod(generation.progress)
