"""The task-run admin pages (issue 9 §10): the history note, artifacts in any configured root."""

from __future__ import annotations

import html
import os
import re
from datetime import timedelta

import pytest
from django.contrib.auth.models import User
from django.utils import timezone

from gateway.models import SessionEntry, TaskRun
from tests.conftest import configure
from tests.gateway.conftest import prepare


@pytest.fixture
def staff(client, db):
    user = User.objects.create_superuser("alice", "", "pw-alice-123")
    client.force_login(user)
    return user


def _run(session: SessionEntry, run_id: str, *, evicted: bool) -> TaskRun:
    now = timezone.now()
    return TaskRun.objects.create(
        session=session, run_id=run_id, status="running", started_at=now, updated_at=now,
        evicted_at=now - timedelta(minutes=1) if evicted else None,
    )


def test_the_history_note_shows_only_on_runs_in_the_history(client, staff):
    session = SessionEntry.objects.create(session_key="k1", session_id="s1")
    visible = _run(session, "r1", evicted=False)
    old = _run(session, "r0", evicted=True)
    note = "No longer among the session's newest runs"
    shown = (note, html.escape(note))
    visible_page = client.get(f"/admin/gateway/taskrun/{visible.pk}/change/").content.decode()
    assert not any(text in visible_page for text in shown)
    assert html.escape("Not in the history: among the session's newest runs") in visible_page
    assert html.escape(note) in client.get(f"/admin/gateway/taskrun/{old.pk}/change/").content.decode()
    # The session's inline lists runs without the note as a column heading.
    session_page = client.get(f"/admin/gateway/sessionentry/{session.pk}/change/").content.decode()
    assert not any(text in session_page for text in shown)


def test_the_task_run_page_finds_artifacts_in_any_configured_root(client, staff, bridge, settings, tmp_path):
    first, second = (tmp_path / "first", tmp_path / "second")
    first.mkdir()
    second.mkdir()
    configure(settings, "workspace", roots=(os.path.realpath(first), os.path.realpath(second)))
    payload = prepare(bridge, appThreadKey="t1", openclawSessionKey="k1", runId="r1",
                      workspaceDir=os.path.realpath(second))
    (second / payload["relativeArtifactDirectory"] / "report.md").write_text("# r\n")
    run = TaskRun.objects.get()
    detail = client.get(f"/admin/gateway/taskrun/{run.pk}/change/").content.decode()
    assert "report.md" in detail and "No artifacts found" not in detail
    link = re.search(r'href="(/api/artifacts/download\?[^"]+)"', detail).group(1)
    download = client.get(html.unescape(link))
    assert download.status_code == 200 and b"".join(download.streaming_content) == b"# r\n"
