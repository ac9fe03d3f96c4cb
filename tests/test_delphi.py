"""Delphi services, pages, permissions and bad input."""

from __future__ import annotations

import io
import re
import time

import pytest
from django.core import mail, signing
from django.urls import reverse

from annotation.models import ScaleVersion
from delphi import exports, services, tasks
from delphi.models import DelphiStudy, ItemDecision, Panelist, Participation, Response, ResponseChange, Round
from delphi.services import DelphiError, LinkError
from projects.models import AuditEvent
from projects.scoping import in_project

pytestmark = pytest.mark.django_db


@pytest.fixture(autouse=True)
def _no_scheduled_reminders(settings):
    settings.DELPHI_SCHEDULE_REMINDERS = False
    settings.EMAIL_BACKEND = "django.core.mail.backends.locmem.EmailBackend"


def mini_cex():
    return ScaleVersion.objects.get(scale__slug="llm-mini-cex", number=1)


def make_study(user, n_panel=3, **fields) -> DelphiStudy:
    study = services.create_study(title=fields.pop("title", "Mini-CEX Delphi"), user=user, version=mini_cex(),
                                  site_url="http://testserver", **fields)
    services.invite(study, user, text="\n".join(f"Expert {i} <e{i}@example.org>" for i in range(n_panel)))
    return study


def answer_all(part: Participation, ratings, *, familiarity=5, complete=True, comment_on=None):
    items = services.round_items(part.round)
    for n, item in enumerate(items):
        value = ratings(n, item) if callable(ratings) else ratings
        services.save_answer(part, item.pk, importance=value,
                             comment=(f"comment on {item.code}" if comment_on == item.code else None))
    services.save_profile(part, {"familiarity": familiarity, "basis_practice": "high", "basis_theory": "medium",
                                 "basis_literature": "low", "basis_intuition": "high", "gender": "female",
                                 "age": "45", "professional_title": "chief physician", "working_years": "20"})
    if complete:
        services.complete(part)
    return part


def token_from_mail(message) -> str:
    return re.search(r"/delphi/p/([^/\s]+)/", message.body).group(1)


# ---------------------------------------------------------------------------------------------------------------
# services
# ---------------------------------------------------------------------------------------------------------------
def test_create_from_version_and_from_item_lines(instrument, coordinator):
    study = make_study(coordinator)
    r1 = study.rounds.get()
    assert r1.number == 1 and r1.status == "draft" and r1.version == mini_cex()
    assert len(services.round_items(r1)) == 26  # 23 binary items + 3 levels of item 4
    assert Panelist.objects.filter(study=study).count() == 3
    assert list(study.panelists.values_list("pseudonym", flat=True)) == ["P001", "P002", "P003"]

    draft = services.create_study(title="From scratch", user=coordinator, scale_name="Tele-consult scale",
                                  item_lines="1 Interviewing\n1.1 Ask open questions | e.g. where does it hurt\n"
                                             "1.2 Avoid jargon\n2 Care\n2.1 Show empathy\n")
    version = draft.base_version
    assert version.status == "draft" and not version.is_locked
    assert [i.code for i in version.secondary_items().order_by("order")] == ["1.1", "1.2", "2.1"]
    assert version.items.get(code="1.1").guidance_en == "e.g. where does it hurt"


def test_item_lines_are_all_or_nothing_with_line_numbers(instrument, coordinator):
    with pytest.raises(DelphiError) as err:
        services.create_study(title="Bad", user=coordinator, item_lines="1 Dim\n1.1 ok\nnonsense\n2.1 orphan\n")
    assert "line 3" in str(err.value) and "line 4" in str(err.value)
    assert not DelphiStudy.objects.filter(title="Bad").exists()


def test_contacts_are_all_or_nothing(instrument, coordinator):
    study = services.create_study(title="S", user=coordinator, version=mini_cex())
    with pytest.raises(DelphiError, match="line 2"):
        services.invite(study, coordinator, text="a@example.org\nnot-an-address\n")
    assert not study.panelists.exists()


