"""The bounds and choices several plans tables share."""

from __future__ import annotations

from django.utils.translation import gettext_lazy as _

SHA256_LENGTH = 64

# What the scheduler does with fire times missed while it was down (D-C10).
MISSED_RUN_LATEST = "run-latest"
MISSED_SKIP = "skip"
MISSED_POLICIES = (
    (MISSED_RUN_LATEST, _("run the newest missed fire time once")),
    (MISSED_SKIP, _("skip and record")),
)
# UUIDs, ARCHIVE_IDs, job ids and turn ids: generous, bounded.
ID_MAX_LENGTH = 200
