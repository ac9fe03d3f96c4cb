"""Scores as people write them: 4, 4.5 (never 4.0)."""

from django import template

from annotation import scores

register = template.Library()


@register.filter
def score(value):
    """A label's value as text ("" for none)."""
    try:
        return scores.text(value)
    except (TypeError, ValueError):
        return ""
