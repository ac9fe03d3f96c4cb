"""Projects in the annotation app: two projects with their own coordinator, analyst and physicians and objects in
both; every page, htmx partial and API operation answers 404 for the other project's objects and lists show only
the project's rows; a physician's rating queue spans their projects; the project pages; ``--project``."""

from __future__ import annotations

import io
import json
import re

import pytest
from django.core.management import call_command
from django.core.management.base import CommandError
from django.urls import reverse

from annotation import instruments, labels
from annotation.campaigns import add_rater, assign
from annotation.dialogues import redact
from annotation.forms import AddRatersForm, CampaignForm
from annotation.models import Assignment, Campaign, Corpus, Redaction
from projects import access
from projects import services as projects
from projects.models import AuditEvent, Membership, Project
from projects.roles import roles_in
from projects.scoping import in_project
from tests.factories import answer_all, campaign_with, default_project, staffed_project

pytestmark = [pytest.mark.django_db, pytest.mark.usefixtures("across_projects")]


class Side:
    """One project's people and objects."""

    def __init__(self, name: str, make_user):
        tag = name.lower()
        self.project, self.coordinator, self.analyst, self.physicians = staffed_project(
            name, make_user, physicians=[f"doc_{tag}_{i}" for i in range(2)])
        with in_project(self.project):
            self.campaign = campaign_with(self.physicians, n=4, overlap=2, name=f"Campaign {name}")
            self.corpus = self.campaign.corpus
            self.dialogue = self.corpus.dialogues.order_by("pk").first()
            self.assignment = self.campaign.assignments.filter(rater=self.physicians[0]).order_by("pk").first()
            answer_all(self.assignment, self.physicians[0])
            labels.submit(self.assignment, self.physicians[0])
            self.label = self.assignment.labels.first()
            self.redaction = redact(self.dialogue, field="self_report", turn=None, start=0, end=3,
                                    user=self.coordinator, source=Redaction.Source.COORDINATOR, reason="name")
            self.draft = instruments.create_scale(slug=f"draft-{tag}", name_en=f"Draft scale {name}",
                                                  user=self.coordinator)
            dimension = instruments.add_dimension(self.draft, code="1", name_en="One", user=self.coordinator)
            self.item = instruments.add_item(self.draft, {"code": "1.1", "dimension": dimension.code,
                                                          "text": {"en": "An item", "zh": ""},
                                                          "response": {"type": "binary"}}, user=self.coordinator)


@pytest.fixture
def two(instrument, make_user):
    return Side("Alpha", make_user), Side("Beta", make_user)


def _urls(side: Side) -> dict[str, tuple[str, str]]:
    """(method, url) of every annotation page that names one of ``side``'s objects."""
    c, d, a = side.campaign.pk, side.dialogue.pk, side.assignment.pk
    slug, number = side.draft.scale.slug, side.draft.number
    return {
        "corpus-detail": ("get", reverse("corpus-detail", args=[side.corpus.pk])),
        "privacy-review": ("get", reverse("privacy-review", args=[side.corpus.pk])),
        "privacy-review-post": ("post", reverse("privacy-review", args=[side.corpus.pk])),
        "dialogue-detail": ("get", reverse("dialogue-detail", args=[d])),
        "redaction-revoke": ("post", reverse("redaction-revoke", args=[side.redaction.pk])),
        "campaign-detail": ("get", reverse("campaign-detail", args=[c])),
        "campaign-add-raters": ("post", reverse("campaign-add-raters", args=[c])),
        "campaign-rater-toggle": ("post", reverse("campaign-rater-toggle", args=[c, side.physicians[0].pk])),
        "campaign-assign": ("post", reverse("campaign-assign", args=[c])),
        "campaign-sample": ("post", reverse("campaign-sample", args=[c])),
        "campaign-allow-names": ("post", reverse("campaign-allow-names", args=[c])),
        "campaign-dialogue": ("get", reverse("campaign-dialogue", args=[c, d])),
        "campaign-dialogue-action": ("post", reverse("campaign-dialogue-action", args=[c, d])),
        "assignment-reassign": ("post", reverse("assignment-reassign", args=[a])),
        "label-history": ("get", reverse("label-history", args=[a])),
        "scale-version": ("get", reverse("scale-version", args=[slug, number])),
        "scale-detail": ("get", reverse("scale-detail", args=[slug])),
        "scale-new-version": ("post", reverse("scale-new-version", args=[slug, number])),
        "scale-publish": ("post", reverse("scale-publish", args=[slug, number])),
        "scale-add-dimension": ("post", reverse("scale-add-dimension", args=[slug, number])),
        "scale-add-item": ("post", reverse("scale-add-item", args=[slug, number])),
        "item-edit": ("get", reverse("item-edit", args=[side.item.pk])),
        "item-remove": ("post", reverse("item-remove", args=[side.item.pk])),
    }


