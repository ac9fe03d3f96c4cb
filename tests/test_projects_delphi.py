"""Projects in the Delphi app: two projects with their own coordinator, analyst and study; every Delphi page,
htmx partial and export answers 404 for the other project's study, lists show only the project's studies, and
the new-study form offers the project's own versions and the published library only."""

from __future__ import annotations

import pytest
from django.urls import reverse

from annotation import instruments
from annotation.models import ScaleVersion
from delphi import services
from delphi.forms import NewStudyForm
from delphi.models import DelphiStudy, Panelist, Round
from projects import services as projects
from projects.scoping import in_project
from tests.factories import staffed_project

pytestmark = [pytest.mark.django_db, pytest.mark.usefixtures("across_projects")]


@pytest.fixture(autouse=True)
def _no_scheduled_reminders(settings):
    settings.DELPHI_SCHEDULE_REMINDERS = False
    settings.EMAIL_BACKEND = "django.core.mail.backends.locmem.EmailBackend"


class Side:
    def __init__(self, name: str, make_user):
        tag = name.lower()
        self.project, self.coordinator, self.analyst, (self.member,) = staffed_project(
            name, make_user, physicians=[f"member_{tag}"])
        mini_cex = ScaleVersion.objects.get(scale__slug="llm-mini-cex", number=1)
        with in_project(self.project):
            self.study = services.create_study(title="Same title in both", user=self.coordinator, version=mini_cex,
                                               site_url="http://testserver")
            services.invite(self.study, self.coordinator, text=f"Expert {name} <e-{tag}@example.org>")
            self.draft = instruments.create_scale(slug=f"delphi-draft-{tag}", name_en=f"Draft {name}",
                                                  user=self.coordinator)
        self.round = self.study.rounds.get(number=1)
        self.panelist = Panelist.objects.get(study=self.study)


@pytest.fixture
def two(instrument, make_user):
    return Side("Alpha", make_user), Side("Beta", make_user)


def _urls(side: Side) -> dict[str, tuple[str, str]]:
    s, r = side.study.pk, side.round.pk
    item = side.round.version.items.order_by("order").first()
    return {
        "study": ("get", reverse("delphi:study", args=[s])),
        "study-settings": ("post", reverse("delphi:study-settings", args=[s])),
        "study-invite": ("post", reverse("delphi:study-invite", args=[s])),
        "study-action": ("post", reverse("delphi:study-action", args=[s, "delete"])),
        "study-export-csv": ("get", reverse("delphi:study-export", args=[s, "responses", "csv"])),
        "study-export-xlsx": ("get", reverse("delphi:study-export", args=[s, "reporting", "xlsx"])),
        "panelist-action": ("post", reverse("delphi:panelist-action", args=[side.panelist.pk, "remove"])),
        "round": ("get", reverse("delphi:round", args=[r])),
        "round-action": ("post", reverse("delphi:round-action", args=[r, "open"])),
        "round-decide": ("post", reverse("delphi:round-decide", args=[r, item.pk])),
        "round-add-item": ("post", reverse("delphi:round-add-item", args=[r])),
        "round-withdraw-added": ("post", reverse("delphi:round-withdraw-added", args=[r, 1])),
        "round-adopt": ("post", reverse("delphi:round-adopt", args=[r, "response", 1])),
        "round-validation": ("get", reverse("delphi:round-validation", args=[r])),
        "round-export": ("get", reverse("delphi:round-export", args=[r, "csv"])),
    }


def test_every_delphi_page_of_the_other_project_is_a_404(client, two):
    alpha, beta = two
    client.force_login(alpha.coordinator)
    for name, (method, url) in _urls(beta).items():
        response = getattr(client, method)(url, {"reason": "x", "action": "keep", "contacts": "X <x@example.org>"})
        assert response.status_code == 404, (name, response.status_code)
    client.force_login(alpha.analyst)
    for name, (method, url) in _urls(beta).items():
        if method == "get":
            assert client.get(url).status_code == 404, name
    beta.study.refresh_from_db()
    beta.round.refresh_from_db()
    assert beta.study.deleted_at is None and beta.round.status == Round.Status.DRAFT
    assert Panelist.objects.alive().filter(study=beta.study).count() == 1


def test_the_same_delphi_pages_answer_in_their_own_project(client, two):
    alpha, _ = two
    for user in (alpha.coordinator, alpha.analyst):
        client.force_login(user)
        for name, (method, url) in _urls(alpha).items():
            if method == "get":
                assert client.get(url).status_code == 200, (user, name)


def test_the_study_list_and_exports_hold_only_the_projects_study(client, two):
    alpha, beta = two
    client.force_login(alpha.analyst)
    page = client.get(reverse("delphi:list"))
    assert list(page.context["rows"])[0][0] == alpha.study and len(page.context["rows"]) == 1
    # The two studies share a title: the reporting export's history is the project's own.
    from delphi import exports

    sheets = dict((title, rows) for title, _, rows in exports.reporting_sheets(alpha.study))
    history = next(rows for title, rows in sheets.items() if "istory" in title)
    assert history and all(row["Who"] != beta.coordinator.username for row in history)


def test_new_study_form_offers_the_projects_versions_and_the_library(two):
    alpha, beta = two
    with in_project(alpha.project):  # as a request of Alpha's builds the form
        versions = set(NewStudyForm(project=alpha.project).fields["version"].queryset)
    assert alpha.draft in versions and beta.draft not in versions
    assert ScaleVersion.objects.get(scale__slug="llm-mini-cex", number=1) in versions
    with pytest.raises(services.DelphiError, match="another project"):
        services.create_study(title="Sneaky", user=alpha.coordinator, version=beta.draft, project=alpha.project)


def test_invite_offers_and_accepts_only_project_members(client, two):
    alpha, beta = two
    client.force_login(alpha.coordinator)
    page = client.get(reverse("delphi:study", args=[alpha.study.pk]))
    offered = set(page.context["users"])
    assert alpha.member in offered and beta.member not in offered
    client.post(reverse("delphi:study-invite", args=[alpha.study.pk]), {"users": [beta.member.pk]})
    assert not Panelist.objects.filter(study=alpha.study, user=beta.member).exists()
    client.post(reverse("delphi:study-invite", args=[alpha.study.pk]), {"users": [alpha.member.pk]})
    assert Panelist.objects.filter(study=alpha.study, user=alpha.member).exists()


def test_a_study_created_in_the_browser_belongs_to_the_request_project(client, two):
    alpha, _ = two
    client.force_login(alpha.coordinator)
    response = client.post(reverse("delphi:study-new"), {
        "title": "Browser study", "source": "draft", "scale_name": "Browser scale",
        "item_lines": "1 Interviewing\n1.1 Ask open questions", "consensus_min_mean": "4",
        "consensus_max_cv": "0.25", "consensus_min_agreement": "70", "agreement_level": "4", "planned_rounds": "3",
        "familiarity_threshold": "3", "reminder_days": "0", "link_valid_days": "30"})
    assert response.status_code == 302, response.content.decode()[:2000]
    study = DelphiStudy.objects.get(title="Browser study")
    assert study.project == alpha.project and study.scale.project == alpha.project
    assert study.base_version.project == alpha.project


def test_the_demo_study_lives_in_the_demo_project(instrument):
    from django.core.management import call_command

    from annotation.demo import load_demo

    load_demo()
    call_command("load_delphi_demo")
    study = DelphiStudy.objects.get(title__startswith="Demo")
    assert study.project == projects.demo_project()
    later = study.rounds.exclude(version=study.base_version).first()
    assert later is None or later.version.project == projects.demo_project()
