"""Invitations to a project: a coordinator invites by e-mail and gets the same answer whether or not the address
has an account; the person accepts by a one-time link (signing in, or making an account); revoked, expired and
used links stop working; every step audited; the link never in a log."""

from __future__ import annotations

import re
from datetime import timedelta

import pytest
from django.core import mail
from django.urls import reverse
from django.utils import timezone

from config.logredact import redact
from projects import invitations
from projects.models import AuditEvent, Invitation, Membership
from projects.roles import roles_in
from tests.factories import staffed_project

pytestmark = [pytest.mark.django_db, pytest.mark.usefixtures("across_projects")]


@pytest.fixture
def alpha(make_user, settings):
    settings.EMAIL_BACKEND = "config.mail.ConsoleBackend"  # no mail server: the link is shown
    project, coordinator, analyst, doctors = staffed_project("Alpha", make_user, physicians=["doc_alpha"])
    return project, coordinator, analyst, doctors


def _invite(client, project, email: str, role: str = "physician"):
    return client.post(reverse("project-detail", args=[project.pk]), {"invite": "1", "email": email, "role": role})


def _link(response) -> str:
    return re.search(r'id="invitation-link" readonly value="([^"]+)"', response.content.decode()).group(1)


def test_the_answer_is_the_same_whether_or_not_the_address_has_an_account(client, alpha, make_user):
    project, coordinator, _, _ = alpha
    make_user("elsewhere", email="known@example.org")  # an account of another project
    client.force_login(coordinator)
    answers = {email: _invite(client, project, email) for email in ("known@example.org", "nobody@example.org")}
    texts = []
    for email, response in answers.items():
        assert response.status_code == 200 and "no-store" in response["Cache-Control"]
        link = _link(response)
        texts.append(response.content.decode().replace(email, "EMAIL").replace(link, "LINK")
                     .replace(link.split("/accounts/invitation/")[1], "TOKEN"))
    # the page differs in nothing but the address, the link and the row of the earlier invitation in the list
    strip = [re.sub(r'<section class="card" aria-labelledby="pending-title".*?</section>', "", t, flags=re.S)
             for t in texts]
    assert "known@example.org" in texts[1]  # the first invitation, pending in the list
    csrf = r'(csrfmiddlewaretoken" value="|X-CSRFToken": ")[^"]+'
    assert re.sub(csrf, "", strip[0]) == re.sub(csrf, "", strip[1])
    events = AuditEvent.objects.filter(action="invitation-create", project=project).order_by("at")
    assert [sorted(e.data) for e in events] == [["email", "expires", "invitation", "role"]] * 2
    assert not Membership.objects.filter(project=project, user__username="elsewhere").exists()


def test_a_new_person_accepts_by_choosing_a_username_and_password(client, alpha):
    project, coordinator, _, _ = alpha
    client.force_login(coordinator)
    link = _link(_invite(client, project, "ana@example.org"))
    assert "/accounts/invitation/" in link and link.split("/accounts/invitation/")[1] not in redact(f"GET {link}")
    page = client.get(reverse("project-detail", args=[project.pk])).content.decode()
    assert 'data-testid="pending-invitations"' in page and "ana@example.org" in page
    client.logout()
    opened = client.get(link)
    assert opened.status_code == 302 and opened.url == reverse("invitation")  # the token leaves the address
    page = client.get(opened.url)
    assert "Alpha" in page.content.decode() and "no-store" in page["Cache-Control"]
    refused = client.post(opened.url, {"username": "ana", "password1": "short", "password2": "short"})
    assert refused.status_code == 400 and not Invitation.objects.get().accepted_at
    done = client.post(opened.url, {"username": "ana", "first_name": "Ana", "last_name": "Silva",
                                    "password1": "a-long-password-9", "password2": "a-long-password-9"})
    assert done.status_code == 302 and done.url == reverse("home")
    invitation = Invitation.objects.get()
    assert invitation.accepted_by.username == "ana" and invitation.accepted_by.email == "ana@example.org"
    assert roles_in(invitation.accepted_by, project) == {"physician"}
    assert client.get(reverse("home")).status_code == 200  # signed in
    assert AuditEvent.objects.filter(action="invitation-accept", project=project, actor=invitation.accepted_by)
    client.logout()
    assert client.login(username="ana", password="a-long-password-9")
    client.logout()
    spent = client.get(link, follow=True).content.decode()
    assert "no longer works" in spent  # used once: spent
    assert "ana@example.org" not in client.get(reverse("project-detail", args=[project.pk])).content.decode()


