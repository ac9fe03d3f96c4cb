from annotation.roles import ROLE_LABELS, effective_roles, roles_of


def roles(request):
    """The user's roles in the request's project, the project, and the projects they may switch to."""
    user = getattr(request, "user", None)
    held = roles_of(user)
    context = {"user_roles": effective_roles(user),
               "user_role_labels": [ROLE_LABELS[r] for r in ROLE_LABELS if r in held],
               "project": getattr(request, "project", None)}
    if getattr(user, "is_authenticated", False):
        from annotation.projects import projects_of

        context["user_projects"] = projects_of(user)
    return context
