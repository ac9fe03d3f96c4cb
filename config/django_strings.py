"""Strings of Django's admin and auth that Django's Simplified Chinese catalogue lacks (e.g. the admin index's hidden
table headers), and the names of django-axes' models (it ships no Chinese; the admin names them in a group's
permissions): listed for extraction only, so that our catalogue (``locale/``, ahead of Django's and the apps' in
``LOCALE_PATHS``) translates them. Nothing imports this module."""

from django.utils.translation import gettext_noop, ngettext_lazy

DJANGO = [
    gettext_noop("Model name"),
    gettext_noop("Add link"),
    gettext_noop("Change or view list link"),
    gettext_noop("After you’ve created a user, you’ll be able to edit more user options."),
    gettext_noop("Error:"),
    gettext_noop("Forgotten your login credentials?"),
    gettext_noop("In case you’ve forgotten, you are:"),
    gettext_noop("%(model)s instance with %(field)s %(value)r is not a valid choice."),
    ngettext_lazy("This password is too short. It must contain at least %d character.",
                  "This password is too short. It must contain at least %d characters.", "count"),
]

AXES = [
    gettext_noop("access attempt"),
    gettext_noop("access attempts"),
    gettext_noop("access failure"),
    gettext_noop("access failures"),
    gettext_noop("access log"),
    gettext_noop("access logs"),
    gettext_noop("access attempt expiration"),
    gettext_noop("access attempt expirations"),
]