def test_open_round_locks_rule_and_version_and_emails_links(instrument, coordinator,
                                                            django_capture_on_commit_callbacks):
    study = make_study(coordinator)
    r1 = study.rounds.get()
    with django_capture_on_commit_callbacks(execute=True):
        services.open_round(r1, coordinator)
    study.refresh_from_db()
    assert study.consensus_locked_at is not None and study.status == "running"
    assert mini_cex().is_locked
    assert len(mail.outbox) == 3
    assert {m.to[0] for m in mail.outbox} == {"e0@example.org", "e1@example.org", "e2@example.org"}
    token = token_from_mail(mail.outbox[0])
    assert services.resolve_token(token).email == mail.outbox[0].to[0]
    assert all(p.invited_at for p in r1.participations.all())
    with pytest.raises(DelphiError, match="locked"):
        services.update_settings(study, coordinator, {"consensus_min_mean": 4})
    # other settings may still change
    assert services.update_settings(study, coordinator, {"instructions": "Rate importance."}) == ["instructions"]


def test_links_expired_tampered_revoked(instrument, coordinator):
    study = make_study(coordinator, n_panel=1)
    panelist = study.panelists.get()
    token = services.make_token(panelist)
    with pytest.raises(LinkError) as err:
        services.resolve_token(token[:-3] + ("aaa" if not token.endswith("aaa") else "bbb"))
    assert err.value.kind == "invalid"
    old = services.make_token(panelist, now=time.time() - 61 * 86400)
    with pytest.raises(LinkError) as err:
        services.resolve_token(old)
    assert err.value.kind == "expired" and err.value.status == 410
    forged = signing.dumps({"p": panelist.pk, "v": 1, "e": 9e9}, salt="another-salt", compress=True)
    with pytest.raises(LinkError):
        services.resolve_token(forged)
    services.new_link(panelist, coordinator)
    with pytest.raises(LinkError) as err:
        services.resolve_token(token)
    assert err.value.kind == "revoked"


def test_answers_save_as_they_go_with_history_and_refused_after_close(instrument, coordinator):
    study = make_study(coordinator, n_panel=2)
    r1 = study.rounds.get()
    services.open_round(r1, coordinator)
    part = r1.participations.first()
    item = services.round_items(r1)[0]
    services.save_answer(part, item.pk, importance=4)
    services.save_answer(part, item.pk, importance=4)  # a repeated save is harmless
    services.save_answer(part, item.pk, importance=5, comment="Essential")
    resp = Response.objects.get(participation=part, item=item)
    assert (resp.importance, resp.comment) == (5, "Essential")
    assert ResponseChange.objects.filter(response=resp).count() == 2
    with pytest.raises(DelphiError, match="1 \\(not important\\) to 5"):
        services.save_answer(part, item.pk, importance=6)
    ordinal = r1.version.items.get(code="4")  # the overall rating itself is not rated; its levels are
    with pytest.raises(DelphiError, match="not part"):
        services.save_answer(part, ordinal.pk, importance=3)
    with pytest.raises(DelphiError, match="Not complete"):
        services.complete(part)
    services.close_round(r1, coordinator)
    with pytest.raises(DelphiError) as err:
        services.save_answer(part, item.pk, importance=3)
    assert err.value.status == 409 and "no longer accepted" in str(err.value)
    assert Response.objects.get(pk=resp.pk).importance == 5