def test_every_page_of_the_other_project_is_a_404(client, two):
    alpha, beta = two
    for user in (alpha.coordinator, alpha.analyst):
        client.force_login(user)
        for name, (method, url) in _urls(beta).items():
            response = getattr(client, method)(url, {"reason": "x", "note": "x"})
            assert response.status_code in (403, 404), (user, name)  # analysts: 403 on coordinators' actions
            if user == alpha.coordinator or method == "get" and name not in ("item-edit", "campaign-dialogue",
                                                                             "label-history", "privacy-review"):
                assert response.status_code == 404, (user, name, response.status_code)
    # Nothing of Beta changed.
    beta.campaign.refresh_from_db()
    assert not beta.campaign.allow_names and beta.redaction.revoked_at is None
    assert beta.draft.scale.versions.count() == 1


def test_the_same_pages_answer_in_their_own_project(client, two):
    alpha, _ = two
    client.force_login(alpha.coordinator)
    for name, (method, url) in _urls(alpha).items():
        if method == "get":
            assert client.get(url).status_code == 200, name


def test_lists_and_home_show_only_the_projects_rows(client, two):
    alpha, beta = two
    client.force_login(alpha.coordinator)
    for url in (reverse("home"), reverse("corpus-list"), reverse("campaign-list"), reverse("scale-list")):
        page = client.get(url).content.decode()
        assert beta.campaign.name not in page and beta.corpus.name not in page, url
        assert beta.draft.scale.name_en not in page, url
    page = client.get(reverse("campaign-list")).content.decode()
    assert alpha.campaign.name in page
    # The library: a published version of Beta's scale is listed read-only in Alpha.
    with in_project(beta.project):
        from annotation import scales

        scales.publish(beta.draft, beta.coordinator)
    assert beta.draft.scale.name_en in client.get(reverse("scale-list")).content.decode()
    detail = client.get(reverse("scale-version", args=[beta.draft.scale.slug, beta.draft.number]))
    assert detail.status_code == 200 and detail.context["can_version"] is False
    assert client.post(reverse("scale-new-version", args=[beta.draft.scale.slug, 1]),
                       {"note": "mine"}).status_code == 404


def test_form_choices_are_the_projects(two):
    alpha, beta = two
    with in_project(alpha.project):  # as a request of Alpha's builds them
        raters = set(AddRatersForm(project=alpha.project).fields["users"].queryset)
        assert raters == set(alpha.physicians)
        form = CampaignForm(project=alpha.project)
        assert set(form.fields["corpus"].queryset) == {alpha.corpus}
        versions = set(form.fields["scale_version"].queryset)
        assert beta.draft not in versions and alpha.campaign.scale_version in versions
        # Another project's corpus posted anyway: refused as an invalid choice.
        bad = CampaignForm({"name": "X", "corpus": beta.corpus.pk, "scale_version": alpha.campaign.scale_version_id,
                            "phase": "formal", "overlap": 1}, project=alpha.project)
        assert not bad.is_valid() and "corpus" in bad.errors
        # Campaign names are unique per project: Beta's name is free in Alpha.
        same = CampaignForm({"name": beta.campaign.name, "corpus": alpha.corpus.pk,
                             "scale_version": alpha.campaign.scale_version_id, "phase": "formal", "overlap": 1},
                            project=alpha.project)
        assert same.is_valid(), same.errors


