"""python manage.py run_judge --corpus NAME --model MODEL [--project NAME] [...] [--wait]"""

from __future__ import annotations

import sys
import time
from decimal import Decimal

from django.core.management.base import BaseCommand, CommandError
from django.db import transaction

from annotation.models import Corpus, ScaleVersion
from projects.services import ProjectCommand
from scoring.judges import runs as judging
from scoring.judges.models import JudgeConfig, JudgeRun
from scoring.llm import gateway, keys


def bar(fraction: float, width: int = 30) -> str:
    filled = int(round(width * fraction))
    return "#" * filled + "-" * (width - filled)


def summary_lines(run: JudgeRun, progress: dict, wall: float) -> list[str]:
    spend = progress["spend"]
    limit = f" of at most {spend['request_limit']}" if spend["request_limit"] else ""
    return [
        f"run #{run.pk} {run.get_status_display().lower()}" + (f": {run.error}" if run.error else ""),
        f"  scored: {progress['done']}  calls made: {progress['calls']}  cached: {progress['cached']}  "
        f"unscored: {progress['unscored']}  failed: {progress['failed']}  "
        + (f"not done: {progress['not_done']}" if progress["ended"] else f"remaining: {progress['remaining']}"),
        f"  requests sent: {spend['requests_sent']}{limit}  tokens: {progress['prompt_tokens']} in / "
        f"{progress['completion_tokens']} out  cost: {spend['cost_text']}  wall time: {wall:.1f} s",
    ]


def estimate_line(estimate: dict) -> str:
    return (f"{estimate['requests']} request(s): {estimate['calls']} call(s) to make, {estimate['cached']} answered "
            f"from the cache; about {estimate['prompt_tokens']} prompt + {estimate['completion_tokens']} completion "
            f"tokens (completion estimated from {estimate['completion_basis']}); estimated cost "
            f"{estimate['cost_text']}" + (" (Batch API: half price)" if estimate["batch"] else ""))


class _Estimated(Exception):
    """--dry-run: the estimate is printed; roll back the judge configuration made for it."""


