"""Choosing an administrator's endpoint in the coordinators' forms, and what the pages say when there is none."""

from __future__ import annotations

from django import forms
from django.conf import settings
from django.utils.translation import gettext
from django.utils.translation import gettext_lazy as _

from scoring.llm import gateway
from scoring.llm.models import LLMEndpoint

NO_ENDPOINT = _("No LLM endpoint is defined yet. An administrator adds one under Admin → LLM endpoints: the base "
               "URL (OpenAI, Azure OpenAI, vLLM at http://localhost:8000/v1, Ollama at http://localhost:11434/v1), "
               "the NAME of the environment variable holding its key (OPENAI_API_KEY or a name starting with "
               "LLM_KEY_) and its limits.")
NO_URL = _("The endpoints use the server's default URL, and OPENAI_BASE_URL is not set. Set OPENAI_BASE_URL "
          "(e.g. https://api.openai.com/v1, http://localhost:8000/v1 for vLLM or http://localhost:11434/v1 for "
          "Ollama) and the key in OPENAI_API_KEY, then restart the app; or have an administrator give an endpoint "
          "its own base URL under Admin → LLM endpoints.")


NOT_GRANTED = _("No LLM endpoint is granted to this project. An administrator grants one under Admin → LLM endpoints "
               "(its Projects field); until then no judge run, preference judging or generation job can start here.")


def active_endpoints(project=None):
    """Active endpoints; with ``project``, only those granted to it (what its coordinators may choose)."""
    qs = LLMEndpoint.objects.filter(is_active=True)
    if project is not None:
        qs = qs.filter(projects=getattr(project, "pk", project))
    return qs


def endpoint_help(project=None) -> str | None:
    """What to do when no endpoint can be used (in ``project``: none granted to it); None when one can."""
    endpoints = list(active_endpoints(project).values_list("base_url", flat=True))
    if not endpoints:
        if project is not None and active_endpoints().exists():
            return NOT_GRANTED
        return NO_ENDPOINT
    if not settings.OPENAI_BASE_URL and not any(url.strip() for url in endpoints):
        return NO_URL
    return None


class EndpointChoiceField(forms.ModelChoiceField):
    """An active endpoint granted to the project (the form sets the choices with :func:`limit_to`); coordinators
    never type a URL or a key variable. One that cannot send anything now (no URL, an unknown host, nothing
    listening on a local server) says why beside its name and is refused."""

    def __init__(self, **kwargs):
        kwargs.setdefault("help_text", _("Defined by an administrator (URL, key variable and limits)."))
        super().__init__(queryset=LLMEndpoint.objects.none(), **kwargs)  # fails closed until limit_to

    def label_from_instance(self, obj: LLMEndpoint) -> str:
        label = f"{obj.name} — {obj.note}" if obj.note else obj.name
        problem = gateway.endpoint_problem(obj.base_url, obj.api_key_env)
        return gettext("%(endpoint)s (cannot be used now: %(problem)s)") % {"endpoint": label, "problem": problem} \
            if problem else label

    def clean(self, value):
        endpoint = super().clean(value)
        if endpoint is not None:
            problem = gateway.endpoint_problem(endpoint.base_url, endpoint.api_key_env)
            if problem:
                raise forms.ValidationError(gettext("%(endpoint)s cannot be used now: %(problem)s")
                                            % {"endpoint": endpoint.name, "problem": problem})
        return endpoint


def limit_to(form: forms.BaseForm, project) -> None:
    """Every endpoint choice of ``form`` offers only the endpoints granted to ``project``."""
    for field in form.fields.values():
        if isinstance(field, EndpointChoiceField):
            field.queryset = active_endpoints(project)
