from annotation.roles import ROLE_LABELS, effective_roles, roles_of


def roles(request):
    user = getattr(request, "user", None)
    held = roles_of(user)
    return {"user_roles": effective_roles(user), "user_role_labels": [ROLE_LABELS[r] for r in ROLE_LABELS if r in held]}
