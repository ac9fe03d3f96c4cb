"""Project pages: my projects (administrators: all, and a form to create one), a project's members (its
coordinators and the administrators add and remove them), and the navigation's project switch.

A project the user may not enter answers 404, as a missing one; its members who do not manage it read the member
list and get 403 on the forms' actions (as role-restricted pages do)."""

from __future__ import annotations

import smtplib

from django import forms
from django.conf import settings
from django.contrib import messages
from django.contrib.auth import get_user_model
from django.contrib.auth import login as auth_login
from django.contrib.auth.decorators import login_required
from django.contrib.auth.forms import UserCreationForm
from django.core.exceptions import PermissionDenied
from django.core.mail import send_mail
from django.http import Http404, HttpResponseBadRequest
from django.shortcuts import redirect, render
from django.utils.cache import patch_cache_control
from django.utils.http import url_has_allowed_host_and_scheme
from django.utils.translation import gettext as _
from django.utils.translation import gettext_lazy
from django.views.decorators.http import require_POST

from projects import access, accounts, invitations, language, services
from projects.models import Invitation, Membership, Project
from projects.roles import PHYSICIAN, PROJECT_ROLES, ROLE_LABELS, is_admin


class NewProjectForm(forms.Form):
    name = forms.CharField(max_length=100, label=gettext_lazy("Project name"))
    description = forms.CharField(required=False, label=gettext_lazy("Description"),
                                  widget=forms.Textarea(attrs={"rows": 2}))


class AddMemberForm(forms.Form):
    username = forms.CharField(max_length=150, label=gettext_lazy("Username"), help_text=gettext_lazy(
        "The account name of someone you already work with in one of your projects; for a new person, create an "
        "account below."))
    role = forms.ChoiceField(label=gettext_lazy("Role"), choices=[(r, ROLE_LABELS[r]) for r in PROJECT_ROLES])

    def __init__(self, *args, **kwargs):
        kwargs.setdefault("auto_id", "member_%s")
        super().__init__(*args, **kwargs)


class NewAccountForm(forms.Form):
    """A new person's account in the project (a physician, usually), with a one-time set-password link."""

    first_name = forms.CharField(max_length=150, label=gettext_lazy("First name"), required=False)
    last_name = forms.CharField(max_length=150, label=gettext_lazy("Last name"))
    email = forms.EmailField(required=False, label=gettext_lazy("E-mail (optional)"), help_text=gettext_lazy(
        "With a mail server configured, the set-password link is e-mailed here; otherwise it is shown once on this "
        "page for you to hand over."))
    role = forms.ChoiceField(label=gettext_lazy("Role"), choices=[(r, ROLE_LABELS[r]) for r in PROJECT_ROLES],
                             initial=PHYSICIAN)

    def __init__(self, *args, **kwargs):
        kwargs.setdefault("auto_id", "account_%s")
        super().__init__(*args, **kwargs)


class InviteForm(forms.Form):
    """An invitation by e-mail: the same answer whether or not the address has an account here."""

    email = forms.EmailField(label=gettext_lazy("E-mail address"), help_text=gettext_lazy(
        "The person gets a one-time link to join this project: with an account here they sign in and accept, "
        "otherwise they choose a username and password. You are not told whether they have an account."))
    role = forms.ChoiceField(label=gettext_lazy("Role"), choices=[(r, ROLE_LABELS[r]) for r in PROJECT_ROLES],
                             initial=PHYSICIAN)

    def __init__(self, *args, **kwargs):
        kwargs.setdefault("auto_id", "invite_%s")
        super().__init__(*args, **kwargs)


def _project(request, pk: int) -> Project:
    """A project the user may enter (member, or administrator); any other is a 404."""
    return access.get_in_project_or_404(access.projects_of(request.user), request, pk=pk)


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


