"""The bounds and choices several plans tables share."""

from __future__ import annotations

from django.utils.translation import gettext_lazy as _

from plans.runpolicy import (
    MISSED_RUN_ALL,
    MISSED_RUN_LATEST,
    MISSED_SKIP,
    OVERLAP_ALLOW,
    OVERLAP_BUFFER,
    OVERLAP_SKIP,
)

SHA256_LENGTH = 64

# What the scheduler does with fire times missed while it was down (D-C10, D-C23).
MISSED_POLICIES = (
    (MISSED_RUN_LATEST, _("run the newest missed fire time once")),
    (MISSED_SKIP, _("skip and record")),
    (MISSED_RUN_ALL, _("run each one within the maximum lateness, in order")),
)
# What a fire time that comes while the previous run is still out gets (D-C20, D-C24).
OVERLAP_POLICIES = (
    (OVERLAP_SKIP, _("skip and record")),
    (OVERLAP_BUFFER, _("buffer one, run it when the previous run ends")),
    (OVERLAP_ALLOW, _("allow a concurrent run")),
)
# UUIDs, ARCHIVE_IDs, job ids and turn ids: generous, bounded.
ID_MAX_LENGTH = 200
