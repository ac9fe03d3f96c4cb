"""python manage.py generate_dialogues --cases PATH --doctor-model M --patient-model M [--base-url URL] [--turns N]
[--temperatures 0.2,0.8] [--corpus NAME] [--project NAME] [--wait]"""

from __future__ import annotations

import hashlib
import os
import sys
import time
from decimal import Decimal

from django.core.management.base import BaseCommand, CommandError
from django.db import transaction

from annotation.importers import ImportRejected
from projects.scoping import in_project
from projects.services import ProjectCommand
from scoring.generation import cases
from scoring.generation import services as generation
from scoring.generation.models import CaseSet, GenerationJob
from scoring.llm import gateway, keys
from scoring.management.commands.run_judge import bar


def case_set_for(path: str, project) -> tuple[CaseSet, int]:
    """The case set of this file's content in ``project`` (imported once; the same file again reuses it, so a re-run
    is answered from the request cache). Returns (case set, cases imported now)."""
    with open(path, "rb") as handle:
        digest = hashlib.sha256(handle.read()).hexdigest()[:12]
    name = f"{os.path.basename(path)} ({digest})"
    with in_project(project):
        existing = CaseSet.objects.alive().filter(name=name).first()
        if existing is not None:
            return existing, 0
        with transaction.atomic():
            case_set = CaseSet.objects.create(project=project, name=name, source=os.path.abspath(path))
            counts = cases.import_case_file(case_set, path)
    return case_set, counts["created"]


def summary_lines(job: GenerationJob, progress: dict, report: dict, wall: float) -> list[str]:
    lines = [
        f"generation #{job.pk} {job.get_status_display().lower()}" + (f": {job.error}" if job.error else ""),
        f"  dialogues done: {progress['done']}  failed: {progress['failed']}  "
        + (f"not done: {progress['not_done']}  " if progress["ended"] else f"remaining: {progress['remaining']}  ")
        + f"turns: {progress['turns']} ({progress['cached_turns']} from cache)",
        f"  calls made: {progress['calls']}  requests sent: {progress['spend']['requests_sent']}  tokens: "
        f"{progress['prompt_tokens']} in / {progress['completion_tokens']} out  cost: {progress['spend']['cost_text']}"
        f"  wall time: {wall:.1f} s",
        f"  corpus: {job.corpus.name}",
    ]
    for row in report["by_model"]:
        acc = "undefined" if row["accuracy"] is None else (
            f"{row['accuracy']:.1%} (95% CI {row['ci_low']:.1%}-{row['ci_high']:.1%})")
        lines.append(f"  accuracy {row['doctor_model']}: {row['correct']}/{row['judged']} = {acc}, "
                     f"turns mean {row['turns_mean']:.1f}")
    return lines


class Command(ProjectCommand, BaseCommand):
    help = ("Generate dialogues: doctor model(s) under test talk with a patient simulator over the cases of a JSON "
            "Lines file; the dialogues go into a corpus (optionally wait with a progress bar).")

    def add_arguments(self, parser):
        parser.add_argument("--cases", required=True, help="JSON Lines file of self-reports, templates or OSCE cases")
        parser.add_argument("--doctor-model", required=True, help="doctor model(s) under test, comma-separated")
        parser.add_argument("--patient-model", required=True, help="patient simulator (also measurement, moderator)")
        parser.add_argument("--base-url", default="", help="OpenAI-compatible base URL (default OPENAI_BASE_URL)")
        parser.add_argument("--api-key-env", default="OPENAI_API_KEY",
                            help="environment variable holding the key: OPENAI_API_KEY (default), a name starting "
                                 "with LLM_KEY_, or one listed in LLM_KEY_VARIABLES")
        parser.add_argument("--turns", type=int, default=10, help="most doctor turns per dialogue (default 10)")
        parser.add_argument("--temperatures", default="0.2,0.8", help="doctor temperatures (default 0.2,0.8)")
        parser.add_argument("--corpus", default="", help="output corpus (default: 'Generated from <case set>')")
        parser.add_argument("--max-cost", type=Decimal, default=None,
                            help="pause the job once its answers cost this much")
        parser.add_argument("--max-tokens", type=int, default=None,
                            help="pause the job once its answers used this many tokens (prompt + completion)")
        parser.add_argument("--wait", action="store_true", help="show progress until the job ends")

    def handle(self, *args, **options):
        project = self.project
        try:
            key_env = keys.check_key_variable(options["api_key_env"])
        except keys.KeyVariableRefused as exc:
            raise CommandError(str(exc)) from None
        path = options["cases"]
        if not os.path.isfile(path):
            raise CommandError(f"No such file: {path}")
        try:
            case_set, imported = case_set_for(path, project)
        except ImportRejected as exc:
            raise CommandError("Nothing was imported; fix these line(s):\n  " +
                               "\n  ".join(str(e) for e in exc.errors)) from None
        self.stderr.write(f"case set {case_set.name!r}: " + (f"{imported} case(s) imported" if imported else
                                                            "already imported, reused"))
        for name in ("max_cost", "max_tokens"):
            if options[name] is not None and options[name] < 0:
                raise CommandError(f"--{name.replace('_', '-')} cannot be negative.")
        try:
            job = generation.create_job(
                case_set=case_set, corpus_name=options["corpus"],
                doctor_models=[m for m in options["doctor_model"].split(",") if m.strip()],
                patient_model=options["patient_model"], temperatures=generation.parse_list(options["temperatures"]),
                doctor_base_url=options["base_url"], patient_base_url=options["base_url"], max_turns=options["turns"],
                doctor_api_key_env=key_env, patient_api_key_env=key_env, cost_cap=options["max_cost"],
                token_cap=options["max_tokens"])
        except (gateway.NotConfigured, generation.GenerationError) as exc:
            raise CommandError(str(exc)) from None
        queued = generation.start(job)
        self.stderr.write(f"generation #{job.pk}: {queued} dialogue(s) queued into corpus {job.corpus.name!r}")
        if not options["wait"]:
            self.stdout.write(f"generation #{job.pk} started; follow it on /generation/jobs/{job.pk}/")
            return
        started = time.monotonic()
        while True:
            job.refresh_from_db()
            progress = generation.progress(job)
            eta = progress["eta_seconds"]
            line = (f"\r[{bar(progress['percent'] / 100)}] {progress['done'] + progress['failed']}/{progress['total']} "
                    f"turns {progress['turns']} calls {progress['calls']} failed {progress['failed']}"
                    + (f" ETA {eta:.0f}s" if eta else ""))
            if progress["delivery"]["notice"]:
                line += f"  {progress['delivery']['notice']}"
            sys.stderr.write(line.ljust(100))
            sys.stderr.flush()
            if job.status not in GenerationJob.ACTIVE:
                break
            time.sleep(1.0)
        sys.stderr.write("\n")
        for line in summary_lines(job, generation.progress(job), generation.report(job), time.monotonic() - started):
            self.stdout.write(line)
        if job.status != GenerationJob.Status.SUCCEEDED:
            raise CommandError(f"generation #{job.pk} {job.get_status_display().lower()}: "
                               f"{job.error or 'see the job page'}")
        if progress["failed"]:
            raise CommandError(f"generation #{job.pk}: {progress['failed']} dialogue(s) failed; retry them on the "
                               "job page")
