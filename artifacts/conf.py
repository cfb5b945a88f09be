"""The artifacts app's settings section: keys, defaults, checks and a typed reader (D-K16).

Adding a artifacts setting touches only this file: xworkmate.wiring hands the
section to the kernel's loader, which checks it with every other section.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import timedelta

from django.conf import settings

from xworkmate.config import Config, Key, Section
from xworkmate.config.keys import (
    check_bool,
    check_duration,
    check_nonempty_str,
    check_str,
    int_at_least,
)
from xworkmate.lib.openclaw import DEFAULT_MEDIA_DIR
from xworkmate.lib.paging import MAX_LISTED_FILES


@dataclass(frozen=True)
class ArtifactsConf:
    """[artifacts]: export and snapshot defaults, the signing secret, the shared media roots."""

    max_files: int
    max_inline_bytes: int
    snapshot_max_files: int
    ref_signing_secret: str
    scan_shared_media_roots: bool
    openclaw_media_dir: str
    openclaw_tmp_dir: str
    max_inline_total_bytes: int
    hash_budget: timedelta


SECTION: Section[ArtifactsConf] = Section(
    "artifacts",
    ArtifactsConf,
    {
        "max_files": Key(
            64, int_at_least(1, MAX_LISTED_FILES), doc="default maxFiles of export (D-K13)"
        ),
        "max_inline_bytes": Key(10485760, int_at_least(0), doc="default maxInlineBytes"),
        "snapshot_max_files": Key(
            64, int_at_least(1, MAX_LISTED_FILES), doc="default maxFiles of snapshots (D-K13)"
        ),
        "ref_signing_secret": Key(
            "",
            check_str,
            env="XWORKMATE_ARTIFACT_REF_SIGNING_SECRET",
            secret=True,
            doc="HMAC secret for artifactRef; generated once in the data home if empty",
        ),
        "scan_shared_media_roots": Key(
            False, check_bool, doc="collect-and-snapshot may scan the shared media roots (D-A2)"
        ),
        "openclaw_media_dir": Key(
            DEFAULT_MEDIA_DIR, check_nonempty_str, doc="shared media"
        ),
        "openclaw_tmp_dir": Key("", check_str, doc="empty = <system tmp>/openclaw"),
        "max_inline_total_bytes": Key(
            33554432, int_at_least(0), doc="inlined bytes per answer, all files together"
        ),
        "hash_budget": Key(
            timedelta(seconds=10),
            check_duration,
            doc="time one request may spend hashing files not hashed before",
        ),
    },
)


def artifacts_conf(config: Config | None = None) -> ArtifactsConf:
    """The section's values in ``config``, by default the running service's."""
    return SECTION.of(settings.XWORKMATE if config is None else config)
