"""The app's stylesheets (static/css): what the accessibility tests rely on them for."""

from __future__ import annotations

import re

from django.conf import settings

# a declaration that changes the colour of text or of what lies behind it, or how they show (axe's contrast rule
# weighs text against its background; borders and outlines are not text)
COLOUR = re.compile(r"(?:^|[;{\s])(?:color|background(?:-color|-image)?|opacity|filter|backdrop-filter|"
                    r"mix-blend-mode|text-shadow|-webkit-text-fill-color)\s*:", re.I)


def media_blocks(css: str) -> list[tuple[str, str]]:
    """Each ``@media`` rule of a stylesheet: its condition and its body."""
    css = re.sub(r"/\*.*?\*/", "", css, flags=re.S)
    blocks = []
    for match in re.finditer(r"@media([^{]*)\{", css):
        depth, end = 1, match.end()
        while depth:
            depth += {"{": 1, "}": -1}.get(css[end], 0)
            end += 1
        blocks.append((match.group(1).strip(), css[match.end():end - 1]))
    return blocks


def test_no_media_query_changes_a_colour_so_contrast_is_checked_at_one_width():
    """The phone crawls of tests/test_browser_accessibility.py leave axe's colour contrast rule out: that holds only
    while no width (or pointer) gives text or its background another colour. The test of the test: a rule that does
    is found, one that changes only borders or the layout is not."""
    assert COLOUR.search(media_blocks("@media (max-width: 600px) { .a { padding:0; } .b { color:#777; } }")[0][1])
    assert not COLOUR.search(media_blocks("@media (max-width: 600px) { .a { display:block; border-color:red } }")[0][1])
    found = []
    for sheet in sorted((settings.BASE_DIR / "static" / "css").glob("*.css")):
        if sheet.name == "swagger.css":  # the API explorer's, not a page of the app (not crawled)
            continue
        for condition, body in media_blocks(sheet.read_text()):
            found += [f"{sheet.name} @media {condition}: {hit.group(0)}" for hit in COLOUR.finditer(body)]
    assert not found, "check colour contrast at the phone's width too (contrast=True), or move the colours out:\n" + \
        "\n".join(found)