def test_adding_another_projects_physician_as_rater_is_refused(client, two):
    alpha, beta = two
    client.force_login(alpha.coordinator)
    client.post(reverse("campaign-add-raters", args=[alpha.campaign.pk]), {"users": [beta.physicians[0].pk]})
    assert not alpha.campaign.raters.filter(user=beta.physicians[0]).exists()
    response = client.post(f"/api/campaigns/{alpha.campaign.pk}/raters/", {"user": beta.physicians[0].username},
                           content_type="application/json")
    # Not a member of Alpha: answered as an account that does not exist (no enumeration of other projects' people).
    assert response.status_code == 400 and "No member" in response.json()["detail"]


API_DETAILS = [
    ("corpora", "corpus"), ("corpora/{}/dialogues", "corpus"), ("dialogues", "dialogue"),
    ("campaigns", "campaign"), ("campaigns/{}/raters", "campaign"), ("campaigns/{}/progress", "campaign"),
    ("campaigns/{}/sample", "campaign"), ("assignments", "assignment"), ("assignments/{}/labels", "assignment"),
    ("labels", "label"),
]


def _obj_pk(side: Side, kind: str) -> int:
    return getattr(side, kind).pk


def test_api_reads_and_writes_across_projects_are_404(client, two):
    alpha, beta = two
    for user in (alpha.coordinator, alpha.analyst):
        client.force_login(user)
        for path, kind in API_DETAILS:
            url = f"/api/{path.format(_obj_pk(beta, kind))}/" if "{}" in path else \
                f"/api/{path}/{_obj_pk(beta, kind)}/"
            assert client.get(url).status_code == 404, (user, url)
        assert client.get(f"/api/scales/{beta.draft.scale.slug}/").status_code == 404
        assert client.get(f"/api/scale-versions/{beta.draft.pk}/").status_code == 404
    client.force_login(alpha.coordinator)
    for url in (f"/api/campaigns/{beta.campaign.pk}/assign/", f"/api/campaigns/{beta.campaign.pk}/raters/",
                f"/api/campaigns/{beta.campaign.pk}/sample/"):
        assert client.post(url, {"user": alpha.physicians[0].pk, "size": 1},
                           content_type="application/json").status_code == 404, url
    # A campaign on another project's corpus cannot be created.
    response = client.post("/api/campaigns/", {"name": "Sneaky", "corpus": beta.corpus.pk,
                                               "scale_version": alpha.campaign.scale_version_id},
                           content_type="application/json")
    assert response.status_code == 400 and not Campaign.objects.filter(name="Sneaky").exists()
    response = client.post("/api/campaigns/", {"name": "On a draft", "corpus": alpha.corpus.pk,
                                               "scale_version": beta.draft.pk}, content_type="application/json")
    assert response.status_code == 400


def test_api_lists_have_no_other_project_rows(client, two):
    alpha, beta = two
    client.force_login(alpha.coordinator)

    def ids(path):
        body = client.get(f"/api/{path}").json()
        return {row["id"] for row in (body["results"] if isinstance(body, dict) else body)}

    assert ids("corpora/") == {alpha.corpus.pk}
    assert ids("campaigns/") == {alpha.campaign.pk}
    assert ids("dialogues/") == set(alpha.corpus.dialogues.values_list("pk", flat=True))
    assert ids("assignments/") == set(alpha.campaign.assignments.values_list("pk", flat=True))
    assert ids("labels/") == set(alpha.assignment.labels.values_list("pk", flat=True))
    assert ids(f"dialogues/?corpus={beta.corpus.pk}") == set()
    assert ids(f"labels/?campaign={beta.campaign.pk}") == set()
    slugs = {row["slug"] for row in client.get("/api/scales/").json()["results"]}
    assert alpha.draft.scale.slug in slugs and beta.draft.scale.slug not in slugs
    assert beta.draft.pk not in ids("scale-versions/")


