"""``{{ text|delphi_warning }}``: a warning stored with a round's statistics, in the page's language."""

from django import template

from delphi import consensus

register = template.Library()


@register.filter
def delphi_warning(text) -> str:
    return consensus.warning_words(str(text or ""))
