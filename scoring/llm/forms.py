"""The spending caps of an LLM job (judge run, preference judging, generation job), set when it is created and
changed on its page."""

from __future__ import annotations

from collections.abc import Iterable

from django import forms
from django.utils.translation import gettext_lazy as _


class SpendCapsForm(forms.Form):
    """Optional caps: the job pauses once its paid answers reach either (the requests in flight when it is reached
    still finish and are stored)."""

    cost_cap = forms.DecimalField(required=False, min_value=0, max_digits=12, decimal_places=4,
                                  label=_("Spending cap"),
                                  help_text=_("Pause the job once its answers cost this much (in the endpoint's "
                                              "currency). Empty: no cap."))
    token_cap = forms.IntegerField(required=False, min_value=0, max_value=10**15, label=_("Token cap"),
                                   help_text=_("Pause the job once its answers used this many tokens (prompt + "
                                               "completion). Empty: no cap."))

    def caps(self) -> dict:
        return {"cost_cap": self.cleaned_data.get("cost_cap"), "token_cap": self.cleaned_data.get("token_cap")}

    def problem(self) -> str:
        """The form's errors as one sentence for a message."""
        return " ".join(f"{self.fields[name].label}: {' '.join(errors)}" for name, errors in self.errors.items())


def name_cost_cap_currency(form: forms.BaseForm, currencies: Iterable[str]) -> None:
    """Label ``form``'s spending cap with the currency it is in -- the endpoint's, as everywhere costs are shown
    ("Spending cap (USD)") -- or say that it follows the endpoint when the choices differ in currency."""
    found = sorted({str(c or "USD") for c in currencies})
    if len(found) == 1:
        label = _("Spending cap (%(currency)s)") % {"currency": found[0]}
    else:
        label = (_("Spending cap (in the endpoint's currency: %(currencies)s)") % {"currencies": ", ".join(found)}
                 if found else _("Spending cap (in the endpoint's currency)"))
    form.fields["cost_cap"].label = label
