"""The study archive: export_study, verify_study, import_study, the methods and checklist, the page.

The demo study is built once for the module and exported inside a transaction that is rolled back; the tests then
work on the archive file. Run this file in both modes (embedded, and with DATABASE_URL etc. for PostgreSQL)."""

from __future__ import annotations

import hashlib
import io
import json
import random
import re
import shutil
import zipfile
from pathlib import Path
from types import SimpleNamespace

import pytest
from django.core.management import call_command
from django.core.management.base import CommandError
from django.urls import reverse

from tests.demo_world import load_full_demo
from tests.test_figures import run_due

SECRET_KEY = "sk-archive-test-SECRET-0123456789"
URL_SECRET = "p4ss-in-url-SECRET"


def _build_demo(path: Path) -> dict:
    """The demo study with its flagged dialogues reviewed, a judge whose URL and run carry secrets, and an LLM call;
    exported to ``path``. Returns what must never be in the archive."""
    from django.contrib.auth import get_user_model

    from annotation.dialogues import review_privacy
    from annotation.models import Assignment, Dialogue, PrivacyStatus
    from projects import scoping
    from projects.services import demo_project
    from scoring.judges.models import JudgeConfig, JudgeResult, JudgeRun
    from scoring.llm.models import LLMCall
    from studies.export import export_study

    with scoping.scopes_disabled():
        project = demo_project()
    with scoping.in_project(project):
        spans = []
        for dialogue in Dialogue.objects.filter(privacy_status=PrivacyStatus.FLAGGED):
            for m in dialogue.privacy_matches:
                text = dialogue.self_report if m["field"] == "self_report" else dialogue.turns[m["turn"]]["text"]
                spans.append(text[m["start"]:m["end"]])
            review_privacy(dialogue, "redact", None)
        JudgeConfig.objects.update(base_url=f"https://user:{URL_SECRET}@llm.example.org/v1?key={SECRET_KEY}",
                                   api_key_env="MY_SECRET_KEY_VARIABLE")
        run = JudgeRun.objects.order_by("pk").first()
        run.snapshot = {**run.snapshot, "base_url": f"https://llm.example.org/v1?api_key={SECRET_KEY}",
                        "api_key": SECRET_KEY, "api_key_env": "MY_SECRET_KEY_VARIABLE"}
        run.save(update_fields=["snapshot"])
        call = LLMCall.objects.create(key=hashlib.sha256(b"archive-test").hexdigest(), project=project,
                                      endpoint=f"https://llm.example.org/v1?api_key={SECRET_KEY}", model="m",
                                      request={"model": "m", "messages": [{"role": "user", "content": "q"}]},
                                      content="yes")
        JudgeResult.objects.filter(pk=JudgeResult.objects.filter(run=run).order_by("pk").values("pk")[:1]).update(
            call=call)
        raters = get_user_model().objects.filter(
            pk__in=Assignment.objects.values("rater_id").distinct())
        names = {u.username for u in raters} | {u.get_full_name() for u in raters if u.get_full_name()}
        names -= {"physician", "coordinator", "analyst"}  # demo accounts named after their role, a word the texts use
        _vote_in_the_sealed_study()
        summary = export_study(project, path)
    return {"summary": summary, "spans": [s for s in spans if len(s.strip()) >= 4], "names": names}


@pytest.fixture(scope="module")
def demo_archive(django_db_setup, django_db_blocker, tmp_path_factory):
    """The demo exported once for the module. Its tests ask for ``db`` too: pytest-django then runs them among the
    database tests, before any transactional test has flushed the migrations' rows (the demo needs the Mini-CEX)."""
    from django.db import transaction

    path = tmp_path_factory.mktemp("archive") / "demo.zip"
    with django_db_blocker.unblock(), transaction.atomic():
        load_full_demo()
        facts = _build_demo(path)
        transaction.set_rollback(True)
    return path, facts