def test_the_x_project_header_enters_only_the_users_projects(client, two):
    alpha, beta = two
    client.force_login(alpha.coordinator)
    assert client.get("/api/corpora/", HTTP_X_PROJECT=beta.project.name).status_code == 404
    assert client.get("/api/corpora/", HTTP_X_PROJECT=alpha.project.name).status_code == 200


def test_a_physicians_queue_spans_their_projects(client, two, make_user):
    alpha, beta = two
    both = make_user("doc_both")
    projects.add_member(alpha.project, both, "physician")
    projects.add_member(beta.project, both, "physician")
    for side in (alpha, beta):
        Campaign.objects.filter(pk=side.campaign.pk).update(overlap=3)  # room for a third rater
        add_rater(side.campaign, both)
        assert assign(side.campaign).created == 4
    client.force_login(both)
    home = client.get(reverse("home")).content.decode()
    assert alpha.campaign.name in home and beta.campaign.name in home
    api = client.get("/api/assignments/").json()["results"]
    assert {row["campaign"]["id"] if isinstance(row["campaign"], dict) else row["campaign"] for row in api} == {
        alpha.campaign.pk, beta.campaign.pk}
    # The rating page of the other project's assignment enters that project for the request.
    theirs = beta.campaign.assignments.filter(rater=both).first()
    page = client.get(reverse("rate", args=[theirs.pk]))
    assert page.status_code == 200 and page.wsgi_request.project == beta.project
    seen = set()
    for _ in range(20):
        response = client.get(reverse("rate-next"))
        if response.status_code != 302:
            break
        pk = int(response.url.rstrip("/").rsplit("/", 1)[1])
        assignment = alpha.campaign.assignments.filter(pk=pk).first() or beta.campaign.assignments.get(pk=pk)
        seen.add(assignment.campaign_id)
        answer_all(assignment, both)
        labels.submit(assignment, both)
    assert seen == {alpha.campaign.pk, beta.campaign.pk}
    # Another rater's assignment is a 404, on the page and in the API.
    other = beta.assignment
    assert client.get(reverse("rate", args=[other.pk])).status_code == 404
    assert client.get(f"/api/assignments/{other.pk}/").status_code == 404
    # Removed from Beta: Beta's work leaves the queue and its pages.
    projects.remove_member(beta.project, both)
    assert client.get(reverse("rate", args=[theirs.pk])).status_code == 404
    assert beta.campaign.name not in client.get(reverse("home")).content.decode()


def test_a_user_with_different_roles_gets_each_roles_rights_in_its_project(client, two):
    alpha, beta = two
    projects.add_member(beta.project, alpha.coordinator, "analyst")
    client.force_login(alpha.coordinator)
    assert client.post(reverse("campaign-allow-names", args=[alpha.campaign.pk])).status_code == 302
    session = client.session
    session[access.SESSION_KEY] = beta.project.pk
    session.save()
    assert client.get(reverse("campaign-detail", args=[beta.campaign.pk])).status_code == 200
    assert client.post(reverse("campaign-allow-names", args=[beta.campaign.pk])).status_code == 403
    assert client.get(reverse("campaign-detail", args=[alpha.campaign.pk])).status_code == 404
    assert roles_in(alpha.coordinator, beta.project) == {"analyst"}


# --- project pages -------------------------------------------------------------------------------------------


