"""artifactRef signing and verification (§12, §18 E-91/92/101/103, D-A10)."""

from __future__ import annotations

import base64
import hashlib
import hmac
import json
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from artifacts.engine import (
    export_artifacts,
    sign_artifact_ref,
    verify_artifact_ref,
)
from tests.artifacts.engine_support import ids, make_workspace, prepare, settings_for, write
from xworkmate.lib.errors import InputError

GOLDEN_REF = (
    "eyJ2IjoyLCJ3b3Jrc3BhY2VSb290SGFzaCI6IjAyOTU2MjFmM2NmOTg4YTcwZWRkMmQ0NjgxMTJiZmFjMTQzMjg3"
    "NTI3NDAzNTFmMzFkMmM2NDM1ZTk3NWVlYTMiLCJzY29wZUtpbmQiOiJ0YXNrIiwic2Vzc2lvblNjb3BlIjoidGFz"
    "a3MvdGhyZWFkLW1haW4iLCJydW5TY29wZSI6InRhc2tzL3RocmVhZC1tYWluL3R1cm4tMSIsImFydGlmYWN0U2Nv"
    "cGUiOiJ0YXNrcy90aHJlYWQtbWFpbi90dXJuLTEiLCJyZWxhdGl2ZVBhdGgiOiJyZXBvcnRzL2ZpbmFsLm1kIiwi"
    "c2l6ZUJ5dGVzIjo3LCJzaGEyNTYiOiIxYzc1NmU0ZGI1Yjc4N2I2ZTY2MGM4MGNhZjIzZjdjMTBiNmI5NTQzZTUz"
    "YzM4ZTFlZmY0NzgzN2VhYWQxMzM4In0.XxmMfuZYJ-FDG60NjBu7NN1R6cHVCZQsDBX44_MWJXA"
)
GOLDEN_SHA = "1c756e4db5b787b6e660c80caf23f7c10b6b9543e53c38e1eff47837eaad1338"


def _golden(**overrides: object) -> str:
    values: dict[str, object] = {
        "secret": "test-secret",
        "workspace_root": "/srv/ws",
        "session_scope": "tasks/thread-main",
        "run_scope": "tasks/thread-main/turn-1",
        "artifact_scope": "tasks/thread-main/turn-1",
        "relative_path": "reports/final.md",
        "size_bytes": 7,
        "sha256": GOLDEN_SHA,
    }
    values.update(overrides)
    return sign_artifact_ref(**values)  # type: ignore[arg-type]


def test_case_103_golden_vector_signs_and_verifies() -> None:
    assert _golden() == GOLDEN_REF
    payload = verify_artifact_ref(GOLDEN_REF, secret="test-secret", workspace_root="/srv/ws")
    assert (payload.relative_path, payload.size_bytes, payload.sha256) == (
        "reports/final.md",
        7,
        GOLDEN_SHA,
    )
    assert payload.base == ""


