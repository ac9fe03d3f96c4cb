from projects.roles import ROLE_LABELS, effective_roles, roles_in


def roles(request):
    """The user's roles in the request's project, the project, and the projects they may switch to."""
    user = getattr(request, "user", None)
    if getattr(request, "project", None) is None:
        # A page rendered without a view (a 404 for an unknown URL) or after a refused ?project=: its navigation
        # still shows the user's project.
        from django.http import Http404

        from projects.access import enter_once

        try:
            enter_once(request)
        except Http404:
            request._project_entered = True
    project = getattr(request, "project", None)
    held = roles_in(user, project)
    context = {"user_roles": effective_roles(user, project),
               "user_role_labels": [ROLE_LABELS[r] for r in ROLE_LABELS if r in held],
               "project": project}
    if getattr(user, "is_authenticated", False):
        from projects.access import projects_of
        from projects.language import account_language

        context["user_projects"] = projects_of(user)
        context["account_language"] = account_language(request)
    return context
