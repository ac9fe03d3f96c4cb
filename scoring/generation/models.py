"""Dialogue generation: patient cases, generation jobs, the dialogues they produce and their turns.

Re-exported from scoring.models. A job's state lives in these rows: every turn is a row written as soon as its
request is answered, so a killed worker resumes a dialogue at the next turn and never repeats a stored one.
"""

from __future__ import annotations

from django.conf import settings
from django.db import models
from django.utils import timezone
from django.utils.translation import gettext
from django.utils.translation import gettext_lazy as _

from projects.models import ProjectOwned, ProjectScoped, SoftDeletable
from scoring.llm.keys import validate_key_variable
from scoring.llm.models import EngineJob, WorkUnit


class CaseSet(ProjectOwned, SoftDeletable):
    """A named collection of patient cases, imported from one JSON Lines file (or several)."""

    name = models.CharField(max_length=200, verbose_name=_("name"))
    description = models.TextField(blank=True, verbose_name=_("description"))
    source = models.CharField(max_length=300, blank=True, help_text=_("File the cases came from."),
                              verbose_name=_("source"))
    created_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.PROTECT, related_name="+",
        verbose_name=_("created by")
    )
    created_at = models.DateTimeField(default=timezone.now, verbose_name=_("created at"))

    class Meta:
        verbose_name = _("case set")
        verbose_name_plural = _("case sets")
        ordering = ["name"]
        constraints = [models.UniqueConstraint(fields=["project", "name"], name="unique_case_set_name_per_project")]

    def __str__(self) -> str:
        return self.name


class PatientCase(ProjectScoped, SoftDeletable):
    """What the patient simulator plays: a free-text self-report (Shi et al., LLM-Mini-CEX) or an OSCE case in the
    AgentClinic shape (Schmidgall et al., AgentClinic) with the doctor's objective, the patient actor, examination
    findings, test results and the correct diagnosis. The diagnosis is for the moderator only."""

    project_path = "case_set__project"

    class Kind(models.TextChoices):
        SELF_REPORT = "self_report", _("Self-report")
        OSCE = "osce", _("OSCE case")

    case_set = models.ForeignKey(CaseSet, on_delete=models.PROTECT, related_name="cases", verbose_name=_("case set"))
    external_id = models.CharField(max_length=200, verbose_name=_("external id"))
    kind = models.CharField(max_length=12, choices=Kind.choices, verbose_name=_("kind"))
    self_report = models.TextField(help_text=_("What the patient tells the doctor first (OSCE: demographics and "
                                               "main complaint)."), verbose_name=_("self-report"))
    patient_info = models.JSONField(default=dict, blank=True,
                                    help_text=_("Facts the patient simulator knows (OSCE: Patient_Actor; "
                                                "self-report: the template slots)."),
                                    verbose_name=_("patient information"))
    doctor_info = models.TextField(blank=True, help_text=_("What the doctor is told (OSCE: Objective_for_Doctor)."),
                                   verbose_name=_("doctor information"))
    examination = models.JSONField(default=dict, blank=True, help_text=_("Physical examination findings."),
                                   verbose_name=_("physical examination"))
    test_results = models.JSONField(default=dict, blank=True, help_text=_("Answers of the measurement agent."),
                                    verbose_name=_("test results"))
    diagnosis = models.TextField(blank=True, help_text=_("Correct diagnosis; only the moderator sees it."),
                                 verbose_name=_("diagnosis"))
    language = models.CharField(max_length=16, default="en", verbose_name=_("language"))
    meta = models.JSONField(default=dict, blank=True, verbose_name=_("metadata"))
    line = models.PositiveIntegerField(default=0, help_text=_("Line of the imported file."), verbose_name=_("line"))
    created_at = models.DateTimeField(default=timezone.now, verbose_name=_("created at"))

    class Meta:
        verbose_name = _("patient case")
        verbose_name_plural = _("patient cases")
        ordering = ["case_set", "line", "external_id"]
        constraints = [models.UniqueConstraint(fields=["case_set", "external_id"], name="unique_case_external_id")]

    def __str__(self) -> str:
        return f"{self.case_set.name}/{self.external_id}"

    @property
    def has_tests(self) -> bool:
        return bool(self.test_results or self.examination)