def verify_through_command(path: Path) -> tuple[list, str]:
    """``manage.py verify_study PATH --differences``: the checks ``verify_study`` gave the command and what the
    command printed, from one verification (each recomputes every figure of the archive: seconds)."""
    from studies.management.commands import verify_study as command

    given, real, out = [], command.verify_study, io.StringIO()

    def verify(file):
        given.append(real(file))
        return given[-1]

    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(command, "verify_study", verify)
        call_command("verify_study", str(path), "--differences", stdout=out)
    (checks,) = given
    return checks, out.getvalue()


@pytest.fixture(scope="module")
def demo_checks(django_db_setup, django_db_blocker, demo_archive):
    """The demo archive verified once (``verify_through_command``) for the module's tests that read its figures:
    the checks, what the command printed, and the number of projects before and after it."""
    from projects.models import Project
    from projects.scoping import scopes_disabled

    def count() -> int:
        with scopes_disabled():
            return Project.objects.count()

    with django_db_blocker.unblock():
        before = count()
        checks, output = verify_through_command(demo_archive[0])
        projects = (before, count())
    return SimpleNamespace(checks=checks, output=output, projects=projects)


def _vote_in_the_sealed_study() -> None:
    """The demo physician answers three comparisons of the open (sealed) demo preference study."""
    from scoring.preference import services as preference
    from scoring.preference.demo import DEMO_STUDY
    from scoring.preference.models import PreferenceStudy

    study = PreferenceStudy.objects.get(name=DEMO_STUDY)
    for n, task in enumerate(study.tasks.select_related("rater").order_by("pk")[:3]):
        for criterion in study.criteria.all():
            preference.save_answer(task, criterion.pk, ("A", "B", "tie")[n], task.rater)
        preference.submit_task(task, task.rater)


def _rewrite(source: Path, target: Path, path: str, change, *, rehash: bool) -> None:
    """Copy an archive changing one file; with ``rehash`` the manifest gets the changed file's new SHA-256."""
    with zipfile.ZipFile(source) as zin:
        files = {name: zin.read(name) for name in zin.namelist()}
    files[path] = change(files[path])
    if rehash:
        manifest = json.loads(files["manifest.json"])
        manifest["files"][path] = hashlib.sha256(files[path]).hexdigest()
        files["manifest.json"] = json.dumps(manifest).encode()
    with zipfile.ZipFile(target, "w", zipfile.ZIP_DEFLATED) as zout:
        for name, data in files.items():
            zout.writestr(name, data)


def _flip_one_label(data: bytes) -> bytes:
    lines = data.decode("utf-8").split("\n")
    header = lines[0].split(",")
    value = header.index("value")
    for n, line in enumerate(lines[1:], 1):
        cells = line.split(",")
        if len(cells) == len(header) and cells[0] == "Demo finished study (synthetic)" and cells[value] in ("0", "1"):
            cells[value] = "1" if cells[value] == "0" else "0"
            lines[n] = ",".join(cells)
            return "\n".join(lines).encode("utf-8")
    raise AssertionError("no binary label to change")


def test_the_demo_study_verifies_every_figure(db, demo_archive, demo_checks):
    _, facts = demo_archive
    checks = demo_checks.checks
    assert len(checks) == facts["summary"]["figures"] > 1000
    assert [c for c in checks if not c.equal] == []
    kinds = {c.figure.split(" ")[0] for c in checks}
    assert kinds == {"agreement", "judge", "preference", "delphi"}
    assert any("decision/verdict" in c.figure for c in checks)  # the verdicts
    assert any("model_estimates" in c.figure and "/ppi/" in c.figure for c in checks)  # the PPI estimates
    assert f"All {len(checks)} figures equal." in demo_checks.output
    before, after = demo_checks.projects
    assert after == before  # its throwaway project is rolled back: nothing left behind


def _differences(path: Path) -> list[str]:
    """The figures ``verify_study --differences`` prints for an archive that must fail verification."""
    out = io.StringIO()
    with pytest.raises(CommandError, match=r"figures differ \(first: "):
        call_command("verify_study", str(path), "--differences", stdout=out)
    rows = out.getvalue().splitlines()[1:]  # below the header: figure, archived, recomputed, equal
    assert rows and all(row.endswith("  NO") for row in rows), rows
    return [re.split(r"\s{2,}", row)[0] for row in rows]


