"""The study archive exported by a worker: the page asks for an export and polls it, instead of holding a request
open while every report is computed (up to a minute on a large study).

The worker writes the zip into Django's default file storage (``MEDIA_ROOT``, or the shared storage ``STORAGES``
names when web servers and workers run on several machines) under ``study-archives/<project>/``; the page lists the
project's exports and offers each finished one for download. The audit entry (*study-export*) names who asked."""

from __future__ import annotations

import tempfile
from pathlib import Path
from typing import Any

from django.core.files import File
from django.core.files.storage import default_storage

from core.jobs import services as jobs
from core.jobs.models import Job
from projects.models import Project
from studies.export import archive_name, export_study

FOLDER = "study-archives"
RECENT = 5


def start_export(project: Project, user) -> Job:
    """Queue an export of ``project``'s study for ``user`` (the caller checked the privacy review)."""
    return jobs.submit(Job.Kind.STUDY_EXPORT, user=user, project=project, file=archive_name(project))


def recent_exports(project: Project) -> list[Job]:
    """The project's latest exports, newest first."""
    return list(Job.objects.filter(kind=Job.Kind.STUDY_EXPORT, project=project).order_by("-created_at", "-pk")
                [:RECENT])


def export_job(pk: int) -> Job:
    """An export job of the request's project (Job.DoesNotExist for another project's or another kind)."""
    return Job.objects.get(pk=pk, kind=Job.Kind.STUDY_EXPORT)


def open_archive_file(job: Job):
    """The finished export's zip, opened for reading; FileNotFoundError when it is not (or no longer) there."""
    stored = (job.result or {}).get("storage")
    if job.status != Job.Status.SUCCEEDED or not stored or not default_storage.exists(stored):
        raise FileNotFoundError("This export has no archive to download.")
    return default_storage.open(stored, "rb")


@jobs.handler(Job.Kind.STUDY_EXPORT)
def study_export(job: Job) -> dict[str, Any]:
    """The job's body: export the study into a temporary file, then keep it in the file storage."""
    project = Project.objects.get(pk=job.project_id)
    name = job.params.get("file") or archive_name(project)
    jobs.set_progress(job, 0.05, "computing the reports and writing the tables")
    with tempfile.TemporaryDirectory(prefix="study-archive-") as folder:
        path = Path(folder) / name
        summary = export_study(project, path, job.requested_by)  # refused if a dialogue was flagged meanwhile
        jobs.set_progress(job, 0.95, "storing the archive")
        with open(path, "rb") as fh:
            stored = default_storage.save(f"{FOLDER}/{project.pk}/{job.pk}-{name}", File(fh))
    tables = summary["tables"]
    return {"file": name, "storage": stored, "sha256": summary["sha256"], "bytes": default_storage.size(stored),
            "figures": summary["figures"], "dialogues": tables.get("data/dialogues.csv", 0),
            "labels": tables.get("data/labels.csv", 0), "judge_answers": tables.get("data/judge_results.csv", 0)}