def test_a_whole_questionnaire_saves_at_once_with_history_and_all_or_nothing(instrument, coordinator):
    """services.save_answers (the demo panel's questionnaires): save_answer's checks and history for every answer, one
    refused answer stores none, and a repeated questionnaire changes nothing."""
    study = make_study(coordinator, n_panel=2)
    r1 = study.rounds.get()
    services.open_round(r1, coordinator)
    part = r1.participations.first()
    first, second, third = services.round_items(r1)[:3]
    ordinal = r1.version.items.get(code="4")
    for refused, message in [({first.pk: {"importance": 4}, second.pk: {"importance": 9}}, "1 \\(not important"),
                             ({first.pk: {"importance": 4}, ordinal.pk: {"importance": 3}}, "not part"),
                             ({first.pk: {"importance": 4}, "x": {"importance": 3}}, "not part")]:
        with pytest.raises(DelphiError, match=message):
            services.save_answers(part, refused)
        assert not Response.objects.filter(participation=part).exists()
    saved = services.save_answers(part, {first.pk: {"importance": 4, "comment": " Clear "},
                                         second.pk: {"importance": 2, "wording": "Ask about onset"}})
    assert [(r.item_id, r.importance, r.comment, r.proposed_wording) for r in saved] == [
        (first.pk, 4, "Clear", ""), (second.pk, 2, "", "Ask about onset")]
    assert Participation.objects.get(pk=part.pk).started_at is not None
    services.save_answers(part, {first.pk: {"importance": 4}, second.pk: {"importance": 2}})  # nothing changes
    assert ResponseChange.objects.filter(response__participation=part).count() == 2
    # one changed, one new: the comment kept where None, the change recorded with what it was
    services.save_answers(part, {first.pk: {"importance": 5}, third.pk: {"importance": 3, "comment": "ok"}})
    one = Response.objects.get(participation=part, item=first)
    assert (one.importance, one.comment) == (5, "Clear")
    change = ResponseChange.objects.filter(response=one).order_by("pk").last()
    assert (change.old_importance, change.new_importance, change.old_comment, change.new_comment) == (4, 5, "Clear",
                                                                                                    "Clear")
    assert ResponseChange.objects.filter(response__participation=part).count() == 4
    services.close_round(r1, coordinator)
    with pytest.raises(DelphiError, match="no longer accepted"):
        services.save_answers(part, {first.pk: {"importance": 1}})


def run_round_one(coordinator, familiarity=(5, 4, 2)):
    study = make_study(coordinator, n_panel=len(familiarity))
    r1 = study.rounds.get()
    services.open_round(r1, coordinator)
    parts = list(r1.participations.order_by("panelist__pseudonym"))
    for k, (part, fam) in enumerate(zip(parts, familiarity, strict=True)):
        answer_all(part, lambda n, item, k=k: 5 if n % 3 else 3 + k % 3, familiarity=fam,
                   comment_on="1.3" if k == 0 else None)
    return study, r1, parts


def test_focus_group_decisions_produce_next_version_and_panel(instrument, coordinator):
    study, r1, parts = run_round_one(coordinator)
    items = {i.code: i for i in services.round_items(r1)}
    resp = Response.objects.get(participation=parts[0], item=items["1.3"])
    services.set_adoption(resp, "adopt", coordinator, "good point")
    services.decide(r1, coordinator, item=items["1.1"], action="revise", new_text_en="Ask about the current illness")
    services.decide(r1, coordinator, item=items["2.7"], action="delete", reason="overlaps 2.1")
    services.decide(r1, coordinator, item=items["3.3"], action="merge", merge_into=items["3.2"],
                    new_text_en="Give an accurate diagnosis with its explanation", reason="same construct")
    services.decide(r1, coordinator, item=None, action="add", new_code="1.9", new_text_en="Summarise the consultation",
                    reason="panel proposal")
    with pytest.raises(DelphiError, match="reason"):
        services.decide(r1, coordinator, item=items["2.8"], action="delete")
    with pytest.raises(DelphiError, match="new wording"):
        services.decide(r1, coordinator, item=items["2.8"], action="revise")
    with pytest.raises(DelphiError, match="already used"):
        services.decide(r1, coordinator, item=None, action="add", new_code="1.2", new_text_en="x")

    result = services.close_round(r1, coordinator, "round 1 done")
    v2 = result.next_version
    assert v2.number == 2 and v2.status == "draft" and v2.based_on_id == r1.version_id
    codes = [i.code for i in v2.secondary_items().order_by("order")]
    assert "2.7" not in codes and "3.3" not in codes and "1.9" in codes
    assert codes.index("1.9") == codes.index("1.8") + 1  # added at the end of its dimension
    assert v2.items.get(code="1.1").text_en == "Ask about the current illness"
    assert v2.items.get(code="3.2").text_en == "Give an accurate diagnosis with its explanation"
    assert mini_cex().items.get(code="1.1").text_en != "Ask about the current illness"  # v1 untouched
    # round 2 panel: the panelist with familiarity "less familiar" (2) is excluded
    r2 = result.next_round
    assert r2.number == 2 and r2.version == v2 and r2.status == "draft"
    assert sorted(r2.participations.values_list("panelist__pseudonym", flat=True)) == ["P001", "P002"]
    assert result.excluded == ["P003"]
    with pytest.raises(DelphiError, match="closed"):
        services.decide(r1, coordinator, item=items["2.8"], action="reserve")
    assert AuditEvent.objects.filter(action="delphi.round.close").exists()


