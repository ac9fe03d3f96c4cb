"""Load the LLM-specific Mini-CEX v1 (4 dimensions, 26 secondary items) as a published scale."""

from types import SimpleNamespace

from django.db import migrations


def load(apps, schema_editor):
    from annotation.scales import load_instrument, read_instrument

    models = SimpleNamespace(**{name: apps.get_model("annotation", name)
                                for name in ("Scale", "ScaleVersion", "Dimension", "Item")})
    load_instrument(read_instrument(), models, publish=True)


def unload(apps, schema_editor):
    Scale = apps.get_model("annotation", "Scale")
    ScaleVersion = apps.get_model("annotation", "ScaleVersion")
    for version in ScaleVersion.objects.filter(scale__slug="llm-mini-cex"):
        version.items.filter(parent__isnull=False).delete()
        version.items.all().delete()
        version.dimensions.all().delete()
        version.delete()
    Scale.objects.filter(slug="llm-mini-cex").delete()


class Migration(migrations.Migration):
    dependencies = [("annotation", "0001_initial")]
    operations = [migrations.RunPython(load, unload)]
