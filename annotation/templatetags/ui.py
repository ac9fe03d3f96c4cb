"""``{% ui "key" name=value %}``: a phrase of ``annotation.ui_text`` in the page's language (the context's ``lang``);
``{% ui_script %}``: the script's phrases as a JSON block (``<script type="application/json" id="ui-text">``);
``{{ text|text_lang }}``: the ``lang`` attribute for a text whose language is not recorded."""

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


@register.filter
def text_lang(text) -> str:
    """"zh" for a text written in Chinese (any Han character), "en" otherwise: the lang attribute of user-provided
    text (names, questions, answers) whose language is not stored."""
    return ui_text.text_language(str(text or ""))