class GenerationJob(ProjectOwned, EngineJob):
    """A doctor model (or several) under test talking with a patient simulator over a set of cases, for every
    condition (temperature x doctor bias x patient bias). API keys are never stored: ``*_api_key_env`` names the
    environment variable holding each key."""

    name = models.CharField(max_length=200, verbose_name=_("name"))
    case_set = models.ForeignKey(CaseSet, on_delete=models.PROTECT, related_name="jobs", verbose_name=_("case set"))
    corpus = models.ForeignKey("annotation.Corpus", on_delete=models.PROTECT, related_name="generation_jobs",
                               verbose_name=_("corpus"))
    doctor_base_url = models.CharField(max_length=300, blank=True,
                                       help_text=_("Empty: OPENAI_BASE_URL from the environment."),
                                       verbose_name=_("doctor base URL"))
    doctor_api_key_env = models.CharField(max_length=100, default="OPENAI_API_KEY", validators=[validate_key_variable],
                                          verbose_name=_("doctor API key variable"))
    doctor_models = models.JSONField(default=list, help_text=_("Model names of the doctors under test."),
                                     verbose_name=_("doctor models"))
    patient_base_url = models.CharField(max_length=300, blank=True,
                                        help_text=_("Empty: OPENAI_BASE_URL from the environment."),
                                        verbose_name=_("patient base URL"))
    patient_api_key_env = models.CharField(max_length=100, default="OPENAI_API_KEY",
                                           validators=[validate_key_variable],
                                           verbose_name=_("patient API key variable"))
    patient_model = models.CharField(max_length=200, verbose_name=_("patient model"))
    measurement_model = models.CharField(max_length=200, blank=True, help_text=_("Empty: the patient model."),
                                         verbose_name=_("measurement model"))
    moderator_model = models.CharField(max_length=200, blank=True, help_text=_("Empty: the patient model."),
                                       verbose_name=_("moderator model"))
    temperatures = models.JSONField(default=list, help_text=_("Doctor temperatures to sweep."),
                                    verbose_name=_("temperatures"))
    doctor_biases = models.JSONField(default=list, blank=True, help_text=_('Doctor bias conditions ("none" = '
                                                                           "unbiased)."),
                                     verbose_name=_("doctor biases"))
    patient_biases = models.JSONField(default=list, blank=True, verbose_name=_("patient biases"))
    repeats = models.PositiveIntegerField(default=1, help_text=_("Dialogues per case and condition."),
                                          verbose_name=_("repeats"))
    max_turns = models.PositiveIntegerField(default=10, help_text=_("Most doctor turns (test requests count)."),
                                            verbose_name=_("maximum turns"))
    end_marker = models.CharField(max_length=60, default="DIAGNOSIS READY:", verbose_name=_("end marker"))
    reveal_diagnosis = models.BooleanField(default=False, help_text=_("Tell the patient simulator its diagnosis."),
                                           verbose_name=_("reveal diagnosis"))
    snapshot = models.JSONField(default=dict, help_text=_("Prompts and every setting as they were at the start."),
                                verbose_name=_("snapshot"))
    created_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.PROTECT, related_name="+",
        verbose_name=_("created by")
    )
    created_at = models.DateTimeField(default=timezone.now, verbose_name=_("created at"))

    class Meta:
        verbose_name = _("generation job")
        verbose_name_plural = _("generation jobs")
        ordering = ["-created_at", "-id"]

    def __str__(self) -> str:
        return gettext("Generation #%(id)s %(name)s") % {"id": self.pk, "name": self.name}