def test_a_coordinator_adds_and_removes_members_of_their_own_project(client, two, make_user):
    alpha, beta = two
    newcomer = make_user("newcomer")
    gamma = projects.create_project("Gamma")  # where alpha's coordinator already works with the newcomer
    projects.add_member(gamma, alpha.coordinator, "coordinator")
    projects.add_member(gamma, newcomer, "physician")
    client.force_login(alpha.coordinator)
    page = client.get(reverse("project-detail", args=[alpha.project.pk]))
    assert page.status_code == 200 and "Add a member" in page.content.decode()
    response = client.post(reverse("project-detail", args=[alpha.project.pk]),
                           {"username": "newcomer", "role": "physician"})
    assert response.status_code == 302
    assert Membership.objects.filter(project=alpha.project, user=newcomer, role="physician").exists()
    assert AuditEvent.objects.filter(action="member-add", project=alpha.project).exists()
    # Nobody, and an account of another project: the same answer, so the form tells no usernames of the instance.
    names = ("nobody", beta.physicians[0].username)
    answers = [client.post(reverse("project-detail", args=[alpha.project.pk]), {"username": name, "role": "physician"})
               for name in names]
    assert [a.status_code for a in answers] == [400, 400]
    texts = [a.content.decode().replace(name, "NAME") for a, name in zip(answers, names, strict=True)]
    assert "is not someone you work with" in texts[0] and texts[0].count("NAME") == texts[1].count("NAME")
    assert not Membership.objects.filter(project=alpha.project, user=beta.physicians[0]).exists()
    remove = reverse("project-member-remove", args=[alpha.project.pk, newcomer.pk])
    confirm = client.get(remove)
    assert confirm.status_code == 200 and "Remove newcomer" in confirm.content.decode()
    assert Membership.objects.filter(project=alpha.project, user=newcomer).exists()  # a GET removes nothing
    client.post(remove, {"role": ""})
    assert not Membership.objects.filter(project=alpha.project, user=newcomer).exists()
    assert AuditEvent.objects.filter(action="member-remove", project=alpha.project).exists()
    # Another project: 404 like a missing one, for reading and for every action.
    assert client.get(reverse("project-detail", args=[beta.project.pk])).status_code == 404
    assert client.post(reverse("project-detail", args=[beta.project.pk]),
                       {"username": "newcomer", "role": "coordinator"}).status_code == 404
    assert client.post(reverse("project-member-remove",
                               args=[beta.project.pk, beta.physicians[0].pk])).status_code == 404
    assert not Membership.objects.filter(project=beta.project, user=newcomer).exists()
    assert set(access.projects_of(alpha.coordinator)) == {alpha.project, gamma}
    listing = client.get(reverse("project-list")).content.decode()
    assert alpha.project.name in listing and beta.project.name not in listing


def test_a_coordinator_creates_a_physician_account_with_a_one_time_link(client, two, settings):
    """No administrator: the coordinator creates a physician's account (username from the name, never one they
    choose), the page shows the set-password link once (no mail server), the physician sets a password with it,
    logs in and finds the project; the link then no longer works."""
    alpha, _ = two
    settings.EMAIL_BACKEND = "config.mail.ConsoleBackend"
    client.force_login(alpha.coordinator)
    page = client.post(reverse("project-detail", args=[alpha.project.pk]),
                       {"first_name": "Ana", "last_name": "Silva", "email": "", "role": "physician"})
    assert page.status_code == 200 and "no-store" in page["Cache-Control"]
    html = page.content.decode()
    created = Membership.objects.get(project=alpha.project, user__last_name="Silva").user
    assert created.username.startswith("ana-silva-") and not created.has_usable_password()
    assert roles_in(created, alpha.project) == {"physician"}
    link = re.search(r'id="set-password-link" readonly value="([^"]+)"', html).group(1)
    assert "/accounts/set-password/" in link
    assert AuditEvent.objects.filter(action="account-create", project=alpha.project).exists()
    client.logout()
    form = client.get(link, follow=True)  # Django keeps the token in the session and redirects to a tokenless URL
    assert created.username in form.content.decode()
    done = client.post(form.redirect_chain[-1][0], {"new_password1": "a-long-password-9",
                                                    "new_password2": "a-long-password-9"})
    assert done.status_code == 302
    assert client.login(username=created.username, password="a-long-password-9")
    assert alpha.project.name in client.get(reverse("project-list")).content.decode()
    client.logout()
    assert "no longer works" in client.get(link, follow=True).content.decode()  # used: the link is spent
    from config.logredact import redact
    assert link.split("/accounts/set-password/")[1] not in redact(f"GET {link} HTTP/1.1")


