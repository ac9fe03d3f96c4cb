"""Projects and their members from the command line:

    manage.py project create NAME [--description TEXT]
    manage.py project add NAME USERNAME ROLE        (ROLE: physician, coordinator or analyst)
    manage.py project remove NAME USERNAME [ROLE]   (without ROLE: every role the user holds in the project)
    manage.py project list [NAME]                   (projects, or one project's members)
"""

from __future__ import annotations

from django.contrib.auth import get_user_model
from django.core.management.base import BaseCommand, CommandError

from projects import services as projects
from projects.models import Project
from projects.roles import PROJECT_ROLES


class Command(BaseCommand):
    help = "Create projects and add or remove their members (a role per project)."

    def add_arguments(self, parser):
        sub = parser.add_subparsers(dest="action", required=True)
        create = sub.add_parser("create", help="Create a project.")
        create.add_argument("name")
        create.add_argument("--description", default="")
        add = sub.add_parser("add", help="Give a user a role in a project.")
        add.add_argument("name")
        add.add_argument("username")
        add.add_argument("role", help=f"one of {', '.join(PROJECT_ROLES)}")
        remove = sub.add_parser("remove", help="Take a user's roles (or one role) in a project away.")
        remove.add_argument("name")
        remove.add_argument("username")
        remove.add_argument("role", nargs="?", default=None)
        listing = sub.add_parser("list", help="List the projects, or one project's members.")
        listing.add_argument("name", nargs="?", default=None)

    def handle(self, *args, **options):
        action = options["action"]
        try:
            if action == "create":
                project = projects.create_project(options["name"], description=options["description"])
                self.stdout.write(f"Created project {project.name}.")
            elif action == "add":
                project, user = self._project(options["name"]), self._user(options["username"])
                added = projects.add_member(project, user, options["role"])
                self.stdout.write(f"{user.get_username()} is {options['role']} in {project.name}"
                                  + ("." if added else " (already)."))
            elif action == "remove":
                project, user = self._project(options["name"]), self._user(options["username"])
                removed = projects.remove_member(project, user, options["role"])
                if not removed:
                    raise CommandError(f"{user.get_username()} holds no such role in {project.name}.")
                self.stdout.write(f"Removed {removed} role(s) of {user.get_username()} in {project.name}; "
                                  "their labels and other work stay.")
            else:
                self._list(options["name"])
        except projects.ProjectError as exc:
            raise CommandError(str(exc)) from None

    def _project(self, name: str) -> Project:
        return projects.for_command(name)

    def _user(self, username: str):
        user = get_user_model().objects.filter(username=username).first()
        if user is None:
            raise CommandError(f"No user {username!r}; create the account in the admin (Users) first.")
        return user

    def _list(self, name: str | None) -> None:
        if name is None:
            for project in Project.objects.order_by("name"):
                count = project.memberships.values("user").distinct().count()
                self.stdout.write(f"{project.name}\t{count} member(s)" + ("\tdemo" if project.is_demo else ""))
            return
        for row in projects.members(self._project(name)):
            self.stdout.write(f"{row['user'].get_username()}\t{', '.join(row['roles'])}")