class GeneratedDialogue(ProjectScoped, WorkUnit):
    """One dialogue to generate: a case, a doctor model and a condition. Its turns are GenerationTurn rows."""

    project_path = "job__project"

    class Status(models.TextChoices):
        PENDING = "pending", _("Pending")
        RUNNING = "running", _("In progress")
        DONE = "done", _("Done")
        FAILED = "failed", _("Failed")

    OPEN = (Status.PENDING, Status.RUNNING)

    class Ending(models.TextChoices):
        MARKER = "marker", _("End marker")
        TURN_LIMIT = "turn_limit", _("Turn limit")

    job = models.ForeignKey(GenerationJob, on_delete=models.CASCADE, related_name="dialogues", verbose_name=_("job"))
    case = models.ForeignKey(PatientCase, on_delete=models.PROTECT, related_name="generated", verbose_name=_("case"))
    doctor_model = models.CharField(max_length=200, verbose_name=_("doctor model"))
    temperature = models.FloatField(verbose_name=_("temperature"))
    doctor_bias = models.CharField(max_length=40, default="none", verbose_name=_("doctor bias"))
    patient_bias = models.CharField(max_length=40, default="none", verbose_name=_("patient bias"))
    repeat = models.PositiveIntegerField(default=0, verbose_name=_("repeat"))
    status = models.CharField(max_length=10, choices=Status.choices, default=Status.PENDING, db_index=True,
                              verbose_name=_("status"))
    ended_by = models.CharField(max_length=12, choices=Ending.choices, blank=True, verbose_name=_("ended by"))
    turns_used = models.PositiveIntegerField(default=0, help_text=_("Doctor turns, test requests included."),
                                             verbose_name=_("turns used"))
    final_diagnosis = models.TextField(blank=True, verbose_name=_("final diagnosis"))
    correct = models.BooleanField(null=True, blank=True, help_text=_("The moderator's verdict (OSCE cases)."),
                                  verbose_name=_("correct"))
    moderator_answer = models.TextField(blank=True, verbose_name=_("moderator answer"))
    moderator_call = models.ForeignKey("scoring.LLMCall", null=True, blank=True, on_delete=models.PROTECT,
                                       related_name="+", verbose_name=_("moderator call"))
    moderator_from_cache = models.BooleanField(default=False, verbose_name=_("moderator answer from cache"))
    masked = models.PositiveIntegerField(default=0, help_text=_("Patient turns where the diagnosis was masked."),
                                         verbose_name=_("masked turns"))
    dialogue = models.ForeignKey("annotation.Dialogue", null=True, blank=True, on_delete=models.PROTECT,
                                 related_name="+", verbose_name=_("dialogue"))
    retry_round = models.PositiveIntegerField(default=0, verbose_name=_("retry round"))

    class Meta:
        verbose_name = _("generated dialogue")
        verbose_name_plural = _("generated dialogues")
        ordering = ["job", "case__line", "doctor_model", "temperature", "doctor_bias", "patient_bias", "repeat"]
        constraints = [models.UniqueConstraint(
            fields=["job", "case", "doctor_model", "temperature", "doctor_bias", "patient_bias", "repeat"],
            name="unique_generated_dialogue")]
        indexes = [models.Index(fields=["job", "status"])]

    def __str__(self) -> str:
        return gettext("%(job)s/%(case)s %(model)s temperature %(temperature)s") % {
            "job": self.job_id, "case": self.case.external_id, "model": self.doctor_model,
            "temperature": f"{self.temperature:g}"}

    @property
    def condition(self) -> str:
        parts = [gettext("T=%(temperature)s") % {"temperature": f"{self.temperature:g}"}]
        if self.doctor_bias != "none":
            parts.append(gettext("doctor bias %(bias)s") % {"bias": self.doctor_bias})
        if self.patient_bias != "none":
            parts.append(gettext("patient bias %(bias)s") % {"bias": self.patient_bias})
        return ", ".join(parts)


class GenerationTurn(ProjectScoped):
    """One stored turn of a generated dialogue and the request that produced it (unique per position)."""

    project_path = "generated__job__project"

    class Role(models.TextChoices):
        DOCTOR = "doctor", _("Doctor")
        PATIENT = "patient", _("Patient")
        MEASUREMENT = "measurement", _("Measurement")

    generated = models.ForeignKey(GeneratedDialogue, on_delete=models.CASCADE, related_name="turn_rows",
                                  verbose_name=_("generated"))
    index = models.PositiveIntegerField(verbose_name=_("index"))
    role = models.CharField(max_length=12, choices=Role.choices, verbose_name=_("role"))
    text = models.TextField(verbose_name=_("text"))
    call = models.ForeignKey("scoring.LLMCall", null=True, blank=True, on_delete=models.PROTECT, related_name="+",
                             verbose_name=_("call"))
    from_cache = models.BooleanField(default=False, verbose_name=_("from cache"))
    created_at = models.DateTimeField(default=timezone.now, verbose_name=_("created at"))

    class Meta:
        verbose_name = _("generation turn")
        verbose_name_plural = _("generation turns")
        ordering = ["generated", "index"]
        constraints = [models.UniqueConstraint(fields=["generated", "index"], name="unique_generation_turn")]

    def __str__(self) -> str:
        return f"{self.generated_id}#{self.index} {self.role}"


class GenerationCall(ProjectScoped):
    """Every paid request of a job (turns, retries after empty answers, moderator), for tokens and cost."""

    project_path = "job__project"

    job = models.ForeignKey(GenerationJob, on_delete=models.CASCADE, related_name="calls", verbose_name=_("job"))
    generated = models.ForeignKey(GeneratedDialogue, on_delete=models.CASCADE, related_name="calls",
                                  verbose_name=_("generated"))
    role = models.CharField(max_length=12, verbose_name=_("role"))
    call = models.ForeignKey("scoring.LLMCall", on_delete=models.PROTECT, related_name="+", verbose_name=_("call"))
    created_at = models.DateTimeField(default=timezone.now, verbose_name=_("created at"))

    class Meta:
        verbose_name = _("generation call")
        verbose_name_plural = _("generation calls")
        ordering = ["job", "created_at"]
        constraints = [models.UniqueConstraint(fields=["job", "call"], name="unique_generation_call")]

    def __str__(self) -> str:
        return f"{self.job_id} {self.role} {self.call_id}"
