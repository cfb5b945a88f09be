"""The artifacts app's services: the engine's settings, taken from the service config.

The signing secret follows D-A10: `artifacts.ref_signing_secret` from the
file, else XWORKMATE_ARTIFACT_REF_SIGNING_SECRET (both resolved by the config
loader), else the secret generated once into the data home.
"""

from __future__ import annotations

from django.conf import settings

from artifacts.conf import artifacts_conf
from artifacts.engine import ArtifactSettings
from xworkmate.datahome import stored_secret
from xworkmate.lib.openclaw import default_tmp_dir

SECRET_NAME = "artifact_ref_secret"  # noqa: S105 (a file name)


def artifact_settings() -> ArtifactSettings:
    config = settings.XWORKMATE
    section = artifacts_conf(config)
    secret = section.ref_signing_secret or stored_secret(settings.HOME, SECRET_NAME)
    return ArtifactSettings(
        signing_secret=secret,
        workspace_roots=config.workspace_roots,
        max_files=section.max_files,
        max_inline_bytes=section.max_inline_bytes,
        snapshot_max_files=section.snapshot_max_files,
        scan_shared_media_roots=section.scan_shared_media_roots,
        openclaw_media_dir=section.openclaw_media_dir,
        openclaw_tmp_dir=section.openclaw_tmp_dir or default_tmp_dir(),
        max_inline_total_bytes=section.max_inline_total_bytes,
        hash_budget_seconds=section.hash_budget.total_seconds(),
    )