def test_physicians_and_analysts_read_the_member_list_only(client, two):
    alpha, _ = two
    for user in (alpha.analyst, alpha.physicians[0]):
        client.force_login(user)
        page = client.get(reverse("project-detail", args=[alpha.project.pk]))
        assert page.status_code == 200 and alpha.coordinator.username in page.content.decode()
        assert "Add a member" not in page.content.decode()
        assert client.post(reverse("project-detail", args=[alpha.project.pk]),
                           {"username": user.username, "role": "coordinator"}).status_code == 403
        assert client.post(reverse("project-member-remove",
                                   args=[alpha.project.pk, alpha.coordinator.pk])).status_code == 403
    assert roles_in(alpha.analyst, alpha.project) == {"analyst"}
    assert Membership.objects.filter(project=alpha.project, user=alpha.coordinator).exists()


def test_an_administrator_creates_a_project_and_sees_every_project(client, two, admin_user):
    alpha, beta = two
    client.force_login(admin_user)
    listing = client.get(reverse("project-list")).content.decode()
    assert alpha.project.name in listing and beta.project.name in listing and "Create a project" in listing
    response = client.post(reverse("project-list"), {"name": "Gamma", "description": "third team"})
    gamma = Project.objects.get(name="Gamma")
    assert response.url == reverse("project-detail", args=[gamma.pk])
    assert client.post(reverse("project-list"), {"name": "Gamma"}).status_code == 400  # taken
    assert client.get(reverse("project-detail", args=[beta.project.pk])).status_code == 200
    client.force_login(alpha.coordinator)
    assert client.post(reverse("project-list"), {"name": "Delta"}).status_code == 403
    assert not Project.objects.filter(name="Delta").exists()


def test_the_navigation_switches_between_the_users_projects(client, two):
    alpha, beta = two
    projects.add_member(beta.project, alpha.coordinator, "coordinator")
    client.force_login(alpha.coordinator)
    page = client.get(reverse("home")).content.decode()
    assert 'id="project-switch"' in page and beta.project.name in page
    response = client.post(reverse("project-switch"), {"project": beta.project.pk,
                                                       "next": reverse("campaign-list")})
    assert response.url == reverse("campaign-list")
    assert client.session[access.SESSION_KEY] == beta.project.pk
    assert beta.campaign.name in client.get(reverse("campaign-list")).content.decode()
    assert client.post(reverse("project-switch"), {"project": alpha.project.pk,
                                                   "next": "https://evil.example/"}).url == reverse("home")
    client.force_login(alpha.analyst)
    assert client.post(reverse("project-switch"), {"project": beta.project.pk}).status_code == 404


# --- commands ------------------------------------------------------------------------------------------------


def test_commands_take_a_project(tmp_path, two):
    alpha, beta = two
    path = tmp_path / "d.jsonl"
    path.write_text(json.dumps({"id": "c1", "self_report": "cough", "turns": [{"role": "doctor", "text": "hi"}],
                                "model": "m"}) + "\n", encoding="utf-8")
    call_command("import_dialogues", str(path), "--corpus", alpha.corpus.name, "--project", beta.project.name,
                 stdout=io.StringIO())
    # Alpha's corpus name in Beta is a new corpus of Beta; Alpha's corpus is untouched.
    made = Corpus.objects.get(name=alpha.corpus.name, project=beta.project)
    assert made.dialogues.count() == 1 and not alpha.corpus.dialogues.filter(external_id="c1").exists()
    with pytest.raises(CommandError, match="No project named"):
        call_command("import_dialogues", str(path), "--corpus", "x", "--project", "Nope", stdout=io.StringIO())
    labels_csv = tmp_path / "l.csv"
    labels_csv.write_text("dialogue_id,rater,item,value\nc1,ext1,1.1,1\n", encoding="utf-8")
    with pytest.raises(CommandError, match="no corpus"):
        call_command("import_labels", str(labels_csv), "--corpus", made.name + " x", "--project", beta.project.name,
                     stdout=io.StringIO())
    out = io.StringIO()
    with pytest.raises(CommandError, match="There is no scale"):
        call_command("export_instrument", beta.draft.scale.slug, "--project", alpha.project.name, stdout=out)
    call_command("export_instrument", beta.draft.scale.slug, "--project", beta.project.name, stdout=out)
    assert json.loads(out.getvalue())["slug"] == beta.draft.scale.slug
    # An instrument file with another project's slug does not add a version to that project's scale.
    spec = json.loads(out.getvalue())
    spec["items"][0]["text"] = {"en": "changed", "zh": ""}
    file = tmp_path / "i.json"
    file.write_text(json.dumps(spec), encoding="utf-8")
    with pytest.raises(CommandError):
        call_command("import_instrument", str(file), "--project", alpha.project.name, stdout=io.StringIO(),
                     stderr=io.StringIO())
    assert beta.draft.scale.versions.count() == 1