def test_a_changed_label_names_the_figures_that_differ(db, demo_archive, tmp_path):
    changed = tmp_path / "changed.zip"
    _rewrite(demo_archive[0], changed, "data/labels.csv", _flip_one_label, rehash=True)
    names = _differences(changed)
    assert any(n.startswith("agreement Demo finished study (synthetic)") and n.endswith("data fingerprint")
               for n in names)
    assert any("/fleiss_kappa/value" in n or "percent_agreement" in n for n in names)


def test_a_file_that_does_not_match_the_manifest_is_refused_by_name(db, demo_archive, tmp_path):
    from studies.archive import ArchiveError
    from studies.load import import_study
    from studies.verify import verify_study

    tampered = tmp_path / "tampered.zip"
    _rewrite(demo_archive[0], tampered, "data/labels.csv", _flip_one_label, rehash=False)
    with pytest.raises(ArchiveError, match="data/labels.csv does not match the manifest"):
        verify_study(tampered)
    with pytest.raises(CommandError, match="Refused: data/labels.csv"):
        call_command("verify_study", str(tampered), stdout=io.StringIO())
    with pytest.raises(ArchiveError, match="data/labels.csv"):
        import_study(tampered, "Should not exist")
    extra = tmp_path / "extra.zip"
    shutil.copy(demo_archive[0], extra)
    with zipfile.ZipFile(extra, "a") as zf:
        zf.writestr("data/smuggled.csv", "a,b\n")
    with pytest.raises(ArchiveError, match="data/smuggled.csv is in the archive but not in its manifest"):
        verify_study(extra)


def test_no_file_holds_a_key_a_rater_name_or_a_redacted_span(db, demo_archive):
    path, facts = demo_archive
    assert facts["spans"] and facts["names"]
    with zipfile.ZipFile(path) as zf:
        for name in zf.namelist():
            data = zf.read(name)
            text = (_docx_text(data) if name.endswith(".docx") else data.decode("utf-8"))
            for secret in (SECRET_KEY, URL_SECRET, "MY_SECRET_KEY_VARIABLE"):
                assert secret not in text, f"{name} holds {secret}"
            for rater in facts["names"]:
                assert rater not in text, f"{name} names rater {rater!r}"
            for span in facts["spans"]:
                assert span not in text, f"{name} holds the redacted span {span!r}"


def _docx_text(data: bytes) -> str:
    with zipfile.ZipFile(io.BytesIO(data)) as docx:
        return "\n".join(docx.read(n).decode("utf-8", "replace") for n in docx.namelist())


def test_the_archive_is_an_ro_crate_of_frictionless_tables_with_the_software(db, demo_archive):
    path, _ = demo_archive
    with zipfile.ZipFile(path) as zf:
        crate = json.loads(zf.read("ro-crate-metadata.json"))
        package = json.loads(zf.read("datapackage.json"))
        software = json.loads(zf.read("software.json"))
        manifest = json.loads(zf.read("manifest.json"))
        names = set(zf.namelist())
    described = {e["@id"] for e in crate["@graph"]}
    assert names - {"ro-crate-metadata.json"} <= described
    assert set(manifest["files"]) == names - {"manifest.json"}
    resources = {r["path"]: r for r in package["resources"]}
    assert {"data/labels.csv", "data/judge_results.csv", "figures/figures.csv"} <= set(resources)
    assert [f["name"] for f in resources["data/labels.csv"]["schema"]["fields"]][:4] == [
        "campaign", "external_id", "rater", "item"]
    assert len(software["uv_lock_sha256"]) == 64 and software["python"] and software["packages"]["pingouin"]
    assert {"methods/methods.md", "methods/methods.docx", "methods/tripod-llm.md"} <= names