def _create_account(request, project: Project, form: NewAccountForm):
    """Creates the account; returns what the page shows once: the set-password link when it is not e-mailed."""
    data = form.cleaned_data
    try:
        user, path = accounts.create_account(project, first_name=data["first_name"], last_name=data["last_name"],
                                             email=data["email"], role=data["role"], by=request.user)
    except services.ProjectError as exc:
        form.add_error(None, str(exc))
        return None
    link = request.build_absolute_uri(path)
    if data["email"] and accounts.mail_configured():
        send_mail(str(_("Your account on the Mini-CEX Workbench")),
                  str(_("%(coordinator)s created an account for you in the project %(project)s.\n\nYour username: "
                    "%(username)s\nSet your password (the link works once): %(link)s\n"))
                  % {"coordinator": request.user.get_username(), "project": project.name,
                     "username": user.get_username(), "link": link}, None, [data["email"]])
        messages.success(request, _("Account %(username)s created; the set-password link was e-mailed to "
                                    "%(email)s.") % {"username": user.get_username(), "email": data["email"]})
        return None
    return {"user": user, "link": link}


def _invite(request, project: Project, form: InviteForm):
    """Makes the invitation; returns what the page shows once: the link when it is not e-mailed. The answer does
    not depend on whether the address has an account (no account is looked up)."""
    data = form.cleaned_data
    try:
        invitation, path = invitations.invite(project, email=data["email"], role=data["role"], by=request.user)
    except invitations.InvitationError as exc:
        form.add_error(None, str(exc))
        return None
    link = request.build_absolute_uri(path)
    values = {"email": invitation.email, "role": ROLE_LABELS[invitation.role], "project": project.name}
    if accounts.mail_configured():
        try:
            send_mail(str(_("Invitation to the project %(project)s on the Mini-CEX Workbench")) % values,
                      str(_("%(coordinator)s invites you to join the project %(project)s as %(role)s.\n\nOpen "
                            "this link to accept (it works once, until %(expires)s): %(link)s\nWith an account on "
                            "the Workbench you sign in and accept; otherwise you choose a username and password.\n"))
                      % {**values, "coordinator": request.user.get_username(), "link": link,
                         "expires": f"{invitation.expires_at:%Y-%m-%d}"}, None, [invitation.email])
        except (OSError, smtplib.SMTPException):  # the mail server refused or is down: hand the link over instead
            messages.warning(request, _("The invitation could not be e-mailed; hand its link over yourself."))
        else:
            messages.success(request, _("Invitation sent to %(email)s (%(role)s).") % values)
            return None
    return {"invitation": invitation, "link": link}


@login_required
def project_detail(request, pk: int):
    project = _project(request, pk)
    manage = services.may_manage_members(request.user, project)
    posted = request.POST if request.method == "POST" else {}
    which = "invite" if "invite" in posted else "account" if "last_name" in posted else "member" if posted else None
    form = AddMemberForm(posted if which == "member" else None) if manage else None
    account_form = NewAccountForm(posted if which == "account" else None) if manage else None
    invite_form = InviteForm(posted if which == "invite" else None) if manage else None
    new_account = new_invitation = None
    if which and not manage:
        raise PermissionDenied(_("Only the project's coordinators and administrators add members."))
    if which == "invite" and invite_form.is_valid():
        new_invitation = _invite(request, project, invite_form)
        if new_invitation is None and not invite_form.errors:
            return redirect("project-detail", pk=project.pk)
        invite_form = InviteForm() if new_invitation else invite_form
    elif which == "account" and account_form.is_valid():
        new_account = _create_account(request, project, account_form)
        if new_account is None and not account_form.errors:
            return redirect("project-detail", pk=project.pk)
        account_form = NewAccountForm() if new_account else account_form
    elif which == "member" and form.is_valid():
        user = accounts.visible_account(request.user, form.cleaned_data["username"])
        if user is None:  # missing, deactivated and unknown-to-you accounts answer alike
            form.add_error("username", _(
                "%(name)s is not someone you work with in your projects (or no such account is active). Invite "
                "a new person by e-mail above; an administrator adds anyone else.")
                % {"name": repr(form.cleaned_data["username"].strip())})
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
    failed = any(f is not None and f.errors for f in (form, account_form, invite_form))
    response = render(request, "projects/project_detail.html",
                      {"the_project": project, "members": services.members(project), "manage": manage, "form": form,
                       "account_form": account_form, "new_account": new_account, "invite_form": invite_form,
                       "new_invitation": new_invitation,
                       "invitations": _pending(project) if manage else []},
                      status=400 if failed else 200)
    if new_account or new_invitation:
        patch_cache_control(response, no_store=True, private=True)  # the one-time link: never cached
    return response


