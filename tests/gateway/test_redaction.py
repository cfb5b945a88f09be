"""Secrets never reach a stored error (issue 9 §8): what sanitize_error redacts, and what it keeps."""

from __future__ import annotations

import time

import pytest

from gateway.policies import sanitize_error
from tests.gateway.conftest import agent_end, tasks_get


@pytest.mark.parametrize(
    ("raw", "stored"),
    [
        # Kept from the contract (§14.2).
        ("quota: api_key=sk-live-123", "quota: api_key=<redacted>"),
        ("nvapi-XYZ_1 expired", "nvapi-<redacted> expired"),
        # Bearer credentials; a vendor key after "Bearer" keeps its prefix.
        ("401 for Authorization: Bearer eyJhbGciOi.abc-def_ghi== at /v1", "401 for Authorization: Bearer <redacted> at /v1"),
        ("Authorization: Bearer xwm_AbC-123_xyz", "Authorization: Bearer xwm_<redacted>"),
        ("bearer abc/def+ghi", "bearer <redacted>"),
        # This service's keys, GitHub and AWS keys.
        ("key xwm_Qm9vLWJhci1iYXo_-1234567890abcdefghij revoked", "key xwm_<redacted> revoked"),
        ("push failed with ghp_abcdefABCDEF0123456789xyz", "push failed with ghp_<redacted>"),
        ("clone: github_pat_11AAAAAA0_bbbbCCCCdddd denied", "clone: github_pat_<redacted> denied"),
        ("gho_abc123 and ghs_def456", "gho_<redacted> and ghs_<redacted>"),
        ("aws AKIAIOSFODNN7EXAMPLE: AccessDenied", "aws AKIA<redacted>: AccessDenied"),
        # key=value and key: value.
        ("login failed: password=hunter2 user=bob", "login failed: password=<redacted> user=bob"),
        ('login failed: password="two words" user=bob', "login failed: password=<redacted> user=bob"),
        ("GET /cb?access_token=abc123&state=1 failed", "GET /cb?access_token=<redacted>&state=1 failed"),
        ("token: abc.def", "token: <redacted>"),
        ("db: postgresql://xworkmate:s3cret@db:5432/x unreachable", "db: postgresql://xworkmate:<redacted>@db:5432/x unreachable"),
        # JSON (and Python repr) values.
        (
            '400 {"apiKey": "abc", "token":"t\\"q", "password": "p w", "name": "ok", "refreshToken": 12}',
            '400 {"apiKey": "<redacted>", "token":"<redacted>", "password": "<redacted>", "name": "ok", "refreshToken": <redacted>}',
        ),
        ("{'password': 'pw', 'n': 1}", "{'password': '<redacted>', 'n': 1}"),
    ],
)
def test_it_redacts_every_kind_of_secret_in_a_stored_error(raw, stored):
    assert sanitize_error(raw) == stored


def test_it_keeps_text_that_only_looks_like_a_secret_name():
    text = "max_tokens=4096 exceeded; 5 tokens left; password reset needed; see api_keys.md"
    assert sanitize_error(text) == text


def test_it_redacts_in_linear_time_on_hostile_input():
    started = time.perf_counter()
    for hostile in ("a" * 500_000, '"' + "a" * 500_000, "sk-" + "-" * 200_000, "Bearer " + "a" * 500_000 + "<"):
        assert len(sanitize_error(hostile)) <= 2048
    assert time.perf_counter() - started < 5


def test_it_stores_agent_end_errors_redacted(bridge, workspace):
    error = 'upstream 401: {"apiKey": "k-123"} with Authorization: Bearer abc.def and password=pw'
    agent_end(bridge, {"runId": "r1", "success": False, "error": error}, {"sessionKey": "k1"})
    payload = tasks_get(bridge, openclawSessionKey="k1", runId="r1", includeArtifacts=False)
    assert payload["error"] == (
        'upstream 401: {"apiKey": "<redacted>"} with Authorization: Bearer <redacted> and password=<redacted>'
    )