def test_the_methods_cite_and_the_checklist_points_into_the_archive(db, demo_archive):
    with zipfile.ZipFile(demo_archive[0]) as zf:
        methods = zf.read("methods/methods.md").decode()
        checklist = zf.read("methods/tripod-llm.md").decode()
    for cited in ("Shi et al.", "Krippendorff", "Shrout", "Gwet", "Angelopoulos"):
        assert cited in methods
    assert "Table 2" not in methods and "figures/reports/1.json" in methods
    assert "Scores per doctor model from the physicians' labels" in methods
    assert "drawn in the app with seed" in methods and "rated in the app" in methods
    assert "| 7d | LLM output |" in checklist and "| 6b | Analytical methods |" in checklist
    assert "research design LLM evaluation (E)" in checklist and "For the authors to complete." not in checklist


def test_import_study_makes_a_browsable_project(db, demo_archive, make_user, client):
    from annotation.models import Campaign, Label
    from projects import scoping
    from projects.models import AuditEvent, Pseudonym
    from projects.services import add_member

    out = io.StringIO()
    call_command("import_study", str(demo_archive[0]), "--project", "Reviewer copy", stdout=out)
    assert "Loaded into the new project 'Reviewer copy'" in out.getvalue()
    with scoping.scopes_disabled():
        from projects.models import Project

        project = Project.objects.get(name="Reviewer copy")
    with scoping.in_project(project):
        assert Label.objects.count() == 4608
        assert AuditEvent.objects.filter(action="study-import").exists()
        codes = set(Pseudonym.objects.values_list("code", flat=True))
        campaign = Campaign.objects.get(name="Demo finished study (synthetic)")
    reviewer = make_user("reviewer")
    add_member(project, reviewer, "analyst")
    client.force_login(reviewer)
    client.post(reverse("project-switch"), {"project": project.pk})
    page = client.get(reverse("campaign-detail", args=[campaign.pk]))
    assert page.status_code == 200 and "Demo finished study (synthetic)" in page.content.decode()
    with pytest.raises(CommandError, match="exists already"):
        call_command("import_study", str(demo_archive[0]), "--project", "Reviewer copy", stdout=io.StringIO())
    assert codes and all(code.startswith("R-") for code in codes)


# --- a small study of the tests' own project ---------------------------------------------------------------------
@pytest.fixture
def small_study(make_user):
    from annotation import labels
    from tests.factories import answer_all, campaign_with

    rng = random.Random(7)
    raters = [make_user(f"doc{i}", "physician", first_name="Real", last_name=f"Name{i}") for i in range(3)]
    campaign = campaign_with(raters, n=8, overlap=3, name="Small")
    for assignment in campaign.assignments.all():
        answer_all(assignment, assignment.rater, value=rng.randint(0, 1))
        labels.submit(assignment, assignment.rater)
    return campaign


def test_export_is_refused_while_a_dialogue_awaits_privacy_review(db, small_study, coordinator, tmp_path, client):
    from annotation.models import PrivacyStatus
    from core.jobs.models import Job
    from projects.models import AuditEvent
    from studies.export import PrivacyReviewPending, export_study

    dialogue = small_study.corpus.dialogues.first()
    dialogue.privacy_status = PrivacyStatus.FLAGGED
    dialogue.save(update_fields=["privacy_status"])
    with pytest.raises(PrivacyReviewPending, match=f"corpus-Small/{dialogue.external_id}"):
        export_study(small_study.project, tmp_path / "x.zip", coordinator)
    assert not (tmp_path / "x.zip").exists()
    with pytest.raises(CommandError, match="await privacy review"):
        call_command("export_study", "--project", "Default", "--out", str(tmp_path / "y.zip"), stdout=io.StringIO())
    client.force_login(coordinator)
    page = client.get(reverse("study-archive"))
    assert 'data-testid="archive-pending"' in page.content.decode()
    refused = client.post(reverse("study-archive-export"))
    assert refused.status_code == 409 and "await privacy review" in refused.content.decode()
    assert not AuditEvent.objects.filter(action="study-export").exists()
    assert not Job.objects.filter(kind=Job.Kind.STUDY_EXPORT).exists()  # nothing queued either


