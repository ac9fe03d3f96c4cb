"""A project's monthly LLM budget, beside each job's own caps: on a shared instance no team spends the whole key.

The engine counts every request against the project's month before it is sent (in the transaction that charges
the job, :func:`scoring.llm.engine.charge`) and adds every paid answer's cost and tokens after it is stored
(:func:`scoring.llm.engine.record_spend`), per endpoint, in :class:`~scoring.llm.models.MonthlySpend`. When a
project has a :class:`~scoring.llm.models.ProjectBudget`, a batch of requests that would cross it is cut to what
fits (requests; cost by an upper estimate of each request's price) and the job pauses with a message naming the
budget. Months are calendar months in UTC.
"""

from __future__ import annotations

import datetime as dt
from collections import defaultdict
from collections.abc import Iterable
from decimal import Decimal
from typing import Any

from django.db import connection
from django.db.models import F, Sum
from django.utils import timezone

from scoring.llm.models import MonthlySpend, ProjectBudget

# Output tokens assumed for a request that sets no max_tokens, when estimating what it may cost.
DEFAULT_OUTPUT_TOKENS = 1024


def month_of(now: dt.datetime | None = None) -> dt.date:
    now = now or timezone.now()
    return now.astimezone(dt.UTC).date().replace(day=1)


def _add(project_id: int, endpoint: str, currency: str, *, requests: int = 0, answers: int = 0,
         cost: Decimal = Decimal(0), tokens: int = 0) -> None:
    """Add to a project's counters of this month and endpoint (one upsert)."""
    meta = MonthlySpend._meta
    quote = connection.ops.quote_name
    table = quote(meta.db_table)
    cost_field = meta.get_field("cost")
    sums = ", ".join(f"{quote(c)} = {table}.{quote(c)} + excluded.{quote(c)}"
                     for c in ("requests", "answers", "cost", "tokens"))
    with connection.cursor() as cursor:
        cursor.execute(
            f"INSERT INTO {table} (project_id, month, endpoint, currency, requests, answers, cost, tokens) "
            f"VALUES (%s, %s, %s, %s, %s, %s, %s, %s) ON CONFLICT (project_id, month, endpoint, currency) "
            f"DO UPDATE SET {sums}",
            [project_id, month_of(), endpoint[:300], currency, requests, answers,
             cost_field.get_db_prep_save(cost, connection), tokens])


def estimate(request: Any) -> Decimal:
    """An upper estimate of what a request may cost: its prompt at three characters a token, its answer at
    ``max_tokens`` (or :data:`DEFAULT_OUTPUT_TOKENS`)."""
    payload = request.payload
    prompt = sum(len(str(m.get("content") or "")) for m in payload.get("messages", [])) / 3
    output = payload.get("max_tokens") or payload.get("max_completion_tokens") or DEFAULT_OUTPUT_TOKENS
    price_in, price_out = request.prices
    return (Decimal(prompt) * Decimal(price_in) + Decimal(output) * Decimal(price_out)) / 1000


def _month_name(month: dt.date) -> str:
    return month.strftime("%B %Y")


