from django.apps import AppConfig
from django.conf import settings
from django.db.models.signals import post_delete, post_migrate, post_save, pre_save

VIEW_INSTRUMENT = ["view_scale", "view_scaleversion", "view_dimension", "view_item"]
MANAGE_INSTRUMENT = [f"{verb}_{model}" for verb in ("add", "change") for model in
                     ("scale", "scaleversion", "dimension", "item")] + VIEW_INSTRUMENT
CORPUS = ["view_corpus", "view_dialogue"]


class AnnotationConfig(AppConfig):
    name = "annotation"
    verbose_name = "Annotation: scales, corpora, campaigns and labels"
    default_auto_field = "django.db.models.BigAutoField"
    role_permissions = {
        "physician": VIEW_INSTRUMENT,
        "coordinator": MANAGE_INSTRUMENT + CORPUS + ["add_corpus", "change_corpus", "add_dialogue",
                                                     "change_dialogue", "view_auditevent"],
        "analyst": VIEW_INSTRUMENT + CORPUS + ["view_auditevent"],
    }

    def ready(self) -> None:
        post_migrate.connect(_sync_roles, dispatch_uid="annotation.sync_roles")
        from annotation.auth import evict

        # Every process (web, workers, manage.py changepassword) evicts the cached user it changes.
        post_save.connect(evict, sender=settings.AUTH_USER_MODEL, dispatch_uid="annotation.user_cache_save")
        post_delete.connect(evict, sender=settings.AUTH_USER_MODEL, dispatch_uid="annotation.user_cache_delete")
        from annotation.tokens import remember_password, rotate_on_password_change

        # A password change (any way: the page, the admin, manage.py changepassword) replaces the API token.
        pre_save.connect(remember_password, sender=settings.AUTH_USER_MODEL, dispatch_uid="annotation.token_pw")
        post_save.connect(rotate_on_password_change, sender=settings.AUTH_USER_MODEL,
                          dispatch_uid="annotation.token_rotate")


def _sync_roles(sender, app_config=None, verbosity=1, **kwargs) -> None:
    # post_migrate fires once per app; roles need every app's permissions, so run after the last one.
    from django.apps import apps

    if app_config is not list(apps.get_app_configs())[-1]:
        return
    from annotation.roles import sync_roles

    sync_roles(verbosity=0)