def test_the_page_exports_for_coordinators_and_analysts_only(db, small_study, coordinator, analyst, physician,
                                                             client, tmp_path):
    from core.jobs import services as jobs
    from core.jobs.models import Job
    from projects.models import AuditEvent
    from studies.verify import verify_study

    client.force_login(physician)
    for name in ("study-archive", "study-archive-methods"):
        assert client.get(reverse(name)).status_code == 403
    assert client.post(reverse("study-archive-export")).status_code == 403
    for user in (coordinator, analyst):
        client.force_login(user)
        assert client.get(reverse("study-archive")).status_code == 200
        client.get(reverse("study-archive-methods"))  # the first view queues the page's data for a worker
        run_due()
        methods = client.get(reverse("study-archive-methods"))
        assert methods.status_code == 200 and 'data-testid="tripod"' in methods.content.decode()
        docx = client.get(reverse("study-archive-document", args=["methods.docx"]))
        assert docx.status_code == 200 and docx.content[:2] == b"PK"
        assert client.get(reverse("study-archive-document", args=["nothing.txt"])).status_code == 404
    # the export is a worker's job: the page lists it while it runs, then offers the zip
    response = client.post(reverse("study-archive-export"))
    assert response.status_code == 302 and response["Location"] == reverse("study-archive")
    job = Job.objects.get(kind=Job.Kind.STUDY_EXPORT)
    assert job.requested_by == analyst and job.status == Job.Status.QUEUED
    listed = client.get(reverse("study-archive")).content.decode()
    assert 'data-testid="archive-exports"' in listed and 'data-status="queued"' in listed
    assert reverse("study-archive-export-status", args=[job.pk]) in listed  # polled while it runs
    assert client.get(reverse("study-archive-download", args=[job.pk])).status_code == 404  # nothing to download yet
    jobs.execute(job.pk)
    status = client.get(reverse("study-archive-export-status", args=[job.pk])).content.decode()
    assert 'data-status="succeeded"' in status and "hx-get" not in status
    download = reverse("study-archive-download", args=[job.pk])
    assert download in status
    response = client.get(download)
    assert response.status_code == 200 and response["Content-Type"] == "application/zip"
    job.refresh_from_db()
    assert response["Content-Disposition"] == f'attachment; filename="{job.result["file"]}"'
    path = tmp_path / "small.zip"
    path.write_bytes(b"".join(response.streaming_content))
    assert hashlib.sha256(path.read_bytes()).hexdigest() == job.result["sha256"]
    event = AuditEvent.objects.get(action="study-export")
    assert event.actor == analyst and event.data["file"] == job.result["file"]
    with zipfile.ZipFile(path) as zf:
        texts = [zf.read(n).decode("utf-8", "replace") for n in zf.namelist() if not n.endswith(".docx")]
    assert not any("Real" in text or "doc0" in text for text in texts)
    checks = verify_study(path)
    assert checks and all(c.equal for c in checks)


def test_the_export_takes_the_report_the_app_holds_and_verify_recomputes_it(db, small_study, tmp_path, monkeypatch):
    """A finished report job on the same labels and options is archived as the pages show it (no second
    computation); once a label changes it is not, and verify_study recomputes every figure either way."""
    from django.utils import timezone

    from annotation.models import Label
    from scoring.reports import agreement
    from scoring.reports import figures as reports
    from studies.export import export_study
    from studies.verify import verify_study

    job = reports.compute_now(small_study, None)  # the report an analyst without names sees
    assert job.params["names"] is False and job.result["n_labels"] > 0
    computed = []
    real_compute = agreement.compute
    monkeypatch.setattr(agreement, "compute", lambda *a, **k: computed.append(1) or real_compute(*a, **k))
    export_study(small_study.project, tmp_path / "held.zip")
    assert computed == []
    with zipfile.ZipFile(tmp_path / "held.zip") as zf:
        archived = json.loads(zf.read("figures/reports/1.json"))["report"]
    assert archived == json.loads(json.dumps({k: v for k, v in job.result.items() if k != "plots"}))
    checks = verify_study(tmp_path / "held.zip")
    assert computed and checks and all(c.equal for c in checks)

    label = Label.objects.filter(campaign=small_study).order_by("pk").first()
    Label.objects.filter(pk=label.pk).update(value=1 - label.value, updated_at=timezone.now())
    computed.clear()
    export_study(small_study.project, tmp_path / "changed.zip")
    assert computed == [1]  # the job's labels are not the campaign's any more: computed afresh
    assert all(c.equal for c in verify_study(tmp_path / "changed.zip"))