def _pending(project: Project) -> list[Invitation]:
    rows = list(invitations.pending(project))
    for row in rows:
        row.role_label = ROLE_LABELS[row.role]
    return rows


@require_POST
@login_required
def invitation_revoke(request, pk: int, invitation_id: int):
    """The invitation's link stops working (audited)."""
    project = _manageable(request, pk)
    invitation = access.get_in_project_or_404(Invitation, request, pk=invitation_id, project=project)
    if invitations.revoke(invitation, by=request.user):
        messages.success(request, _("Invitation of %(email)s revoked: its link no longer works.")
                         % {"email": invitation.email})
    else:
        messages.info(request, _("That invitation was no longer pending."))
    return redirect("project-detail", pk=project.pk)


def invitation_open(request, token: str):
    """The one-time link: keeps the token in the session and goes on to the tokenless page, so the token is not
    sent on as a Referer from there (as Django's password-reset link does)."""
    request.session[invitations.SESSION_KEY] = token
    response = redirect("invitation")
    patch_cache_control(response, no_store=True, private=True)
    return response


class JoinForm(UserCreationForm):
    """A new person's account, made by accepting an invitation."""

    first_name = forms.CharField(max_length=150, required=False, label=gettext_lazy("First name"))
    last_name = forms.CharField(max_length=150, required=False, label=gettext_lazy("Last name"))

    class Meta(UserCreationForm.Meta):
        model = get_user_model()
        fields = ("username", "first_name", "last_name")


def invitation(request):
    """The invitation's page: signed in, accept it as yourself; otherwise sign in first, or make an account."""
    found = invitations.find(request.session.get(invitations.SESSION_KEY))
    join_form = None
    if found is not None and not request.user.is_authenticated:
        join_form = JoinForm(request.POST if request.method == "POST" else None)
    if request.method == "POST" and found is not None:
        try:
            if request.user.is_authenticated:
                invitations.accept(found, request.user)
                user = request.user
            elif join_form.is_valid():
                user = invitations.accept_as_new(found, username=join_form.cleaned_data["username"],
                                                 password=join_form.cleaned_data["password1"],
                                                 first_name=join_form.cleaned_data["first_name"],
                                                 last_name=join_form.cleaned_data["last_name"])
                auth_login(request, user, backend=settings.AUTHENTICATION_BACKENDS[-1])
            else:
                user = None
        except invitations.InvitationError as exc:
            messages.error(request, str(exc))
            return redirect("invitation")
        if user is not None:
            request.session.pop(invitations.SESSION_KEY, None)
            request.session[access.SESSION_KEY] = found.project_id
            access.remember(user, found.project)
            messages.success(request, _("Welcome to %(project)s: you are a member now (%(role)s).")
                             % {"project": found.project.name, "role": ROLE_LABELS[found.role]})
            return redirect("home")
    response = render(request, "projects/invitation.html",
                      {"invitation": found, "join_form": join_form,
                       "role": ROLE_LABELS[found.role] if found else ""},
                      status=400 if join_form is not None and join_form.errors else 200)
    patch_cache_control(response, no_store=True, private=True)
    return response


@login_required
def member_remove(request, pk: int, user_id: int):
    """Confirm, then take a member's roles (or one role) in the project away; their work stays."""
    project = _manageable(request, pk)
    member = access.get_in_project_or_404(get_user_model(), request, pk=user_id, memberships__project=project)
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
