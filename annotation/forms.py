from django import forms
from django.conf import settings
from django.contrib.auth.forms import AuthenticationForm

from annotation import throttle


class ThrottledAuthenticationForm(AuthenticationForm):
    """The standard login form, refusing attempts after too many failures."""

    error_messages = {
        **AuthenticationForm.error_messages,
        "throttled": "Too many failed attempts. For your security, logging in is paused for %(minutes)d "
                     "minutes; try again later or ask an administrator to reset your password.",
    }

    def clean(self):
        username = self.cleaned_data.get("username") or ""
        address = throttle.client_address(self.request) if self.request else "unknown"
        if throttle.is_locked(username, address):
            raise forms.ValidationError(
                self.error_messages["throttled"], code="throttled",
                params={"minutes": max(1, settings.LOGIN_LOCKOUT_SECONDS // 60)},
            )
        try:
            cleaned = super().clean()
        except forms.ValidationError:
            throttle.record_failure(username, address)
            raise
        throttle.reset(username, address)
        return cleaned


class NewVersionForm(forms.Form):
    note = forms.CharField(
        label="Why a new version?", widget=forms.Textarea(attrs={"rows": 3}), max_length=2000,
        help_text="Recorded in the version's history, e.g. 'Delphi round 2 revisions'.",
    )