def test_round_statistics_and_feedback_never_show_identities(instrument, coordinator):
    study, r1, parts = run_round_one(coordinator)
    summary = services.round_summary(r1)
    assert (summary["invited"], summary["responded"], summary["completed"]) == (3, 3, 3)
    assert summary["positive_coefficient"] == 1.0
    # Ca = .5 + .2 + .05 + .1 = .85 for everybody; Cs = (1 + .8 + .4) / 3
    assert summary["ca"] == pytest.approx(0.85)
    assert summary["cs"] == pytest.approx(2.2 / 3)
    assert summary["cr"] == pytest.approx((0.85 + 2.2 / 3) / 2)
    assert summary["kendall_w"] is not None and summary["dof"] == 25
    result = services.close_round(r1, coordinator)
    r2 = result.next_round
    services.open_round(r2, coordinator)
    part2 = r2.participations.get(panelist__pseudonym="P001")
    items = services.round_items(r2)
    feedback = services.feedback_for(part2, items)
    first = feedback[items[0].pk]  # item 1.1: everybody rated 3, 4, 5 (n % 3 == 0)
    assert first["n"] == 3 and first["median"] == 4 and first["own"].importance == 3
    assert [c for _, c, _ in first["distribution"]] == [0, 0, 1, 1, 1]
    assert "panelist" not in str(first.keys())


def test_validation_survey_and_publish(instrument, coordinator):
    study = make_study(coordinator, n_panel=2, planned_rounds=1)
    r1 = study.rounds.get()
    services.open_round(r1, coordinator)
    for part in r1.participations.all():
        answer_all(part, 5)
    result = services.close_round(r1, coordinator)
    assert result.next_round is None
    validation = services.start_validation(study, coordinator)
    assert validation.kind == "validation" and validation.version == result.next_version
    services.invite(study, coordinator, text="\n".join(f"v{i}@example.org" for i in range(30)))
    services.open_round(validation, coordinator)
    import numpy as np

    rng = np.random.default_rng(0)
    for part in validation.participations.all():
        level = rng.integers(2, 6)
        for item in services.round_items(validation):
            services.save_answer(part, item.pk, importance=int(np.clip(level + rng.integers(-1, 2), 1, 5)))
        services.complete(part)  # no familiarity needed in the validation survey
    services.close_round(validation, coordinator)
    report = services.validation_stats(validation)
    assert report["n_respondents"] == 30 and report["total"]["n_items"] == 26
    assert report["total"]["alpha"] > 0.8
    assert [r["code"] for r in report["dimensions"]] == ["1", "2", "3", "4"]
    version = services.publish_agreed(study, coordinator)
    assert version.status == "published"
    study.refresh_from_db()
    assert study.status == "published"


def test_reminders_task_reminds_only_those_not_done(instrument, coordinator):
    study = make_study(coordinator, n_panel=3, reminder_days=7)
    r1 = study.rounds.get()
    services.open_round(r1, coordinator)
    for p in r1.participations.all():
        services.send_invitation(p)
    done = r1.participations.first()
    answer_all(done, 4)
    mail.outbox.clear()
    assert tasks.send_round_reminders(r1.pk) == 0  # invited just now: not due yet
    from django.utils import timezone

    Participation.objects.filter(round=r1).update(invited_at=timezone.now().replace(year=2020))
    assert tasks.send_round_reminders(r1.pk) == 2
    assert len(mail.outbox) == 2 and all("reminder" in m.body for m in mail.outbox)
    assert done.panelist.email not in {m.to[0] for m in mail.outbox}
    assert tasks.send_round_reminders(r1.pk) == 0  # a duplicate delivery sends nothing twice
    services.close_round(r1, coordinator)
    assert tasks.send_round_reminders(r1.pk, force=True) == 0


