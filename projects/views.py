"""Project pages: my projects (administrators: all, and a form to create one), a project's members (its
coordinators and the administrators add and remove them), and the navigation's project switch.

A project the user may not enter answers 404, as a missing one; its members who do not manage it read the member
list and get 403 on the forms' actions (as role-restricted pages do)."""

from __future__ import annotations

from django import forms
from django.conf import settings
from django.contrib import messages
from django.contrib.auth import get_user_model
from django.contrib.auth.decorators import login_required
from django.core.exceptions import PermissionDenied
from django.http import Http404, HttpResponseBadRequest
from django.shortcuts import get_object_or_404, redirect, render
from django.utils.http import url_has_allowed_host_and_scheme
from django.utils.translation import gettext as _
from django.utils.translation import gettext_lazy
from django.views.decorators.http import require_POST

from projects import access, language, services
from projects.models import Membership, Project
from projects.roles import PROJECT_ROLES, ROLE_LABELS, is_admin


class NewProjectForm(forms.Form):
    name = forms.CharField(max_length=100, label=gettext_lazy("Project name"))
    description = forms.CharField(required=False, label=gettext_lazy("Description"),
                                  widget=forms.Textarea(attrs={"rows": 2}))


class AddMemberForm(forms.Form):
    username = forms.CharField(max_length=150, label=gettext_lazy("Username"),
                               help_text=gettext_lazy("The person's account name (an administrator creates accounts)."))
    role = forms.ChoiceField(label=gettext_lazy("Role"), choices=[(r, ROLE_LABELS[r]) for r in PROJECT_ROLES])

    def __init__(self, *args, **kwargs):
        kwargs.setdefault("auto_id", "member_%s")
        super().__init__(*args, **kwargs)


def _project(request, pk: int) -> Project:
    """A project the user may enter (member, or administrator); any other is a 404."""
    return get_object_or_404(access.projects_of(request.user), pk=pk)


def _manageable(request, pk: int) -> Project:
    project = _project(request, pk)
    if not services.may_manage_members(request.user, project):
        raise PermissionDenied(_("Only the project's coordinators and administrators add and remove its members."))
    return project


@login_required
def project_list(request):
    form = NewProjectForm(request.POST or None) if is_admin(request.user) else None
    if request.method == "POST":
        if form is None:
            raise PermissionDenied(_("Only administrators create projects."))
        if form.is_valid():
            try:
                project = services.create_project(form.cleaned_data["name"], by=request.user,
                                                  description=form.cleaned_data["description"].strip())
            except services.ProjectError as exc:
                form.add_error("name", str(exc))
            else:
                messages.success(request,
                                 _("Project “%(name)s” created. Add its members next.") % {"name": project.name})
                return redirect("project-detail", pk=project.pk)
    mine = list(access.projects_of(request.user))
    held = {}
    for membership in Membership.objects.filter(user=request.user, project__in=[p.pk for p in mine]):
        held.setdefault(membership.project_id, []).append(ROLE_LABELS[membership.role])
    rows = [(p, held.get(p.pk, []), p.memberships.values("user").distinct().count()) for p in mine]
    return render(request, "projects/project_list.html", {"rows": rows, "form": form},
                  status=400 if form is not None and form.errors else 200)


