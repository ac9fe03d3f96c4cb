from django.core.management.base import BaseCommand

from annotation.demo import demo_logins, load_demo


class Command(BaseCommand):
    help = "Create the demo users (one per role) and the demo corpus. Safe to run again."

    def handle(self, *args, **options):
        counts = load_demo()
        self.stdout.write(
            f"Demo data ready: {counts['users_created']} new users, {counts['dialogues_created']} new dialogues, "
            f"{counts['campaigns_created']} new campaign(s)."
        )
        for role, username, password in demo_logins():
            self.stdout.write(f"  {role:<12} {username} / {password}")
