import time

from django.apps import apps
from django.core.management import call_command
from django.core.management.base import BaseCommand

from annotation.demo import demo_logins, load_demo, load_finished_demo, load_instrument_demo


def other_demo_commands() -> list[str]:
    """Demo commands the other apps declare in their AppConfig (``demo_commands``), in INSTALLED_APPS order.

    Annotation is the bottom layer and imports neither scoring nor delphi: each app names its own loaders and
    they run here by command name, after the users and the corpus they build on."""
    return [name for config in apps.get_app_configs() if config.name != "annotation"
            for name in getattr(config, "demo_commands", ())]


class Command(BaseCommand):
    help = ("Load all demo data in one process: the demo users, corpus and campaign, the ready instruments (HIVMedQA, "
            "AgentClinic) with a demo corpus of question-answer items, then every app's demo (Delphi study, "
            "preference study, generation cases). Safe to run again: what exists is skipped.")

    def add_arguments(self, parser):
        parser.add_argument("--only-annotation", action="store_true",
                            help="only the users, the demo corpus and its campaign")
        parser.add_argument("--no-logins", action="store_true", help="do not print the demo logins")

    def handle(self, *args, only_annotation: bool = False, no_logins: bool = False, **options):
        start = time.perf_counter()
        counts = load_demo()
        more = load_instrument_demo()
        finished = load_finished_demo()
        self.stdout.write(
            f"Demo data ready: {counts['users_created']} new users, {counts['dialogues_created']} new dialogues, "
            f"{more['answers_created']} new answers, {more['instruments_installed']} new instrument(s), "
            f"{counts['campaigns_created'] + more['campaigns_created'] + finished['campaigns_created']} new "
            f"campaign(s), {finished['labels_created']} new synthetic label(s)."
        )
        if not only_annotation:
            for name in other_demo_commands():
                call_command(name, stdout=self.stdout, stderr=self.stderr)
        if not no_logins:
            for role, username, password in demo_logins():
                self.stdout.write(f"  {role:<12} {username} / {password}")
        if options["verbosity"] > 1:
            self.stdout.write(f"Demo data loaded in {time.perf_counter() - start:.1f} s.")