@login_required
def project_detail(request, pk: int):
    project = _project(request, pk)
    manage = services.may_manage_members(request.user, project)
    form = AddMemberForm(request.POST or None) if manage else None
    if request.method == "POST":
        if form is None:
            raise PermissionDenied(_("Only the project's coordinators and administrators add members."))
        if form.is_valid():
            user = get_user_model().objects.filter(username=form.cleaned_data["username"].strip(),
                                                   is_active=True).first()
            if user is None:  # missing and deactivated accounts answer alike
                form.add_error("username", _("No active account named “%(name)s”.")
                               % {"name": form.cleaned_data["username"].strip()})
            else:
                try:
                    added = services.add_member(project, user, form.cleaned_data["role"], by=request.user)
                except services.ProjectError as exc:
                    form.add_error(None, str(exc))
                else:
                    role = ROLE_LABELS[form.cleaned_data["role"]]
                    values = {"user": user.username, "role": role, "project": project.name}
                    messages.success(request, _("%(user)s is now a member of %(project)s: %(role)s.") % values
                                     if added else _("%(user)s was a member of %(project)s already: %(role)s.")
                                     % values)
                    return redirect("project-detail", pk=project.pk)
    return render(request, "projects/project_detail.html",
                  {"the_project": project, "members": services.members(project), "manage": manage, "form": form},
                  status=400 if form is not None and form.errors else 200)


@login_required
def member_remove(request, pk: int, user_id: int):
    """Confirm, then take a member's roles (or one role) in the project away; their work stays."""
    project = _manageable(request, pk)
    member = get_object_or_404(get_user_model(), pk=user_id, memberships__project=project)
    roles = list(Membership.objects.filter(project=project, user=member).values_list("role", flat=True))
    if request.method == "POST":
        role = request.POST.get("role") or None
        if role is not None and role not in roles:
            raise Http404(_("No such role of this member."))
        try:
            removed = services.remove_member(project, member, role, by=request.user)
        except services.ProjectError as exc:
            messages.error(request, str(exc))
        else:
            messages.success(request, _("%(user)s: %(n)d role(s) in %(project)s removed; their work stays in the "
                                        "project.") % {"user": member.username, "n": removed,
                                                       "project": project.name})
        return redirect("project-detail", pk=project.pk)
    return render(request, "projects/project_member_remove.html",
                  {"the_project": project, "member": member, "roles": [(r, ROLE_LABELS[r]) for r in roles]})


@require_POST
@login_required
def project_switch(request):
    """The navigation's switch: remember the chosen project in the session, then go home (or to a safe ``next``)."""
    project = access.find(request.user, request.POST.get("project", ""))
    if project is None:
        raise Http404(_("No such project that you are a member of."))
    request.session[access.SESSION_KEY] = project.pk
    access.remember(request.user, project)
    target = request.POST.get("next") or ""
    if not url_has_allowed_host_and_scheme(target, allowed_hosts={request.get_host()},
                                           require_https=request.is_secure()):
        target = "home"
    return redirect(target)


@require_POST
def language_switch(request):
    """The language menu (the account menu's, and the login page's before signing in): the signed-in user's choice
    is stored with their account; for everyone the browser keeps it in the language cookie, so the login page after
    signing out stays in it. An empty choice goes back to the browser's own language. Then back to a safe ``next``,
    else to the page the menu was on (the Referer: the menus do not echo the page's address into the page)."""
    code = request.POST.get("language", "")
    chosen = language.supported(code) if code else None
    if code and chosen is None:
        return HttpResponseBadRequest(_("No such language on this site."), content_type="text/plain; charset=utf-8")
    language.choose(request, code)
    target = request.POST.get("next") or request.headers.get("referer") or ""
    if not url_has_allowed_host_and_scheme(target, allowed_hosts={request.get_host()},
                                           require_https=request.is_secure()):
        target = "home"
    response = redirect(target)
    if chosen:
        response.set_cookie(settings.LANGUAGE_COOKIE_NAME, chosen, max_age=settings.LANGUAGE_COOKIE_AGE,
                            path=settings.LANGUAGE_COOKIE_PATH, samesite=settings.LANGUAGE_COOKIE_SAMESITE,
                            secure=settings.LANGUAGE_COOKIE_SECURE, httponly=settings.LANGUAGE_COOKIE_HTTPONLY)
    else:
        response.delete_cookie(settings.LANGUAGE_COOKIE_NAME, path=settings.LANGUAGE_COOKIE_PATH,
                               samesite=settings.LANGUAGE_COOKIE_SAMESITE)
    return response