def charge(project_id: int, requests: list, currency: str) -> tuple[int, str]:
    """Count requests against the project's month before they are sent; returns how many of them may go (the
    first ones) and, when fewer than all, why (the message the job pauses with). Call inside the transaction
    that charges the job: the project's budget row is locked for it, so two jobs of one project never both take
    its last requests."""
    if not requests:
        return 0, ""
    granted, reason = len(requests), ""
    # An UPDATE that changes nothing takes the row's lock (PostgreSQL) and the database's write lock (SQLite).
    if ProjectBudget.unscoped.filter(project_id=project_id).update(currency=F("currency")):
        budget = ProjectBudget.unscoped.get(project_id=project_id)
        month = month_of()
        spent = MonthlySpend.unscoped.filter(project_id=project_id, month=month).aggregate(
            requests=Sum("requests"))["requests"] or 0
        cost = MonthlySpend.unscoped.filter(project_id=project_id, month=month, currency=budget.currency).aggregate(
            cost=Sum("cost"))["cost"] or Decimal(0)
        if budget.month_requests is not None and spent + granted > budget.month_requests:
            granted = max(0, budget.month_requests - spent)
            reason = (f"The project's monthly LLM budget of {budget.month_requests:,} requests is reached "
                      f"({spent + granted:,} sent in {_month_name(month)}).")
        if budget.month_cost is not None and currency == budget.currency:
            room, fits = budget.month_cost - cost, 0
            for request in requests[:granted]:
                room -= estimate(request)
                if room < 0:
                    break
                fits += 1
            if fits < granted:
                granted = fits
                reason = (f"The project's monthly LLM budget of {budget.month_cost:.2f} {budget.currency} is "
                          f"reached ({cost:.2f} {budget.currency} spent in {_month_name(month)}; the next requests "
                          "could cost more than is left).")
        if reason:
            reason += " Nothing more is sent this month unless an administrator raises the budget; then resume."
    for endpoint, n in _per_endpoint(requests[:granted]).items():
        _add(project_id, endpoint, currency, requests=n)
    return granted, reason


def give_back(project_id: int, endpoint: str, currency: str, n: int) -> None:
    """Requests counted but released unsent."""
    if n > 0:
        MonthlySpend.unscoped.filter(project_id=project_id, month=month_of(), endpoint=endpoint[:300],
                                     currency=currency, requests__gte=n).update(requests=F("requests") - n)


def record(project_id: int, requests: list, currency: str, cost_of) -> None:
    """Add paid answers (their cost by ``cost_of(request)``, and tokens) to the project's month, per endpoint."""
    by_endpoint: dict[str, list] = defaultdict(list)
    for r in requests:
        by_endpoint[_endpoint_of(r)].append(r)
    for endpoint, group in by_endpoint.items():
        _add(project_id, endpoint, currency, answers=len(group), cost=sum((cost_of(r) for r in group), Decimal(0)),
             tokens=sum(r.outcome.prompt_tokens + r.outcome.completion_tokens for r in group))


def _per_endpoint(requests: Iterable) -> dict[str, int]:
    counts: dict[str, int] = defaultdict(int)
    for r in requests:
        counts[_endpoint_of(r)] += 1
    return counts


def _endpoint_of(request: Any) -> str:
    return getattr(request.endpoint, "base_url", "") or ""


def summary(project_id: int, months: int = 3) -> dict[str, Any]:
    """The project's budget and what it sent and spent this month per endpoint (and the months before), for pages
    and the API: stored counters, a handful of rows."""
    month = month_of()
    budget = ProjectBudget.unscoped.filter(project_id=project_id).first()
    rows = list(MonthlySpend.unscoped.filter(project_id=project_id).order_by("-month", "endpoint")
                .values("month", "endpoint", "currency", "requests", "answers", "cost", "tokens")[:200])
    by_month: dict[dt.date, list[dict]] = defaultdict(list)
    for row in rows:
        by_month[row["month"]].append(row)
    current = by_month.get(month, [])
    requests = sum(r["requests"] for r in current)
    cost = sum((r["cost"] for r in current if budget is None or r["currency"] == budget.currency), Decimal(0))
    return {
        "month": month, "month_name": _month_name(month), "budget": budget, "rows": current,
        "requests": requests, "cost": cost,
        "requests_share": (None if budget is None or not budget.month_requests
                           else min(100, round(100 * requests / budget.month_requests))),
        "cost_share": (None if budget is None or not budget.month_cost
                       else min(100, round(100 * float(cost / budget.month_cost)))),
        "earlier": [{"month": m, "month_name": _month_name(m), "rows": by_month[m]}
                    for m in sorted(by_month, reverse=True) if m != month][:months],
    }
