"""People's pages for plans: the list with its display statuses, and the review page.

Every model page is read-only: a plan changes only through the review page's
actions, each a POST that calls one service (confirm, request changes, pause,
resume, run now, cancel) and reports the service's answer, its refusal text
included. The entry's change page *is* the review page: what a person
confirms is the PLAN.md revision shown there, by its number (D-C5), so a page
left open while the agent wrote a newer revision cannot confirm that one (D-C3).

One module per page: entry (the list and the review page), plan, run; the
review page's actions and what it shows are review_actions and review_page.
Importing this package registers the pages.
"""

from __future__ import annotations

from plans.admin.entry import REVIEW_PERMISSION, EntryAdmin
from plans.admin.plan import PlanAdmin
from plans.admin.review_page import FIRE_TIMES_SHOWN, RUNS_SHOWN
from plans.admin.run import RunAdmin

__all__ = [
    "FIRE_TIMES_SHOWN",
    "REVIEW_PERMISSION",
    "RUNS_SHOWN",
    "EntryAdmin",
    "PlanAdmin",
    "RunAdmin",
]
