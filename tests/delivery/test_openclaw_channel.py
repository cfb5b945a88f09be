"""The OpenClaw channel against a stand-in `openclaw` executable written by each test.

The stand-in records its argv (and what it read on stdin) as one JSON line in
``calls.jsonl`` beside it, writes its pid to ``pid``, and answers as the file
``mode`` beside it says.
"""

from __future__ import annotations

import json
import os
import stat
import sys
import time
from datetime import UTC, datetime
from pathlib import Path

import pytest

from xworkmate.delivery.channels.base import DETAIL_LIMIT, Channel, Envelope, Outcome
from xworkmate.delivery.channels.openclaw import STDOUT_LIMIT, OpenClawChannel, is_uuid

SID = "0f8b7c1e-2d3a-4b5c-9d6e-7f8091a2b3c4"
KEY = "agent:main:telegram:dm:12345"

STAND_IN = r"""#!{python}
import json, os, signal, subprocess, sys, time
from pathlib import Path

here = Path(__file__).resolve().parent
stdin = sys.stdin.read()
with open(here / "calls.jsonl", "a", encoding="utf-8") as f:
    f.write(json.dumps({{"argv": sys.argv[1:], "stdin": stdin}}) + "\n")
(here / "pid").write_text(str(os.getpid()))
mode = (here / "mode").read_text().strip() if (here / "mode").exists() else "ok"

if mode == "ok":
    print(json.dumps({{"runId": "r1", "status": "ok", "reply": "好的"}}))
elif mode == "accepted":
    print(json.dumps({{"runId": "r1", "status": "accepted"}}))
elif mode == "no-status":
    print(json.dumps({{"runId": "r1", "result": {{"text": "done"}}}}))
elif mode == "not-an-object":
    print("[1, 2, 3]")
elif mode == "timeout":
    print(json.dumps({{"runId": "r1", "status": "timeout", "error": "no reply within 30s"}}))
elif mode == "error":
    print(json.dumps({{"status": "error", "error": "x"}}))
elif mode == "queued":
    print(json.dumps({{"status": "queued"}}))
elif mode == "garbage":
    print("Sending… done (not json)")
elif mode == "empty":
    pass
elif mode == "exit":
    sys.stderr.write("HEAD-OF-STDERR " + "." * 2000 + " session not found: agent:main:x\n")
    sys.exit(3)
elif mode == "signal":
    sys.stdout.flush()
    os.kill(os.getpid(), signal.SIGTERM)
elif mode == "huge":
    sys.stdout.write('{{"status": "ok", "pad": "' + "a" * {huge} + '"}}')
elif mode == "hang":
    time.sleep(60)
elif mode == "hang-with-child":
    child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    (here / "child-pid").write_text(str(child.pid))
    time.sleep(60)
"""


class StandIn:
    def __init__(self, directory: Path) -> None:
        self.dir = directory
        self.binary = directory / "openclaw"
        self.binary.write_text(STAND_IN.format(python=sys.executable, huge=STDOUT_LIMIT + 10))
        self.binary.chmod(self.binary.stat().st_mode | stat.S_IXUSR)
        self.index = directory / "sessions.json"

    def answer(self, mode: str) -> None:
        (self.dir / "mode").write_text(mode)

    def calls(self) -> list[list[str]]:
        path = self.dir / "calls.jsonl"
        if not path.exists():
            return []
        return [json.loads(line)["argv"] for line in path.read_text("utf-8").splitlines()]

    def stdin_reads(self) -> list[str]:
        path = self.dir / "calls.jsonl"
        return [json.loads(line)["stdin"] for line in path.read_text("utf-8").splitlines()]

    def pid(self, name: str = "pid") -> int:
        return int((self.dir / name).read_text())

    def write_index(self, data: object) -> None:
        self.index.write_text(json.dumps(data), "utf-8")

    def channel(self, timeout: float = 10.0) -> OpenClawChannel:
        return OpenClawChannel(
            name="oc", binary=str(self.binary), sessions_index=str(self.index), timeout=timeout
        )