class Command(ProjectCommand, BaseCommand):
    help = "Create and start an LLM judge run on a corpus (optionally wait for it with a progress bar)."
    # Django's system checks import every URL module and the admin (1-3 s before the first request); they run where
    # the app is deployed and started (``manage.py check``, ``config.run``), not before every run.
    requires_system_checks = []

    def add_arguments(self, parser):
        parser.add_argument("--corpus", required=True, help="corpus name (in the project)")
        parser.add_argument("--model", required=True, help="model name at the endpoint")
        parser.add_argument("--base-url", default="", help="OpenAI-compatible base URL (default OPENAI_BASE_URL)")
        parser.add_argument("--api-key-env", default="OPENAI_API_KEY",
                            help="environment variable holding the key: OPENAI_API_KEY (default), a name starting "
                                 "with LLM_KEY_, or one listed in LLM_KEY_VARIABLES")
        parser.add_argument("--mode", choices=["per-item", "per-dialogue"], default="per-item")
        parser.add_argument("--scale", default="llm-mini-cex",
                            help="slug of the instrument to judge with (its newest published version; "
                                 "default llm-mini-cex)")
        parser.add_argument("--items", default="", help="comma-separated item codes (default: every item)")
        parser.add_argument("--concurrency", type=int, default=8)
        parser.add_argument("--config", default="", help="name of the judge configuration to create or reuse")
        parser.add_argument("--temperature", type=float, default=0.0)
        parser.add_argument("--batch", action="store_true",
                            help="send the requests through the provider's Batch API (half the price, results "
                                 "within 24 hours)")
        parser.add_argument("--max-cost", type=Decimal, default=None,
                            help="pause the run once its answers cost this much (in the judge's currency)")
        parser.add_argument("--max-tokens", type=int, default=None,
                            help="pause the run once its answers used this many tokens (prompt + completion)")
        parser.add_argument("--dry-run", action="store_true",
                            help="print the calls, tokens and estimated cost, then exit without sending anything")
        parser.add_argument("--wait", action="store_true", help="show progress until the run ends")
        parser.add_argument("--poll", type=float, default=1.0, help=argparse_hidden())

    def check_arguments(self, **options) -> None:
        try:  # before anything is read, stored or sent
            keys.check_key_variable(options["api_key_env"])
        except keys.KeyVariableRefused as exc:
            raise CommandError(str(exc)) from None

    def handle(self, *args, **options):
        options["api_key_env"] = keys.check_key_variable(options["api_key_env"])
        project = self.project
        corpus = Corpus.objects.alive().filter(name=options["corpus"]).first()
        if corpus is None:
            raise CommandError(f"No corpus named {options['corpus']!r} in project {project.name!r}.")
        visible = ScaleVersion.objects.all()  # the scoped manager: own versions and the published library
        version = visible.filter(scale__slug=options["scale"], status="published").order_by("-number").first()
        if version is None:
            known = ", ".join(visible.filter(status="published").order_by("scale__slug")
                              .values_list("scale__slug", flat=True).distinct())
            raise CommandError(f"No published scale {options['scale']!r} (published: {known}).")
        try:  # nothing stays behind when the run is refused (or only estimated): no judge, no prompt set, no run
            with transaction.atomic():
                run = self._create(project, corpus, version, options)
        except _Estimated:
            return
        except (gateway.NotConfigured, judging.RunError) as exc:
            raise CommandError(str(exc)) from None
        units = judging.start(run)
        self.stderr.write(f"run #{run.pk}: {units} unit(s) to judge with configuration {run.config.name!r}")
        # Estimated while the workers send (building every prompt takes a while): from the cache as it was when the
        # run started, so the answers coming in do not count as cached.
        self.stdout.write(estimate_line(judging.estimate(
            run.config, corpus, item_codes=run.item_codes, batch=options["batch"], cached_before=run.started_at)))
        if not options["wait"]:
            return
        started = time.monotonic()
        while True:
            run.refresh_from_db()
            progress = judging.progress(run)
            done = progress["total"] - progress["remaining"] - progress["not_done"]
            eta = progress["eta_seconds"]
            line = (f"\r[{bar(progress['percent'] / 100)}] {done}/{progress['total']} "
                    f"calls {progress['calls']} cached {progress['cached']} failed {progress['failed']} "
                    f"{(progress['calls_per_second'] or 0):.1f}/s" + (f" ETA {eta:.0f}s" if eta else ""))
            notice = progress["delivery"]["notice"]
            if notice:
                line += f"  {notice}"
            sys.stderr.write(line.ljust(100))
            sys.stderr.flush()
            if run.status not in JudgeRun.ACTIVE:
                break
            time.sleep(options["poll"])
        sys.stderr.write("\n")
        for line in summary_lines(run, judging.progress(run), time.monotonic() - started):
            self.stdout.write(line)
        if run.status != JudgeRun.Status.SUCCEEDED:  # failed, finished with problems, paused or cancelled
            raise CommandError(f"run #{run.pk} {run.get_status_display().lower()}: {run.error or 'see the run page'}")

    def _create(self, project, corpus: Corpus, version: ScaleVersion, options: dict) -> JudgeRun:
        """The judge configuration (made or reused) and its run, or RunError / NotConfigured saying why not."""
        scale_part = "" if options["scale"] == "llm-mini-cex" else f" {options['scale']}"
        name = options["config"] or (f"{options['model']} {options['mode']}{scale_part} @ "
                                     f"{options['base_url'] or 'default'}")
        defaults = {"base_url": options["base_url"], "api_key_env": options["api_key_env"],
                    "model": options["model"], "mode": options["mode"], "concurrency": options["concurrency"],
                    "temperature": options["temperature"],
                    "prompt_set": judging.default_prompt_set(version, project=project)}
        config, created = JudgeConfig.objects.get_or_create(project=project, name=name[:120], defaults=defaults)
        if not created:
            changed = [k for k, v in defaults.items() if k != "prompt_set" and getattr(config, k) != v]
            if config.prompt_set.scale_version.scale_id != version.scale_id:
                changed.append("scale")
            if changed:
                raise judging.RunError(f"Judge configuration {config.name!r} exists with other settings "
                                       f"({', '.join(changed)}); pass --config NEW_NAME.")
        codes = [c.strip() for c in options["items"].split(",") if c.strip()]
        if options["dry_run"]:
            self.stdout.write(estimate_line(judging.estimate(config, corpus, item_codes=codes,
                                                             batch=options["batch"])))
            raise _Estimated
        for key in ("max_cost", "max_tokens"):
            if options[key] is not None and options[key] < 0:
                raise judging.RunError(f"--{key.replace('_', '-')} cannot be negative.")
        return judging.create_run(config, corpus, item_codes=codes, batch=options["batch"],
                                  cost_cap=options["max_cost"], token_cap=options["max_tokens"])


def argparse_hidden() -> str:
    import argparse

    return argparse.SUPPRESS
