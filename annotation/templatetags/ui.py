"""Language marks for texts that are not the page's words: ``{{ text|text_lang }}``, the ``lang`` attribute of a text
whose language is not recorded, and ``{% shown en zh as t %}``, an instrument text in the language the page shows the
instrument in (the context's ``lang``), else the other language (``annotation.rating_language.shown``)."""

from django import template

from annotation import rating_language

register = template.Library()


@register.filter
def text_lang(text) -> str:
    """"zh" for a text written in Chinese (any Han character), "en" otherwise: the lang attribute of user-provided
    text (names, questions, answers) whose language is not stored."""
    return rating_language.text_language(str(text or ""))


@register.simple_tag(takes_context=True)
def shown(context, english, chinese) -> rating_language.Shown:
    return rating_language.shown(english, chinese, context.get("lang") or rating_language.of_page())
