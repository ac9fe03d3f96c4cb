"""``{% ui "key" name=value %}``: a phrase of ``annotation.ui_text`` in the page's language (the context's ``lang``);
``{% ui_script %}``: the script's phrases as a JSON block (``<script type="application/json" id="ui-text">``)."""

from django import template
from django.utils.html import json_script

from annotation import ui_text

register = template.Library()


@register.simple_tag(takes_context=True)
def ui(context, key: str, **values) -> str:
    return ui_text.phrase(key, context.get("lang"), **values)


@register.simple_tag(takes_context=True)
def ui_script(context):
    return json_script(ui_text.script_phrases(context.get("lang")), "ui-text")
