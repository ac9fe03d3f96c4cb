"""Pages of long lists on the site's pages (the campaign's dialogues, a corpus): Django's Paginator, with links that
keep the page's other query parameters (filters, sort, a drawn sample's seed) and a "showing X-Y of N" line."""

from __future__ import annotations

from dataclasses import dataclass, field

from django.core.paginator import Page, Paginator

from core.site.params import whole_number

PAGE_SIZE = 100


@dataclass
class Pager:
    """One page of a list and what its navigation (``annotation/partials/pager.html``) shows."""

    page: Page
    label: str  # what the rows are, for the navigation's aria-label ("dialogues")
    links: list[dict] = field(default_factory=list)  # {"number", "url", "current"} or {"gap": True}
    previous_url: str | None = None
    next_url: str | None = None

    @property
    def rows(self):
        return self.page.object_list

    @property
    def count(self) -> int:
        return self.page.paginator.count

    @property
    def first(self) -> int:
        return self.page.start_index()

    @property
    def last(self) -> int:
        return self.page.end_index()

    @property
    def several(self) -> bool:
        """More than one page: the navigation is shown."""
        return self.page.paginator.num_pages > 1


def paginate(request, rows, *, label: str, per_page: int = PAGE_SIZE, param: str = "page",
             keep: dict | None = None, count: int | None = None, anchor: str = "") -> Pager:
    """The page of ``rows`` (a queryset, ordered) that ``?page=`` asks for: page 1 when absent, the last page when
    past the end (a list that shrank keeps its reader on a page with rows); a page that is not a whole number is a
    400. ``keep`` sets query parameters on the links (overriding the request's; None drops one); ``count``, when
    known, saves the count query; ``anchor`` is the id of the list's heading, where the links land."""
    paginator = Paginator(rows, per_page)
    if count is not None:
        paginator.__dict__["count"] = count  # cached_property: the count the caller already has
    number = min(whole_number(request.GET, param, default=1, low=1), paginator.num_pages)
    page = paginator.page(number)
    params = request.GET.copy()
    for key, value in (keep or {}).items():
        if value is None:
            params.pop(key, None)
        else:
            params[key] = str(value)

    def url(n: int) -> str:
        params[param] = str(n)
        return "?" + params.urlencode() + (f"#{anchor}" if anchor else "")

    pager = Pager(page=page, label=label)
    if paginator.num_pages > 1:
        for n in paginator.get_elided_page_range(number, on_each_side=2, on_ends=1):
            if n == Paginator.ELLIPSIS:
                pager.links.append({"gap": True})
            else:
                pager.links.append({"number": n, "url": url(n), "current": n == number})
        pager.previous_url = url(number - 1) if page.has_previous() else None
        pager.next_url = url(number + 1) if page.has_next() else None
    return pager
