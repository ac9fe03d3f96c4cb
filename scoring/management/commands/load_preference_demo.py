from django.core.management.base import BaseCommand

from scoring.preference.demo import load_preference_demo


class Command(BaseCommand):
    help = "Create the demo preference study (run load_demo first for the demo users)."

    def handle(self, *args, **options):
        result = load_preference_demo()
        if result["created"]:
            self.stdout.write(f"Demo preference study #{result['study']} created and opened: "
                              f"{result['tasks']} comparison(s) assigned.")
        else:
            self.stdout.write(f"Demo preference study #{result['study']} already exists.")