# ------------------------------------------------------------------------------------ preference and Delphi figures
def _csv_rows(data: bytes) -> tuple[list[str], list[dict]]:
    import csv

    reader = csv.DictReader(io.StringIO(data.decode("utf-8"), newline=""))
    return list(reader.fieldnames), list(reader)


def _csv_bytes(columns: list[str], rows: list[dict]) -> bytes:
    import csv

    out = io.StringIO(newline="")
    writer = csv.DictWriter(out, fieldnames=columns)
    writer.writeheader()
    writer.writerows(rows)
    return out.getvalue().encode("utf-8")


def _study_folder(path: Path, kind: str, unblinded: bool | None = None) -> tuple[str, dict]:
    with zipfile.ZipFile(path) as zf:
        for name in sorted(zf.namelist()):
            if name.startswith(f"{kind}/") and name.endswith("/settings.json"):
                settings = json.loads(zf.read(name))
                if unblinded is None or settings["unblinded"] is unblinded:
                    return name.rsplit("/", 1)[0], settings
    raise AssertionError(f"no {kind} study in the archive")


def test_preference_and_delphi_figures_are_named_by_study_round_item_and_verify(db, demo_archive, demo_checks):
    path, _ = demo_archive
    checks = demo_checks.checks
    _, delphi = _study_folder(path, "delphi")
    _, finished = _study_folder(path, "preference", unblinded=True)
    _, sealed = _study_folder(path, "preference", unblinded=False)
    ours = [c for c in checks if c.figure.split(" ")[0] in ("preference", "delphi")]
    assert ours and all(c.equal for c in ours)
    names = {c.figure for c in ours}
    code = delphi["rounds"][0]["items"][0]["code"]
    prefix = f"delphi {delphi['study']} round {delphi['rounds'][0]['number']} "
    for stat in ("median", "iqr", "agreement", "mean", "decision"):
        assert f"{prefix}items/{code}/{stat}" in names
    assert f"{prefix}round/kendall_w" in names
    assert any(n.startswith(f"delphi {delphi['study']} ") and "/validation/total/alpha" in n for n in names) \
        == any(r["validation"] for r in delphi["rounds"])
    criterion = finished["criteria"][0][0]
    first, second = finished["sources"][:2]
    assert f"preference {finished['study']} criteria/{criterion}/win_tie_loss/{first} vs {second}/first/value" in names
    assert any(n.startswith(f"preference {finished['study']} criteria/{criterion}/bradley_terry/strength/")
               for n in names)
    assert f"preference {sealed['study']} n_votes" in names
    # no database ids: no judge run by its id, no list position or id as a path step (ratings 1-5 aside)
    assert not any("judge-run-" in n or re.search(r"/\d+(/|$)", re.sub(r"/distribution/[1-5]$", "", n))
                   for n in names)


def _differing_after_one_row_changed(source: Path, target: Path, path: str, pick, change) -> tuple[list[str], dict]:
    """Change the first row of the archive's table ``path`` that ``pick`` accepts (the manifest re-hashed to hide
    it) and verify the copy: the names of the figures that differ, and the changed row."""
    from studies.verify import verify_study

    changed_row: dict = {}

    def rewrite(data: bytes) -> bytes:
        columns, rows = _csv_rows(data)
        row = next(r for r in rows if pick(r))
        change(row)
        changed_row.update(row)
        return _csv_bytes(columns, rows)

    _rewrite(source, target, path, rewrite, rehash=True)
    return [c.figure for c in verify_study(target) if not c.equal], changed_row