def test_demo_users_land_in_the_demo_project_and_the_admin_is_shown_the_way_there(client, instrument):
    from django.contrib.auth import get_user_model

    from annotation.demo import load_demo, load_finished_demo

    load_demo()
    load_finished_demo()
    User = get_user_model()
    demo = projects.demo_project()
    for username in ("physician", "coordinator", "analyst"):
        assert list(access.projects_of(User.objects.get(username=username))) == [demo]
    client.force_login(User.objects.get(username="coordinator"))
    home = client.get(reverse("home"))
    assert home.wsgi_request.project == demo and "Agreement report of the finished demo study" in home.content.decode()
    admin = User.objects.get(username="admin")
    client.force_login(admin)
    home = client.get(reverse("home"))
    assert home.wsgi_request.project.name == "Default"  # the administrator's first project
    html = home.content.decode()
    assert 'data-kind="switch"' in html and "Agreement report of the finished demo study" not in html
    client.post(reverse("project-switch"), {"project": demo.pk})
    assert "Agreement report of the finished demo study" in client.get(reverse("home")).content.decode()


def test_a_physician_removed_from_the_project_can_no_longer_save_labels(client, instrument, make_user, coordinator):
    """The rating page's fast save (raw SQL) checks the rater is still a physician of the campaign's project."""
    import json

    from django.urls import reverse

    from annotation.campaigns import add_rater, assign, create_campaign
    from annotation.models import Assignment, Corpus, Dialogue, Label
    from projects.services import remove_member
    from tests.factories import mini_cex

    with in_project(default_project()):  # the tests' own project
        rater = make_user("leaver", "physician")
        corpus = Corpus.objects.create(name="Leaver corpus")
        Dialogue.objects.create(corpus=corpus, external_id="d1", self_report="s", source_model="m",
                                turns=[{"role": "doctor", "text": "hello"}, {"role": "patient", "text": "hi"}])
        campaign = create_campaign(name="Leaver campaign", corpus=corpus, scale_version=mini_cex(), overlap=1)
        add_rater(campaign, rater)
        assign(campaign)
        assignment = Assignment.objects.get(campaign=campaign, rater=rater)
        item = mini_cex().rating_items().filter(response_type="binary").first()
        client.force_login(rater)
        url = reverse("rate-label", args=[assignment.pk])

        def save(seq: int):
            return client.post(url, json.dumps({"item": item.pk, "value": 1, "seq": seq}),
                               content_type="application/json")

        assert save(1).status_code == 200
        remove_member(campaign.project, rater, by=coordinator)
        assert save(2).status_code == 404
        assert Label.objects.get(assignment=assignment, item=item).client_seq == 1


def test_the_label_save_does_not_resolve_the_project(client, two):
    """The busiest request checks membership in its own locking query; resolving the request's project (the
    membership and admin-group queries) would double its cost, so the middleware skips it there, and only there."""
    from django.db import connection
    from django.test.utils import CaptureQueriesContext

    alpha, _ = two
    assignment = alpha.campaign.assignments.filter(status__in=Assignment.OPEN_STATUSES).first()
    doc = assignment.rater
    item = alpha.campaign.scale_version.rating_items().filter(response_type="binary").first()
    client.force_login(doc)
    url = reverse("rate-label", args=[assignment.pk])
    client.post(url, json.dumps({"item": item.pk, "value": 1, "seq": 1}), content_type="application/json")
    with CaptureQueriesContext(connection) as saved:
        response = client.post(url, json.dumps({"item": item.pk, "value": 0, "seq": 2}),
                               content_type="application/json")
    assert response.status_code == 200 and response.json()["value"] == 0
    touched = " ".join(q["sql"] for q in saved.captured_queries)
    assert "annotation_label" in touched
    assert '"annotation_project"' not in touched and "auth_group" not in touched
    # Every other request still enters its project: the rating page of the same assignment, its comment save.
    page = client.get(reverse("rate", args=[assignment.pk]))
    assert page.status_code == 200 and page.wsgi_request.project == alpha.project
    comment = client.post(reverse("rate-comment", args=[assignment.pk]), {"comment": "ok"})
    assert comment.status_code == 200 and comment.wsgi_request.project == alpha.project