def test_the_workers_reconciler_finds_due_reminders_outside_any_project(instrument, coordinator, settings,
                                                                          monkeypatch):
    """The reconciler runs in a worker, in no project: it reads every project's open rounds, each in its project
    (it raised ScopeError once rounds were scoped)."""
    from django.utils import timezone

    from projects import scoping

    settings.DELPHI_SCHEDULE_REMINDERS = True
    study = make_study(coordinator, n_panel=2, reminder_days=7)
    r1 = study.rounds.get()
    services.open_round(r1, coordinator)
    Participation.objects.filter(round=r1).update(invited_at=timezone.now().replace(year=2020))
    sent = []
    monkeypatch.setattr(services.current_app, "send_task", lambda name, args: sent.append((name, args)))
    saved = scoping.snapshot()
    scoping.restore(None)  # as in a worker: no project is active
    try:
        assert services.reconcile_reminders() == [r1.pk]
    finally:
        scoping.restore(saved)
    assert sent == [("delphi.send_round_reminders", (r1.pk,))]


def test_exports(instrument, coordinator):
    study, r1, parts = run_round_one(coordinator)
    items = {i.code: i for i in services.round_items(r1)}
    services.set_adoption(Response.objects.get(participation=parts[0], item=items["1.3"]), "adopt", coordinator)
    services.decide(r1, coordinator, item=items["1.3"], action="revise", new_text_en="Ask open questions")
    services.decide(r1, coordinator, item=items["2.7"], action="delete", reason="redundant")
    rows = exports.round_table(r1)
    row = next(r for r in rows if r["Number"] == "1.3")
    assert row["Expert opinion"] == "comment on 1.3" and row["Adoption"] == "Adopt" and row["Modify"] == "Revise"
    assert row["Item after modification"] == "Ask open questions"
    assert next(r for r in rows if r["Number"] == "2.7")["Modify"] == "Delete"
    assert rows[0]["Number"] == "1" and rows[0]["Modify"] == "Keep"  # dimension rows as in the paper (its "Reserve")
    long = list(exports.response_rows(study))
    assert len(long) == 3 * 26
    assert {r["panelist"] for r in long} == {"P001", "P002", "P003"}
    assert not any("example.org" in str(v) or "Expert" in str(v) for r in long for v in r.values())
    services.close_round(r1, coordinator)
    study.refresh_from_db()
    sheets = dict((t, rows) for t, _, rows in exports.reporting_sheets(study))
    facts = {r["Fact"]: r["Value"] for r in sheets["Facts"]}
    assert facts["Consensus rule"] == "mean importance ≥ 3.5 and CV ≤ 0.25"
    assert facts["Consensus rule locked (round 1 opened)"]
    flow = sheets["Panel flow"][0]
    assert (flow["Invited"], flow["Completed"], flow["Carried to next round"]) == (3, 3, 2)
    assert flow["Excluded (familiarity below threshold)"] == "P003"
    assert sheets["Item changes"][0]["Reworded"] == 1 and sheets["Item changes"][0]["Dropped"] == 1
    assert any(r["Reason"] == "redundant" for r in sheets["Item audit trail"])
    from openpyxl import load_workbook

    wb = load_workbook(io.BytesIO(exports.to_xlsx(exports.reporting_sheets(study))))
    assert wb.sheetnames == ["Facts", "Panel flow", "Item changes", "Item audit trail", "History"]


def test_formula_like_comments_are_neutralised():
    assert exports._cell("=HYPERLINK(1)") == "'=HYPERLINK(1)"


def test_csv_and_xlsx_exports_neutralise_formula_like_panel_answers(instrument, coordinator, client):
    import csv

    from openpyxl import load_workbook

    study = make_study(coordinator, n_panel=2)
    r1 = study.rounds.get()
    services.open_round(r1, coordinator)
    parts = list(r1.participations.order_by("panelist__pseudonym"))
    items = services.round_items(r1)
    for part in parts:
        answer_all(part, 4, complete=False)
    services.save_answer(parts[0], items[0].pk, importance=4, comment='=HYPERLINK("http://x","click")',
                         wording="@SUM(A1)")
    services.save_answer(parts[1], items[0].pk, importance=4, comment="-2+3", wording="-1")
    guarded = {"'=HYPERLINK(\"http://x\",\"click\")", "'@SUM(A1)", "'-2+3", "-1"}
    client.force_login(coordinator)

    responses = client.get(reverse("delphi:study-export", args=[study.pk, "responses", "csv"])).content.decode()
    rows = [r for r in csv.DictReader(io.StringIO(responses, newline="")) if r["item"] == items[0].code]
    assert {r["comment"] for r in rows} | {r["proposed_wording"] for r in rows} == guarded
    assert {r["importance"] for r in rows} == {"4"}
    services.save_answer(parts[0], items[1].pk, importance=4, comment="=1+1")  # the only opinion on the item
    table = client.get(reverse("delphi:round-export", args=[r1.pk, "csv"])).content.decode()
    opinion = {r["Number"]: r["Expert opinion"] for r in csv.DictReader(io.StringIO(table, newline=""))}
    assert opinion[items[1].code] == "'=1+1"

    sheet = load_workbook(io.BytesIO(client.get(
        reverse("delphi:study-export", args=[study.pk, "responses", "xlsx"])).content))["responses"]
    header = [c.value for c in sheet[1]]
    cells = [dict(zip(header, row, strict=True)) for row in sheet.iter_rows(min_row=2)]
    first = [c for c in cells if c["item"].value == items[0].code]
    assert {c["comment"].value for c in first} | {c["proposed_wording"].value for c in first} == guarded
    assert all(c["comment"].data_type == "s" for c in cells if c["comment"].value)  # never "f"
    assert {c["importance"].value for c in cells} == {4}


