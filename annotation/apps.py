from django.apps import AppConfig
from django.conf import settings
from django.db.models.signals import post_delete, post_save
from django.utils.translation import gettext_lazy as _

VIEW_INSTRUMENT = ["view_scale", "view_scaleversion", "view_dimension", "view_item"]
MANAGE_INSTRUMENT = [f"{verb}_{model}" for verb in ("add", "change") for model in
                     ("scale", "scaleversion", "dimension", "item")] + VIEW_INSTRUMENT
CORPUS = ["view_corpus", "view_dialogue"]


class AnnotationConfig(AppConfig):
    name = "annotation"
    verbose_name = _("Annotation: scales, corpora, campaigns and labels")
    default_auto_field = "django.db.models.BigAutoField"
    role_permissions = {
        "physician": VIEW_INSTRUMENT,
        "coordinator": MANAGE_INSTRUMENT + CORPUS + ["add_corpus", "change_corpus", "add_dialogue",
                                                     "change_dialogue"],
        "analyst": VIEW_INSTRUMENT + CORPUS,
    }

    def ready(self) -> None:
        from annotation.models import Item, ScaleVersion
        from core.jobs import services as jobs
        from core.site.auth import evict

        # the worker check reports what the database holds, instance-wide
        jobs.WORKER_CHECK_COUNTS["scale_versions"] = ScaleVersion.unscoped.count
        jobs.WORKER_CHECK_COUNTS["items"] = Item.unscoped.count

        # Every process (web, workers, manage.py changepassword) evicts the cached user it changes.
        post_save.connect(evict, sender=settings.AUTH_USER_MODEL, dispatch_uid="annotation.user_cache_save")
        post_delete.connect(evict, sender=settings.AUTH_USER_MODEL, dispatch_uid="annotation.user_cache_delete")
