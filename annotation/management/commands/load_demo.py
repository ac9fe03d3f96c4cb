from django.core.management.base import BaseCommand

from annotation.demo import demo_logins, load_demo, load_instrument_demo


class Command(BaseCommand):
    help = ("Create the demo users (one per role), the demo corpus, the ready instruments (HIVMedQA, AgentClinic) and "
            "a demo corpus of question-answer items. Safe to run again.")

    def handle(self, *args, **options):
        counts = load_demo()
        more = load_instrument_demo()
        self.stdout.write(
            f"Demo data ready: {counts['users_created']} new users, {counts['dialogues_created']} new dialogues, "
            f"{more['answers_created']} new answers, {more['instruments_installed']} new instrument(s), "
            f"{counts['campaigns_created'] + more['campaigns_created']} new campaign(s)."
        )
        for role, username, password in demo_logins():
            self.stdout.write(f"  {role:<12} {username} / {password}")
