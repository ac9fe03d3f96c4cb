"""The study archive's preference figures with an LLM judge: the archive holds what the results page shows
(judges' position consistency, bias and agreement with the physicians included), and verify_study recomputes it
from the archived votes. The demo's preference and Delphi figures are tested in tests/test_studies.py."""

from __future__ import annotations

import zipfile

import pytest

from scoring.preference import analysis as preference_analysis
from scoring.preference import judging as preference_judging
from scoring.preference import rows as preference_rows
from scoring.preference import services as preference
from studies.figure_rows import flatten, printed
from tests.fake_openai import FakeOpenAI
from tests.test_preference import SOURCES, answer_all
from tests.test_preference_judge import always_a, drain, make_config, study_with_raters


@pytest.fixture
def raters(make_user):
    return [make_user(f"fdoc{i}", "physician") for i in range(2)]


def test_a_judged_preference_study_archives_and_verifies_the_judges_figures(instrument, coordinator, raters,
                                                                            tmp_path):
    from studies.export import export_study
    from studies.other_figures import _named
    from studies.verify import verify_study
    from tests.factories import default_project

    study = study_with_raters(coordinator, raters, name="Judged for the archive")
    with FakeOpenAI(responder=always_a) as server:
        run = preference_judging.create_run(study, make_config(server), coordinator)
        preference_judging.start(run)
        drain(run)
    assert run.status == "succeeded"
    answer_all(study, lambda task, criterion, a, b: ("A", "tie", "B")[(task.pk + criterion.order) % 3])
    preference.lock(study, coordinator)
    preference.unblind(study, coordinator, "analysis")
    path = tmp_path / "judged.zip"
    export_study(default_project(), path)

    checks = verify_study(path)
    assert checks and [c for c in checks if not c.equal] == []
    ours = {c.figure: c.archived for c in checks if c.figure.startswith("preference Judged for the archive ")}
    prefix = "preference Judged for the archive judges/PairJudge/"
    # a judge that always answers A contradicts itself on every pair: consistency 0, every verdict a tie
    assert ours[f"{prefix}position_consistency_overall/value"] == "0.000"
    assert ours[f"{prefix}position_bias/share_a/value"] == "1.000"
    assert any(n.startswith(prefix) and "/agreement_with_humans/with_ties/value" in n for n in ours)
    # the archive shows what the results page shows
    page = preference_analysis.analysis(study, n_resamples=1000)
    assert {f"preference Judged for the archive {name}": printed(value)
            for name, value in flatten(_named(page))} == {n: v for n, v in ours.items() if "fingerprint" not in n}
    with zipfile.ZipFile(path) as zf:
        assert any(n.startswith("preference/") and n.endswith("/votes.csv") for n in zf.namelist())


def test_a_locked_sealed_study_archives_its_votes_and_side_bias_and_nothing_per_source(instrument, coordinator,
                                                                                        raters, tmp_path):
    from studies.export import export_study
    from studies.verify import verify_study
    from tests.factories import default_project

    study = study_with_raters(coordinator, raters, name="Sealed for the archive")
    answer_all(study, lambda task, criterion, a, b: "A" if a == SOURCES[0] or task.pk % 4 == 0 else "B")
    preference.lock(study, coordinator)
    path = tmp_path / "sealed.zip"
    export_study(default_project(), path)

    checks = verify_study(path)
    assert checks and [c for c in checks if not c.equal] == []
    prefix = "preference Sealed for the archive "
    ours = {c.figure.removeprefix(prefix): c.archived for c in checks if c.figure.startswith(prefix)}
    codes = list(study.criteria.values_list("code", flat=True))
    assert {name for name in ours if not name.startswith("position_bias/")} == {
        "data fingerprint", "n_votes", *(f"criteria/{code}/n_votes" for code in codes)}
    n_votes = study.tasks.count() * len(codes)
    assert ours["n_votes"] == ours["position_bias/n"] == str(n_votes)
    labels = list(study.sources.values_list("label", flat=True))
    with zipfile.ZipFile(path) as zf:
        texts = {n: zf.read(n).decode("utf-8") for n in zf.namelist() if n.startswith("preference/")}
    assert texts and not any(label in text for text in texts.values() for label in labels)
    assert not any(label in name or label in value for name, value in ours.items() for label in labels)


def test_raters_leave_by_pseudonym_even_where_the_study_shows_names(instrument, coordinator, raters, tmp_path):
    from studies.export import export_study
    from tests.factories import default_project

    study = study_with_raters(coordinator, raters, name="Named raters")
    answer_all(study, lambda task, criterion, a, b: "A")
    preference.lock(study, coordinator)
    preference.unblind(study, coordinator, "analysis")
    study.allow_names = True
    study.save(update_fields=["allow_names"])
    usernames = {r.username for r in raters}
    assert {row["rater"] for row in preference_rows.export_rows(study)} == usernames  # the app's own CSV
    path = tmp_path / "named.zip"
    export_study(default_project(), path)
    with zipfile.ZipFile(path) as zf:
        texts = {n: zf.read(n).decode("utf-8", "replace") for n in zf.namelist() if not n.endswith(".docx")}
    assert not [n for n, text in texts.items() if any(name in text for name in usernames)]
    votes = next(text for n, text in texts.items() if n.startswith("preference/") and n.endswith("/votes.csv"))
    assert "R-" in votes