# ---------------------------------------------------------------------------------------------------------------
# pages and permissions
# ---------------------------------------------------------------------------------------------------------------
def test_pages_by_role(client, instrument, coordinator, analyst, physician):
    study, r1, parts = run_round_one(coordinator)
    for user, allowed in ((coordinator, True), (analyst, True), (physician, False)):
        client.force_login(user)
        for url in (reverse("delphi:list"), reverse("delphi:study", args=[study.pk]),
                    reverse("delphi:round", args=[r1.pk]),
                    reverse("delphi:round-export", args=[r1.pk, "xlsx"]),
                    reverse("delphi:study-export", args=[study.pk, "reporting", "xlsx"]),
                    reverse("delphi:study-export", args=[study.pk, "responses", "csv"])):
            assert client.get(url).status_code == (200 if allowed else 403), (user, url)
    client.force_login(analyst)
    page = client.get(reverse("delphi:study", args=[study.pk])).content.decode()
    assert "e0@example.org" not in page  # analysts see no contact details
    resp = client.post(reverse("delphi:round-action", args=[r1.pk, "close"]))
    assert resp.status_code == 403
    client.force_login(coordinator)
    page = client.get(reverse("delphi:round", args=[r1.pk])).content.decode()
    assert "comment on 1.3" in page and "Kendall" in page and "Hyndman" in page


def test_coordinator_creates_invites_opens_in_the_browser_forms(client, instrument, coordinator, settings):
    client.force_login(coordinator)
    resp = client.post(reverse("delphi:study-new"), {
        "title": "Form study", "source": "version", "version": mini_cex().pk, "consensus_min_mean": "3.5",
        "consensus_max_cv": "0.25", "agreement_level": 4, "planned_rounds": 3, "familiarity_threshold": 4,
        "reminder_days": 7, "link_valid_days": 30, "invitation": "Please help.", "instructions": "Rate."})
    study = DelphiStudy.objects.get(title="Form study")
    assert resp.status_code == 302
    client.post(reverse("delphi:study-invite", args=[study.pk]), {"contacts": "Dr A <a@example.org>"})
    r1 = study.rounds.get()
    with_cb = client.post(reverse("delphi:round-action", args=[r1.pk, "open"]), {"deadline": "2030-01-31"})
    assert with_cb.status_code == 302
    r1.refresh_from_db()
    assert r1.status == "open" and str(r1.deadline) == "2030-01-31"
    # consensus rule cannot change any more: refused with a message, nothing saved
    resp = client.post(reverse("delphi:study-settings", args=[study.pk]), {
        "consensus_min_mean": "4.0", "consensus_max_cv": "0.25", "agreement_level": 4, "planned_rounds": 3,
        "familiarity_threshold": 4, "reminder_days": 7, "link_valid_days": 30, "invitation": "changed"},
        follow=True)
    assert "locked" in resp.content.decode()
    study.refresh_from_db()
    assert float(study.consensus_min_mean) == 3.5 and study.invitation == "Please help."


