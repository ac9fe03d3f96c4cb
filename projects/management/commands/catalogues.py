"""``manage.py catalogues``: extract the translatable strings into every language's catalogues and compile them.

``--check`` changes nothing and fails when an extraction would add or drop a string. Extraction needs GNU gettext
(``apt-get install gettext``); compiling needs only polib (a development dependency)."""

from __future__ import annotations

from django.core.management.base import BaseCommand, CommandError

from projects import catalogues


class Command(BaseCommand):
    help = "Update the translation catalogues (.po) from the sources and compile them (.mo)."

    def add_arguments(self, parser):
        parser.add_argument("-l", "--locale", action="append", default=[],
                            help="A language code (e.g. zh-hans, fr); may repeat. Default: every language but en.")
        parser.add_argument("--check", action="store_true", help="Change nothing; fail if a catalogue is stale.")
        parser.add_argument("--compile-only", action="store_true", help="Only compile the .po files into .mo.")

    def handle(self, *args, locale, check, compile_only, verbosity, **options):
        if not compile_only and not catalogues.has_gettext():
            raise CommandError("Extracting strings needs GNU gettext (xgettext, msgmerge): apt-get install gettext "
                               "(or brew install gettext). --compile-only needs only polib.")
        if check:
            problems = catalogues.out_of_date()
            for name, change in problems.items():
                for key in change["missing"]:
                    self.stdout.write(f"{name}: missing {key[1]!r}")
                for key in change["obsolete"]:
                    self.stdout.write(f"{name}: no longer used {key[1]!r}")
            if problems:
                raise CommandError("The catalogues are out of date: run manage.py catalogues.")
            self.stdout.write("The catalogues are up to date.")
            return
        if not compile_only:
            catalogues.extract(catalogues.root(), locale or None, verbosity=max(verbosity - 1, 0))
            catalogues.fix_headers()
        for path in catalogues.compile_all():
            self.stdout.write(f"compiled {path.relative_to(catalogues.root())}")
