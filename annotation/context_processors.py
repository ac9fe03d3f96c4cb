from annotation.roles import ROLE_LABELS, roles_of


def roles(request):
    held = roles_of(getattr(request, "user", None))
    return {"user_roles": held, "user_role_labels": [ROLE_LABELS[r] for r in ROLE_LABELS if r in held]}