def test_coordinators_hand_over_panel_links_audited_and_never_logged(client, instrument, coordinator, analyst,
                                                                     caplog):
    """Without a mail server the coordinator copies a panelist's link or prints the list (with QR codes); each
    handing-over is in the audit trail with its pseudonyms, never the link; analysts get neither."""
    study = make_study(coordinator, n_panel=2)
    me = study.panelists.order_by("pseudonym").first()
    client.force_login(coordinator)
    with caplog.at_level("DEBUG"):
        copied = client.post(reverse("delphi:panelist-link", args=[me.pk]))
        printed = client.get(reverse("delphi:study-links", args=[study.pk]))
    assert copied.status_code == 200 and "no-store" in copied["Cache-Control"]
    url = copied.json()["url"]
    token = url.split("/delphi/p/")[1].strip("/")
    assert services.resolve_token(token) == me and copied.json()["pseudonym"] == me.pseudonym
    html = printed.content.decode()
    assert printed.status_code == 200 and html.count("/delphi/p/") == 2 and html.count("<svg") == 2
    assert "no-store" in printed["Cache-Control"]
    assert client.get(reverse("delphi:panel-home", args=[token])).status_code == 200  # the copied link opens
    events = AuditEvent.objects.filter(action="delphi.panel.links_handed").order_by("pk")
    assert [(e.data["how"], e.data["panelists"]) for e in events] == [("copy", ["P001"]), ("print", ["P001", "P002"])]
    assert all("/delphi/p/" not in str(e.data) + e.target_repr for e in events)
    assert "/delphi/p/" not in caplog.text
    client.force_login(analyst)
    assert client.post(reverse("delphi:panelist-link", args=[me.pk])).status_code == 403
    assert client.get(reverse("delphi:study-links", args=[study.pk])).status_code == 403
    assert client.get(reverse("delphi:panelist-link", args=[me.pk])).status_code in (403, 405)


def test_panel_link_pages_and_bad_links(client, instrument, coordinator):
    study = make_study(coordinator, n_panel=2)
    r1 = study.rounds.get()
    services.open_round(r1, coordinator)
    me, other = r1.participations.order_by("panelist__pseudonym")
    answer_all(other, 2, comment_on="1.1")
    other.panelist.refresh_from_db()
    token = services.make_token(me.panelist)
    page = client.get(reverse("delphi:panel-home", args=[token]))
    assert page.status_code == 200
    html = page.content.decode()
    assert "P001" in html and "1.1" in html
    for secret in ("P002", "Expert 1", "e1@example.org", "comment on 1.1"):
        assert secret not in html
    item = services.round_items(r1)[0]
    resp = client.post(reverse("delphi:panel-answer", args=[token, me.pk, item.pk]), {"importance": "4",
                                                                                       "comment": "ok"})
    assert resp.status_code == 200 and resp.json()["importance"] == 4  # JSON for the answer-keeping engine
    assert Response.objects.get(participation=me, item=item).importance == 4
    # sent again (its answer lost on the way back): stored once, no second history entry
    again = client.post(reverse("delphi:panel-answer", args=[token, me.pk, item.pk]), {"importance": "4",
                                                                                        "comment": "ok"})
    assert again.status_code == 200 and Response.objects.filter(participation=me, item=item).count() == 1
    assert ResponseChange.objects.filter(response__participation=me, response__item=item).count() == 1
    # my token cannot write into someone else's questionnaire
    resp = client.post(reverse("delphi:panel-answer", args=[token, other.pk, item.pk]), {"importance": "1"})
    assert resp.status_code == 404
    assert Response.objects.get(participation=other, item=item).importance == 2
    # tampered and expired links: a clear page, not a 500
    bad = client.get(reverse("delphi:panel-home", args=[token[:-4] + "xxxx"]))
    assert bad.status_code == 403 and "not valid" in bad.content.decode()
    expired = client.get(reverse("delphi:panel-home", args=[services.make_token(me.panelist,
                                                                                now=time.time() - 90 * 86400)]))
    assert expired.status_code == 410 and "expired" in expired.content.decode()
    assert client.post(reverse("delphi:panel-answer", args=["garbage", me.pk, item.pk]),
                       {"importance": "3"}).status_code == 403
    # bad value and answer after close: refused with a message
    resp = client.post(reverse("delphi:panel-answer", args=[token, me.pk, item.pk]), {"importance": "nine"})
    assert resp.status_code == 400
    services.close_round(r1, coordinator)
    resp = client.post(reverse("delphi:panel-answer", args=[token, me.pk, item.pk]), {"importance": "5"})
    assert resp.status_code == 409 and "no longer accepted" in resp.json()["detail"]
    page = client.get(reverse("delphi:panel-home", args=[token])).content.decode()
    assert "no longer accepted" in page