def test_a_page_without_a_view_still_shows_the_users_project(client, two):
    alpha, beta = two
    client.force_login(alpha.coordinator)
    missing = client.get("/no-such-page/")
    assert missing.status_code == 404
    assert missing.wsgi_request.project == alpha.project
    # A project the user is not a member of: 404, and the navigation does not enter it.
    refused = client.get(reverse("home"), {"project": beta.project.name})
    assert refused.status_code == 404
    assert refused.wsgi_request.project != beta.project


def test_imported_labels_are_not_attributed_to_another_projects_physician(tmp_path, two):
    """User names are instance-wide: a label file for Beta naming Alpha's physician is refused with the line and
    the way out, and nothing is written; Beta's own physicians and new (external) names import as before."""
    from annotation.models import Label

    alpha, beta = two
    outsider, insider = alpha.physicians[0].username, beta.physicians[0].username
    ext = beta.dialogue.external_id
    path = tmp_path / "labels.csv"
    path.write_text(f"dialogue_id,rater,item,value\n{ext},{insider},1.1,1\n{ext},{outsider},1.1,0\n"
                    f"{ext},{outsider},2.1,1\n", encoding="utf-8")
    before = Label.objects.count()
    errors = io.StringIO()
    with pytest.raises(CommandError, match="2 bad lines"):
        call_command("import_labels", str(path), "--corpus", beta.corpus.name, "--project", beta.project.name,
                     stdout=io.StringIO(), stderr=errors)
    text = errors.getvalue()
    assert f'rater "{outsider}" is an account that is not a physician of project "Beta"' in text
    assert "2 lines (3, 4)" in text and f"manage.py project add \"Beta\" {outsider} physician" in text
    assert insider not in text.replace(outsider, "")
    assert Label.objects.count() == before
    path.write_text(f"dialogue_id,rater,item,value\n{ext},{insider},1.1,1\n{ext},outside-reader,1.1,0\n",
                    encoding="utf-8")
    call_command("import_labels", str(path), "--corpus", beta.corpus.name, "--project", beta.project.name,
                 stdout=io.StringIO(), stderr=io.StringIO())
    assert Label.objects.count() == before + 2


def test_an_api_request_with_a_session_resolves_its_project_once(client, two):
    """The API's authentication enters the project; the page middleware leaves API views to it."""
    from django.db import connection
    from django.test.utils import CaptureQueriesContext

    alpha, _ = two
    client.force_login(alpha.coordinator)
    with CaptureQueriesContext(connection) as api:
        listing = client.get("/api/campaigns/")
    assert listing.status_code == 200 and {row["name"] for row in listing.json()["results"]} == {alpha.campaign.name}
    resolutions = [q["sql"] for q in api.captured_queries
                   if "annotation_membership" in q["sql"] and "last_used_at" in q["sql"]]
    assert len(resolutions) == 1, resolutions
    assert listing.wsgi_request.project == alpha.project


def test_a_slug_taken_in_another_project_is_refused_without_saying_whose(client, two):
    alpha, beta = two
    client.force_login(alpha.coordinator)
    taken = beta.draft.scale.slug
    with in_project(alpha.project), pytest.raises(instruments.InstrumentError) as refused:
        instruments.create_scale(slug=taken, name_en="Mine", user=alpha.coordinator)
    message = " ".join(refused.value.errors)
    assert f'"{taken}" is taken' in message and "choose another" in message
    assert beta.project.name not in message and beta.draft.scale.name_en not in message
