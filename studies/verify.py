"""``verify_study``: every figure of an archive recomputed with this instance's code from the archived data and
settings. Campaign and judge reports: the archive is loaded into a throwaway project inside a transaction that is
rolled back, so nothing stays behind. Preference and Delphi figures: recomputed from the archive's own rows
(:mod:`studies.other_figures`). Each figure is compared with the archived value at the precision the app prints."""

from __future__ import annotations

import uuid
from dataclasses import dataclass
from pathlib import Path

from django.db import transaction

from projects import scoping
from projects.services import create_project
from studies import figure_rows as study_figures
from studies import other_figures
from studies.archive import open_archive
from studies.load import load_into


@dataclass
class FigureCheck:
    figure: str
    archived: str
    recomputed: str

    @property
    def equal(self) -> bool:
        return self.archived == self.recomputed


def verify_study(path: str | Path) -> list[FigureCheck]:
    """One row per figure (archived or recomputed), in the archive's order; refuses (ArchiveError) an archive
    whose files do not match its manifest."""
    archive = open_archive(path)
    settings = archive.json("settings/reports.json")
    archived = {row["figure"]: row["value"] for _, row in archive.rows("figures/figures.csv")}
    with transaction.atomic():
        project = create_project(f"verify {uuid.uuid4().hex[:12]}",
                                 description="Throwaway project of verify_study (rolled back).")
        with scoping.in_project(project):
            load_into(archive, project)
            recomputed = {row["figure"]: row["value"]
                          for row in study_figures.figure_rows(study_figures.compute_reports(project, settings))}
        transaction.set_rollback(True)
    recomputed.update((row["figure"], row["value"]) for row in other_figures.recompute(archive))
    names = list(archived) + [name for name in recomputed if name not in archived]
    return [FigureCheck(name, archived.get(name, "(absent)"), recomputed.get(name, "(absent)")) for name in names]
