import contextlib
import time

from django.apps import apps
from django.core.management import call_command
from django.core.management.base import BaseCommand
from django.utils.module_loading import import_string
from django.utils.translation import gettext

from annotation.demo import demo_logins, load_demo, load_finished_demo, load_instrument_demo
from projects.roles import ROLE_LABELS


def other_demo_commands() -> list[str]:
    """Demo commands the other apps declare in their AppConfig (``demo_commands``), in INSTALLED_APPS order.

    Annotation is the bottom layer and imports neither scoring nor delphi: each app names its own loaders and
    they run here by command name, after the users and the corpus they build on."""
    return [name for config in apps.get_app_configs() if config.name != "annotation"
            for name in getattr(config, "demo_commands", ())]


def demo_contexts() -> list[str]:
    """Context managers the other apps declare (``demo_contexts``, dotted paths) for the whole load: scoring's
    leaves the figures the demo queues to the loader, which computes them, rather than to a worker at the same
    time."""
    return [path for config in apps.get_app_configs() for path in getattr(config, "demo_contexts", ())]


class Command(BaseCommand):
    help = ("Load all demo data in one process: the demo users, corpus and campaign, the ready instruments (HIVMedQA, "
            "AgentClinic) with a demo corpus of question-answer items, then every app's demo (Delphi study, "
            "preference study, generation cases). Safe to run again: what exists is skipped.")

    def add_arguments(self, parser):
        parser.add_argument("--only-annotation", action="store_true",
                            help="only the users, the demo corpus and its campaign")
        parser.add_argument("--no-logins", action="store_true", help="do not print the demo logins")

    def handle(self, *args, **options):
        with contextlib.ExitStack() as stack:
            for path in demo_contexts():
                stack.enter_context(import_string(path)())
            self._load(**options)

    def _load(self, only_annotation: bool = False, no_logins: bool = False, **options):
        start = time.perf_counter()
        counts = load_demo()
        more = load_instrument_demo()
        finished = load_finished_demo()
        self.stdout.write(gettext(
            "Demo data ready: %(users)s new users, %(dialogues)s new dialogues, %(answers)s new answers, "
            "%(instruments)s new instrument(s), %(campaigns)s new campaign(s), %(labels)s new synthetic label(s).")
            % {"users": counts["users_created"], "dialogues": counts["dialogues_created"],
               "answers": more["answers_created"], "instruments": more["instruments_installed"],
               "campaigns": counts["campaigns_created"] + more["campaigns_created"] + finished["campaigns_created"],
               "labels": finished["labels_created"]})
        if not only_annotation:
            for name in other_demo_commands():
                call_command(name, stdout=self.stdout, stderr=self.stderr)
        if not no_logins:
            for role, username, password in demo_logins():
                self.stdout.write(f"  {str(ROLE_LABELS.get(role, role)):<24} {username} / {password}")
        if options["verbosity"] > 1:
            self.stdout.write(gettext("Demo data loaded in %(seconds)s s.")
                              % {"seconds": f"{time.perf_counter() - start:.1f}"})