def test_focus_group_htmx_endpoints(client, instrument, coordinator):
    study, r1, parts = run_round_one(coordinator)
    client.force_login(coordinator)
    items = {i.code: i for i in services.round_items(r1)}
    resp = client.post(reverse("delphi:round-decide", args=[r1.pk, items["2.2"].pk]),
                       {"action": "revise", "new_text_en": "Stop expanding", "reason": "clearer"})
    assert resp.status_code == 200 and "Revise" in resp.content.decode()
    bad = client.post(reverse("delphi:round-decide", args=[r1.pk, items["2.2"].pk]), {"action": "delete"})
    assert bad.status_code == 400 and "reason" in bad.content.decode()
    assert ItemDecision.objects.get(round=r1, item=items["2.2"]).action == "revise"
    response = Response.objects.get(participation=parts[0], item=items["1.3"])
    resp = client.post(reverse("delphi:round-adopt", args=[r1.pk, "response", response.pk]), {"adoption": "not_adopt"})
    assert resp.status_code == 200
    response.refresh_from_db()
    assert response.adoption == "not_adopt" and response.adoption_by == coordinator
    resp = client.post(reverse("delphi:round-action", args=[r1.pk, "close"]), {"note": "done"})
    r1.refresh_from_db()
    assert r1.status == "closed" and r1.next_version.items.get(code="2.2").text_en == "Stop expanding"
    late = client.post(reverse("delphi:round-decide", args=[r1.pk, items["2.3"].pk]), {"action": "reserve"})
    assert late.status_code == 409


def test_user_panelist_sees_own_questionnaires(client, instrument, coordinator, physician):
    study = services.create_study(title="Users", user=coordinator, version=mini_cex())
    services.invite(study, coordinator, users=[physician])
    client.force_login(physician)
    page = client.get(reverse("delphi:mine")).content.decode()
    assert "Users" in page and "/delphi/p/" in page


def test_soft_delete_of_study_and_panelist(instrument, coordinator):
    study = make_study(coordinator, n_panel=1)
    panelist = study.panelists.get()
    token = services.make_token(panelist)
    services.remove_panelist(panelist, coordinator, "left the hospital")
    with pytest.raises(LinkError):
        services.resolve_token(token)
    assert Panelist.objects.filter(pk=panelist.pk).exists()
    services.delete_study(study, coordinator, "test study")
    assert DelphiStudy.objects.alive().filter(pk=study.pk).count() == 0
    assert DelphiStudy.objects.filter(pk=study.pk, delete_reason="test study").exists()
    assert Round.objects.filter(study=study).exists()


def test_demo_study_is_idempotent(instrument, make_user, client):
    from django.core.management import call_command

    from delphi.demo import TITLE
    from projects.services import add_member, demo_project

    coordinator = make_user("coordinator", "coordinator")
    add_member(demo_project(), coordinator, "coordinator")  # load_demo makes the demo users its members first
    call_command("load_delphi_demo")
    with in_project(demo_project()):  # the demo study's own project
        assert DelphiStudy.objects.get(title=TITLE).project == demo_project()
        call_command("load_delphi_demo")
        study = DelphiStudy.objects.get(title=TITLE)
        r1, r2, r3 = study.rounds.order_by("number")
        assert r1.status == "closed" and r2.status == "closed" and r3.status == "draft"
        assert r2.participations.count() == 9  # 3 of 12 rated their familiarity too low
        assert r2.participations.filter(completed_at__isnull=False).count() == 9
        assert r3.participations.count() == 9  # the same nine keep their familiarity in round 2
        assert not r2.version.items.filter(code="2.7").exists()
        summary = services.round_summary(r2)
        assert summary["kendall_w"] is not None and 0 < summary["kendall_w"] < 1, summary
        client.force_login(coordinator)
        client.post(reverse("project-switch"), {"project": demo_project().pk})
        assert client.get(reverse("delphi:round", args=[r1.pk])).status_code == 200
        assert client.get(reverse("delphi:study", args=[study.pk])).status_code == 200
