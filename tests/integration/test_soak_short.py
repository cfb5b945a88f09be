"""The embedded default stays up under load: the soak of bench/soak.py, short (D-K20, D-K24).

The whole service as `xworkmate run` starts it (SQLite, the file broker, a
fresh data home), with long tasks heartbeating, plans run now in a loop and
every run and progress message delivered to a real local webhook receiver.
It needs neither PostgreSQL nor Redis; it is here, beside the smoke test of
`make run`, because it runs real processes for a while.
"""

from __future__ import annotations

from bench._soak import soak

# Long enough for the beat's one-minute monitors to send long-run progress
# as well as the plan runs' messages; the full half hour is bench/soak.py's.
MINUTES = 1.5


def test_the_embedded_worker_survives_concurrent_heartbeats_runs_and_deliveries(tmp_path):
    result = soak(MINUTES, base=tmp_path)
    summary = result.table()
    assert result.errors == [], summary
    assert result.log_errors == [], summary  # no traceback, no JSONDecodeError (kombu#1551)
    assert result.worker_deaths == 0 and result.worker_restarts == 0, summary
    assert result.beat_restarts == 0, summary
    assert result.worker_pid_first is not None, summary
    assert result.worker_pid_first == result.worker_pid_last, summary
    # Load happened: runs went out and so did long-run progress from the beat's monitors.
    assert result.runs_requested > 0, summary
    assert result.messages_enqueued > result.runs_requested, summary
    # Nothing lost on the way: every message sent and received, every run recorded ok.
    assert result.messages_by_status == {"sent": result.messages_enqueued}, summary
    assert result.messages_delivered == result.messages_enqueued, summary
    assert result.runs_recorded == result.runs_requested, summary