@pytest.fixture
def fake(tmp_path: Path) -> StandIn:
    return StandIn(tmp_path)


def envelope(purpose: str = "longrun.progress", target: str = KEY, body: str = "进度") -> Envelope:
    return Envelope(
        message_id=1,
        purpose=purpose,
        target=target,
        body=body,
        body_hash="0" * 64,
        idempotency_key="k1",
        attempt=1,
        created_at=datetime(2025, 1, 1, tzinfo=UTC),
    )


def alive(pid: int) -> bool:
    """Whether pid is a live process (a zombie waiting to be reaped is not)."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    try:
        stat_line = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return False
    return stat_line.rsplit(")", 1)[1].split()[0] not in ("Z", "X")


def wait_dead(pid: int) -> bool:
    """Poll (SIGKILL is delivered asynchronously) until pid is gone; False if it never is."""
    for _ in range(200):
        if not alive(pid):
            return True
        time.sleep(0.025)
    return False


# -- the interface ----------------------------------------------------------


def test_it_is_an_openclaw_channel_that_does_not_deduplicate(fake: StandIn) -> None:
    channel: Channel = fake.channel()
    assert channel.name == "oc"
    assert channel.kind == "openclaw"
    assert channel.deduplicates is False
    assert OpenClawChannel(name="d").binary == "openclaw"
    assert (
        OpenClawChannel(name="d").sessions_index == "~/.openclaw/agents/main/sessions/sessions.json"
    )
    assert OpenClawChannel(name="d").timeout == 10.0


@pytest.mark.parametrize("timeout", [0, -1.0])
def test_it_refuses_a_timeout_that_is_not_positive(timeout: float) -> None:
    with pytest.raises(ValueError, match="timeout"):
        OpenClawChannel(name="oc", timeout=timeout)


# -- argv -------------------------------------------------------------------


@pytest.mark.parametrize("purpose", ["plans.run", "longrun.progress", "longrun.recovery"])
def test_it_uses_sessions_send_with_exactly_this_argv(fake: StandIn, purpose: str) -> None:
    result = fake.channel().send(envelope(purpose=purpose, body="hello"))
    assert result.outcome is Outcome.SENT
    assert fake.calls() == [
        ["sessions", "send", "--session-key", KEY, "--message", "hello", "--json"]
    ]


def test_it_resumes_with_the_session_id_from_the_sessions_index(fake: StandIn) -> None:
    fake.write_index({KEY: {"sessionId": "s-123", "updatedAt": 1}, "other": {"sessionId": "no"}})
    result = fake.channel().send(envelope(purpose="longrun.resume", body="保活续跑：t"))
    assert result.outcome is Outcome.SENT
    assert "s-123" in result.detail
    assert fake.calls() == [
        ["agent", "--session-id", "s-123", "--message", "保活续跑：t", "--json"]
    ]


def test_it_prefers_the_index_entry_over_a_uuid_target(fake: StandIn) -> None:
    fake.write_index({SID: {"sessionId": "from-index"}})
    fake.channel().send(envelope(purpose="longrun.resume", target=SID))
    assert fake.calls()[0][:3] == ["agent", "--session-id", "from-index"]


def test_it_reads_the_sessions_index_again_on_every_resume(fake: StandIn) -> None:
    channel = fake.channel()
    fake.write_index({KEY: {"sessionId": "first"}})
    channel.send(envelope(purpose="longrun.resume"))
    fake.write_index({KEY: {"sessionId": "second"}})
    channel.send(envelope(purpose="longrun.resume"))
    fake.index.unlink()
    result = channel.send(envelope(purpose="longrun.resume"))
    assert [call[2] for call in fake.calls()] == ["first", "second"]
    assert result.outcome is Outcome.FAILED


@pytest.mark.parametrize(
    "index",
    [
        None,  # no file
        "{not json",
        "[]",
        {"other": {"sessionId": "x"}},
        {SID: {"updatedAt": 1}},
        {SID: {"sessionId": ""}},
        {SID: "not an object"},
    ],
)
def test_it_resumes_a_uuid_target_without_an_index_entry(fake: StandIn, index: object) -> None:
    if isinstance(index, str):
        fake.index.write_text(index)
    elif index is not None:
        fake.write_index(index)
    result = fake.channel().send(envelope(purpose="longrun.resume", target=SID, body="go"))
    assert result.outcome is Outcome.SENT
    assert fake.calls() == [["agent", "--session-id", SID, "--message", "go", "--json"]]


def test_it_resumes_a_uuid_target_when_the_index_path_is_a_directory_or_empty(
    fake: StandIn,
) -> None:
    for index in (str(fake.dir), ""):
        channel = OpenClawChannel(name="oc", binary=str(fake.binary), sessions_index=index)
        assert channel.send(envelope(purpose="longrun.resume", target=SID)).outcome is Outcome.SENT
    assert [call[2] for call in fake.calls()] == [SID, SID]


@pytest.mark.parametrize(
    "target",
    [
        KEY,
        "main",
        # The original took any key of 32+ characters containing '-' as a session id.
        "agent:main:telegram:group:-1001234567890-abcdefghij",
        "0f8b7c1e2d3a4b5c9d6e7f8091a2b3c4",
        "{0f8b7c1e-2d3a-4b5c-9d6e-7f8091a2b3c4}",
        "urn:uuid:0f8b7c1e-2d3a-4b5c-9d6e-7f8091a2b3c4",
        "0f8b7c1e-2d3a-4b5c-9d6e-7f8091a2b3c4 ",
        "0f8b7c1e-2d3a-4b5c-9d6e-7f8091a2b3c4\n",
        "0f8b7c1e-2d3a-4b5c-9d6e-7f8091a2b3cg",
    ],
)
def test_it_fails_a_resume_without_a_session_id_and_runs_nothing(
    fake: StandIn, target: str
) -> None:
    fake.write_index({"someone-else": {"sessionId": SID}})
    result = fake.channel().send(envelope(purpose="longrun.resume", target=target))
    assert result.outcome is Outcome.FAILED
    assert result.detail == f"missing session id for {target}"[:DETAIL_LIMIT]
    assert fake.calls() == []


def test_it_checks_uuids_strictly() -> None:
    assert is_uuid(SID)
    assert is_uuid(SID.upper())
    assert not is_uuid(SID.replace("-", ""))
    assert not is_uuid("x" * 8 + "-" + "y" * 30)


def test_it_fails_an_empty_target_and_runs_nothing(fake: StandIn) -> None:
    result = fake.channel().send(envelope(target="  "))
    assert result.outcome is Outcome.FAILED
    assert fake.calls() == []


@pytest.mark.parametrize("purpose", ["longrun.progress", "longrun.resume"])
def test_it_passes_a_message_with_shell_metacharacters_as_one_argument(
    fake: StandIn, purpose: str
) -> None:
    body = "-rf $(rm -rf /) `id` ; echo 'single' \"double\" | cat > /tmp/x & *\n第二行 \\n $HOME\n"
    result = fake.channel().send(envelope(purpose=purpose, target=SID, body=body))
    assert result.outcome is Outcome.SENT
    if purpose == "longrun.resume":
        expected = ["agent", "--session-id", SID, "--message", body, "--json"]
    else:
        expected = ["sessions", "send", "--session-key", SID, "--message", body, "--json"]
    assert fake.calls() == [expected]


def test_it_fails_a_message_with_a_nul_character_without_running(fake: StandIn) -> None:
    result = fake.channel().send(envelope(body="a\x00b"))
    assert result.outcome is Outcome.FAILED
    assert fake.calls() == []


def test_it_gives_the_process_a_closed_stdin(fake: StandIn) -> None:
    assert fake.channel().send(envelope()).outcome is Outcome.SENT
    assert fake.stdin_reads() == [""]


# -- outcomes ---------------------------------------------------------------


@pytest.mark.parametrize("mode", ["ok", "accepted", "no-status", "not-an-object"])
def test_it_counts_a_json_answer_as_sent(fake: StandIn, mode: str) -> None:
    fake.answer(mode)
    result = fake.channel().send(envelope())
    assert result.outcome is Outcome.SENT


def test_it_counts_a_timeout_status_as_unknown(fake: StandIn) -> None:
    fake.answer("timeout")
    result = fake.channel().send(envelope())
    assert result.outcome is Outcome.UNKNOWN
    assert result.detail == "status timeout: no reply within 30s"


def test_it_counts_an_error_status_as_failed_with_its_error(fake: StandIn) -> None:
    fake.answer("error")
    result = fake.channel().send(envelope())
    assert result.outcome is Outcome.FAILED
    assert result.detail == "status error: x"


def test_it_counts_an_unrecognised_status_as_unknown(fake: StandIn) -> None:
    fake.answer("queued")
    result = fake.channel().send(envelope())
    assert result.outcome is Outcome.UNKNOWN
    assert "queued" in result.detail


@pytest.mark.parametrize("mode", ["garbage", "empty"])
def test_it_fails_an_exit_0_answer_that_is_not_json(fake: StandIn, mode: str) -> None:
    fake.answer(mode)
    result = fake.channel().send(envelope())
    assert result.outcome is Outcome.FAILED
    assert result.detail.startswith("exit 0 but the answer is not JSON: ")
    if mode == "garbage":
        assert result.detail.endswith("Sending… done (not json)")


def test_it_fails_a_non_zero_exit_with_the_end_of_stderr(fake: StandIn) -> None:
    fake.answer("exit")
    result = fake.channel().send(envelope())
    assert result.outcome is Outcome.FAILED
    assert result.detail.startswith("exit 3: ")
    assert result.detail.endswith("session not found: agent:main:x")
    assert "HEAD-OF-STDERR" not in result.detail
    assert len(result.detail) < len("exit 3: ") + 410


def test_it_counts_a_resume_that_fails_as_failed_with_the_session(fake: StandIn) -> None:
    fake.answer("exit")
    fake.write_index({KEY: {"sessionId": "s-9"}})
    result = fake.channel().send(envelope(purpose="longrun.resume"))
    assert result.outcome is Outcome.FAILED
    assert "s-9" in result.detail
    assert "exit 3: " in result.detail


def test_it_counts_a_hanging_process_as_unknown_and_kills_it(fake: StandIn) -> None:
    fake.answer("hang")
    result = fake.channel(timeout=0.5).send(envelope())
    assert result.outcome is Outcome.UNKNOWN
    assert result.detail == "no answer within 0.5 s; the process was killed"
    assert wait_dead(fake.pid())


def test_it_kills_the_whole_process_group_on_timeout(fake: StandIn) -> None:
    fake.answer("hang-with-child")
    result = fake.channel(timeout=1.0).send(envelope())
    assert result.outcome is Outcome.UNKNOWN
    assert wait_dead(fake.pid())
    assert wait_dead(fake.pid("child-pid"))


def test_it_counts_a_process_killed_by_a_signal_as_unknown(fake: StandIn) -> None:
    fake.answer("signal")
    result = fake.channel().send(envelope())
    assert result.outcome is Outcome.UNKNOWN
    assert result.detail.startswith("killed by signal 15")


def test_it_counts_an_answer_too_large_to_read_as_unknown(fake: StandIn) -> None:
    fake.answer("huge")
    result = fake.channel().send(envelope())
    assert result.outcome is Outcome.UNKNOWN
    assert "larger than" in result.detail
    assert len(result.detail) <= DETAIL_LIMIT


def test_it_fails_when_the_binary_is_missing(fake: StandIn) -> None:
    fake.binary.unlink()
    result = fake.channel().send(envelope())
    assert result.outcome is Outcome.FAILED
    assert result.detail == f"binary not found: {fake.binary}"


def test_it_fails_when_the_binary_is_not_executable(fake: StandIn) -> None:
    fake.binary.chmod(0o644)
    result = fake.channel().send(envelope())
    assert result.outcome is Outcome.FAILED
    assert fake.calls() == []