def test_case_103_export_produces_the_golden_ref(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Export through the engine: same ref as the golden vector once the root hash matches."""
    import artifacts.engine.refs as refs

    workspace = make_workspace(tmp_path)
    monkeypatch.setattr(
        refs, "workspace_root_hash", lambda root: hashlib.sha256(b"/srv/ws").hexdigest()
    )
    config = settings_for(workspace)
    write(prepare(config, "thread-main", "turn-1") / "reports" / "final.md", "# Done\n")
    payload = export_artifacts(ids("thread-main", "turn-1"), config)
    artifact = payload["artifacts"][0]  # type: ignore[index]
    assert artifact["artifactRef"] == GOLDEN_REF
    assert artifact["content"] == "IyBEb25lCg=="


def test_case_91_any_appended_character_is_refused() -> None:
    with pytest.raises(InputError, match=r"^invalid artifactRef$"):
        verify_artifact_ref(GOLDEN_REF + "x", secret="test-secret", workspace_root="/srv/ws")


def test_case_92_rejects_legacy_v1_refs() -> None:
    body = (
        base64.urlsafe_b64encode(
            json.dumps(
                {
                    "v": 1,
                    "scopeKind": "task",
                    "artifactScope": "tasks/a/b",
                    "relativePath": "x",
                    "sizeBytes": 1,
                    "sha256": "a" * 64,
                },
                separators=(",", ":"),
            ).encode()
        )
        .rstrip(b"=")
        .decode()
    )
    mac = hmac.new(b"test-secret", body.encode(), hashlib.sha256).digest()
    ref = body + "." + base64.urlsafe_b64encode(mac).rstrip(b"=").decode()
    with pytest.raises(InputError, match=r"^invalid artifactRef$"):
        verify_artifact_ref(ref, secret="test-secret", workspace_root="/srv/ws")


@pytest.mark.parametrize(
    "bad",
    ["", ".", "a.", ".b", "a.b.c", "nodot", "é.é"],
)
def test_malformed_refs_are_invalid(bad: str) -> None:
    with pytest.raises(InputError, match=r"^invalid artifactRef$"):
        verify_artifact_ref(bad, secret="test-secret", workspace_root="/srv/ws")


def test_wrong_secret_and_wrong_workspace() -> None:
    with pytest.raises(InputError, match=r"^invalid artifactRef$"):
        verify_artifact_ref(GOLDEN_REF, secret="other", workspace_root="/srv/ws")
    with pytest.raises(InputError, match=r"^artifactRef does not match workspace$"):
        verify_artifact_ref(GOLDEN_REF, secret="test-secret", workspace_root="/srv/other")


def test_non_ascii_paths_sign_raw_utf8() -> None:
    ref = _golden(relative_path="报告/最终.md")
    body = ref.split(".")[0]
    decoded = base64.urlsafe_b64decode(body + "=" * (-len(body) % 4)).decode("utf-8")
    assert '"relativePath":"报告/最终.md"' in decoded
    payload = verify_artifact_ref(ref, secret="test-secret", workspace_root="/srv/ws")
    assert payload.relative_path == "报告/最终.md"


_SEGMENT = st.text(st.characters(blacklist_categories=["Cs"]), min_size=1, max_size=20)


@settings(max_examples=200, deadline=None)
@given(
    session=_SEGMENT,
    run=_SEGMENT,
    relative=st.lists(
        st.from_regex(r"[A-Za-z0-9_\-][A-Za-z0-9_.\- ]{0,10}", fullmatch=True),
        min_size=1,
        max_size=4,
    ),
    size=st.integers(min_value=0, max_value=2**53),
    digest=st.binary(min_size=32, max_size=32),
    secret=st.text(min_size=1, max_size=40),
    fallback=st.booleans(),
)
def test_sign_then_verify_round_trips(
    session: str,
    run: str,
    relative: list[str],
    size: int,
    digest: bytes,
    secret: str,
    fallback: bool,
) -> None:
    from artifacts.engine import artifact_scope_for, task_session_scope_for

    relative_path = "/".join(part.strip() or "x" for part in relative)
    relative_path = "/".join(p for p in relative_path.split("/") if p not in (".", ".."))
    if not relative_path or (fallback and relative_path.split("/")[0].lower() == "tasks"):
        return
    scope = artifact_scope_for(session, run)
    ref = sign_artifact_ref(
        secret=secret,
        workspace_root="/w",
        session_scope=task_session_scope_for(session),
        run_scope=scope,
        artifact_scope=scope,
        relative_path=relative_path,
        size_bytes=size,
        sha256=digest.hex(),
        base="workspace" if fallback else "",
    )
    payload = verify_artifact_ref(ref, secret=secret, workspace_root="/w")
    assert (payload.run_scope, payload.artifact_scope, payload.size_bytes, payload.sha256) == (
        scope,
        scope,
        size,
        digest.hex(),
    )
    assert payload.relative_path == relative_path
    assert payload.base == ("workspace" if fallback else "")


@settings(max_examples=300, deadline=None)
@given(
    position=st.integers(min_value=0, max_value=len(GOLDEN_REF) - 1), replacement=st.characters()
)
def test_any_single_character_change_is_refused(position: int, replacement: str) -> None:
    if GOLDEN_REF[position] == replacement:
        return
    tampered = GOLDEN_REF[:position] + replacement + GOLDEN_REF[position + 1 :]
    with pytest.raises(InputError):
        verify_artifact_ref(tampered, secret="test-secret", workspace_root="/srv/ws")


def test_every_single_byte_change_is_refused_exhaustively() -> None:
    """Including base64url's unused low bits of the last signature character."""
    alphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_."
    for position in range(len(GOLDEN_REF)):
        for replacement in alphabet:
            if replacement == GOLDEN_REF[position]:
                continue
            tampered = GOLDEN_REF[:position] + replacement + GOLDEN_REF[position + 1 :]
            with pytest.raises(InputError):
                verify_artifact_ref(tampered, secret="test-secret", workspace_root="/srv/ws")