def test_a_changed_delphi_answer_names_exactly_the_figures_that_differ(db, demo_archive, tmp_path):
    folder, settings = _study_folder(demo_archive[0], "delphi")

    def change(row: dict) -> None:
        row["importance"] = "1" if row["importance"] != "1" else "5"

    names, changed_row = _differing_after_one_row_changed(
        demo_archive[0], tmp_path / "delphi.zip", f"{folder}/responses.csv",
        lambda r: r["completed"] and r["importance"] and r["round_kind"] == "delphi", change)
    prefix = f"delphi {settings['study']} "
    this_round = f"{prefix}round {changed_row['round']} "
    assert f"{prefix}data fingerprint" in names
    assert f"{this_round}items/{changed_row['item']}/mean" in names
    assert f"{this_round}round/kendall_w" in names
    assert all(n == f"{prefix}data fingerprint" or n.startswith(f"{this_round}items/{changed_row['item']}/")
               or n.startswith(f"{this_round}round/") for n in names), names


def test_a_changed_preference_vote_names_exactly_the_figures_that_differ(db, demo_archive, tmp_path):
    folder, settings = _study_folder(demo_archive[0], "preference", unblinded=True)

    def change(row: dict) -> None:
        row["choice"], row["preferred_source"] = "B", row["source_b"]

    names, changed_row = _differing_after_one_row_changed(
        demo_archive[0], tmp_path / "preference.zip", f"{folder}/votes.csv",
        lambda r: r["rater_kind"] == "human" and r["choice"] == "A", change)
    prefix = f"preference {settings['study']} "
    criterion = f"{prefix}criteria/{changed_row['criterion']}/"
    assert f"{prefix}data fingerprint" in names
    assert any(n.startswith(f"{criterion}win_tie_loss/") for n in names)
    assert any(n.startswith(f"{prefix}position_bias/") for n in names)
    assert all(n == f"{prefix}data fingerprint" or n.startswith(criterion) or n.startswith(f"{prefix}position_bias/")
               or (n.startswith(f"{prefix}judges/") and f"/criteria/{changed_row['criterion']}/" in n)
               for n in names), names


def test_a_sealed_preference_study_leaks_no_figure_per_source(db, demo_archive):
    path, _ = demo_archive
    folder, settings = _study_folder(path, "preference", unblinded=False)
    _, finished = _study_folder(path, "preference", unblinded=True)
    with zipfile.ZipFile(path) as zf:
        columns, votes = _csv_rows(zf.read(f"{folder}/votes.csv"))
        _, figures = _csv_rows(zf.read("figures/figures.csv"))
        results = json.loads(zf.read(f"{folder}/results.json"))
    assert votes and not {"source_a", "source_b", "preferred_source"} & set(columns)
    assert settings["sources"] == [] and settings["seed"] is None and results["sealed"] is True
    ours = [f for f in figures if f["figure"].startswith(f"preference {settings['study']} ")]
    assert {f["figure"].removeprefix(f"preference {settings['study']} ") for f in ours} == {
        "data fingerprint", "n_votes", *(f"criteria/{code}/n_votes" for code, _ in settings["criteria"])}
    assert next(f["value"] for f in ours if f["figure"].endswith(" n_votes")) == str(len(votes))
    assert not any(label in f["figure"] or label in f["value"] for f in ours for label in finished["sources"])


def test_the_demo_archive_is_a_valid_data_package_and_ro_crate(db, demo_archive, tmp_path):
    """``frictionless validate datapackage.json`` passes on every row of every table (JSON arrays declared as
    arrays, objects as objects), and the rocrate library loads the crate: the version the docs name, a licence."""
    from tests.archive_standards import crate_problems, frictionless_errors, unpack

    folder = unpack(demo_archive[0], tmp_path / "demo")
    assert frictionless_errors(folder) == []
    assert crate_problems(folder) == []