def test_an_existing_account_signs_in_and_accepts(client, alpha, make_user):
    project, coordinator, _, _ = alpha
    someone = make_user("someone")
    client.force_login(coordinator)
    link = _link(_invite(client, project, "someone@example.org", role="analyst"))
    client.logout()
    page = client.get(link, follow=True).content.decode()
    login = reverse("login") + "?next=" + reverse("invitation")
    assert login in page
    response = client.post(login, {"username": "someone", "password": "correct-horse-battery",
                                   "next": reverse("invitation")})
    assert response.status_code == 302 and response.url == reverse("invitation")
    page = client.get(reverse("invitation")).content.decode()
    assert "Accept as someone" in page
    assert client.post(reverse("invitation")).status_code == 302
    assert roles_in(someone, project) == {"analyst"}
    assert Invitation.objects.get().accepted_by == someone


def test_revoked_and_expired_links_stop_working_and_only_coordinators_revoke(client, alpha):
    project, coordinator, analyst, _ = alpha
    client.force_login(coordinator)
    first = _link(_invite(client, project, "one@example.org"))
    second = _link(_invite(client, project, "two@example.org"))
    one = Invitation.objects.get(email="one@example.org")
    revoke = reverse("project-invitation-revoke", args=[project.pk, one.pk])
    client.force_login(analyst)
    assert client.post(revoke).status_code == 403
    client.force_login(coordinator)
    assert client.get(revoke).status_code == 405
    assert client.post(revoke).status_code == 302
    one.refresh_from_db()
    assert one.revoked_by == coordinator and one.revoked_at
    assert AuditEvent.objects.filter(action="invitation-revoke", project=project, actor=coordinator).exists()
    Invitation.objects.filter(email="two@example.org").update(expires_at=timezone.now() - timedelta(seconds=1))
    client.logout()
    for link in (first, second):
        page = client.get(link, follow=True).content.decode()
        assert "no longer works" in page
        assert client.post(reverse("invitation"), {"username": "x", "password1": "a-long-password-9",
                                                   "password2": "a-long-password-9"}).status_code == 200
    assert not Invitation.objects.filter(accepted_at__isnull=False).exists()


def test_with_a_mail_server_the_link_is_mailed_not_shown(client, alpha, settings):
    project, coordinator, _, _ = alpha
    settings.EMAIL_BACKEND = "django.core.mail.backends.smtp.EmailBackend"
    from unittest import mock

    client.force_login(coordinator)
    with mock.patch("projects.views.send_mail") as send:
        response = _invite(client, project, "mailed@example.org")
    assert response.status_code == 302
    assert send.call_count == 1 and send.call_args.args[3] == ["mailed@example.org"]
    assert "/accounts/invitation/" in send.call_args.args[1]
    assert not mail.outbox
    page = client.get(reverse("project-detail", args=[project.pk])).content.decode()
    assert "Invitation sent to mailed@example.org" in page and 'id="invitation-link"' not in page
    with mock.patch("projects.views.send_mail", side_effect=OSError("connection refused")):
        response = _invite(client, project, "unmailed@example.org")
    assert response.status_code == 200 and "could not be e-mailed" in response.content.decode()
    assert "/accounts/invitation/" in _link(response)  # nothing lost: the link is shown instead


def test_a_link_is_accepted_once_even_by_two_sessions(alpha, make_user):
    project, coordinator, _, _ = alpha
    invitation, path = invitations.invite(project, email="x@example.org", role="physician", by=coordinator)
    token = path.rstrip("/").rsplit("/", 1)[1]
    first, second = make_user("first_one"), make_user("second_one")
    invitations.accept(invitations.find(token), first)
    with pytest.raises(invitations.InvitationError):
        invitations.accept(invitation, second)
    assert invitations.find(token) is None
    assert not roles_in(second, project)


def test_the_invitation_pages_are_in_chinese_for_a_chinese_reader(client, alpha, settings):
    project, coordinator, _, _ = alpha
    client.cookies[settings.LANGUAGE_COOKIE_NAME] = "zh-hans"
    client.force_login(coordinator)
    response = _invite(client, project, "zh@example.org")
    html = response.content.decode()
    assert "邀请一位成员" in html and "待处理的邀请" in html and "邀请链接" in html
    link = _link(response)
    client.logout()
    client.cookies[settings.LANGUAGE_COOKIE_NAME] = "zh-hans"
    page = client.get(link, follow=True).content.decode()
    assert "邀请您以" in page and "您是新用户" in page and "创建我的账户并加入" in page
    assert "invites you" not in page and "You are new here" not in page
