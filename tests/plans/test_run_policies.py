"""Pure rules of jobs and requests: display status, backoff, catch-up, clarification (§2.2, §6, §8.5)."""

from __future__ import annotations

import pytest

from plans.policies import (
    BACKOFF_MS,
    MAX_MISSED_RECORDED,
    catch_up,
    clarification_problems,
    display_status,
    is_schedule_request,
    job_next_run_ms,
    job_outcome,
    job_shape_problems,
)

DAILY = {"kind": "cron", "expr": "0 9 * * *", "tz": "Asia/Shanghai"}
T = 1_773_104_400_000  # 2026-03-10T01:00:00Z, a fire time of DAILY
DAY = 86_400_000


@pytest.mark.parametrize(
    ("enabled", "running", "last", "expected"),
    [
        (False, None, "ok", ("disabled", "已暂停")),
        (True, 1, "ok", ("running", "执行中")),
        (True, None, "ok", ("done", "已完成")),
        (True, None, "error", ("failed", "失败")),
        (True, None, "skipped", ("skipped", "已跳过")),
        (True, None, "", ("pending", "待执行")),
    ],
)
def test_91_display_status(enabled, running, last, expected):
    assert display_status(enabled=enabled, running_at_ms=running, last_run_status=last) == expected


def test_64_error_backoff_grows_and_caps():
    # A schedule shorter than every backoff: the backoff decides.
    every_second = {"kind": "every", "everyMs": 1000, "anchorMs": 0}
    errors = 0
    for step, backoff in enumerate([*BACKOFF_MS, BACKOFF_MS[-1]]):
        outcome = job_outcome(
            every_second,
            status="error",
            ended_ms=T,
            consecutive_errors=errors,
            host_tz="UTC",
            job_id="j",
            run_at_ms=T - 1000,
        )
        errors = outcome.consecutive_errors
        assert errors == step + 1
        assert outcome.next_run_ms == T + backoff
    ok = job_outcome(
        every_second,
        status="ok",
        ended_ms=T,
        consecutive_errors=errors,
        host_tz="UTC",
        job_id="j",
        run_at_ms=T - 1000,
    )
    assert ok.consecutive_errors == 0 and ok.next_run_ms == T


def test_68_a_cron_job_runs_again_no_sooner_than_two_seconds_after_it_ended():
    every_second = {"kind": "cron", "expr": "* * * * * *", "tz": "UTC"}
    outcome = job_outcome(
        every_second,
        status="ok",
        ended_ms=T + 500,
        consecutive_errors=0,
        host_tz="UTC",
        job_id="j",
        run_at_ms=T,
    )
    assert outcome.next_run_ms == T + 2500


def test_an_at_job_stays_due_until_it_succeeded():
    at = {"kind": "at", "at": "2026-03-10T01:00:00Z"}
    due = job_next_run_ms(
        at, now_ms=T + DAY, host_tz="UTC", job_id="j", last_run_at_ms=None, last_status=""
    )
    assert due == T
    done = job_next_run_ms(
        at, now_ms=T + DAY, host_tz="UTC", job_id="j", last_run_at_ms=T, last_status="ok"
    )
    assert done is None


def test_catch_up_records_at_most_a_bounded_number_of_missed_fire_times():
    every_second = {"kind": "every", "everyMs": 1000, "anchorMs": T}
    plan = catch_up(
        every_second, due_ms=T, now_ms=T + 500_000, host_tz="UTC", job_id="j", policy="run-latest"
    )
    assert plan.run_ms == T + 500_000
    assert len(plan.missed_ms) == MAX_MISSED_RECORDED
    assert plan.missed_more == 500 - MAX_MISSED_RECORDED
    assert plan.next_ms == T + 501_000


def test_catch_up_on_time_runs_the_due_fire_time_and_records_nothing():
    plan = catch_up(DAILY, due_ms=T, now_ms=T + 5000, host_tz="UTC", job_id="j", policy="skip")
    assert (plan.run_ms, plan.missed_ms, plan.next_ms) == (T, (), T + DAY)


GOOD_REPLY = """预设基准方案：每天 09:00 生成库存日报。
A. 每天 09:00
B. 每个工作日 08:30
C. 每周一 09:00
其他：[由用户补充]"""


def test_4_a_clarification_with_a_baseline_two_or_three_options_and_the_last_line_passes():
    assert clarification_problems(GOOD_REPLY) == []
    # An option may name the baseline; it is still one baseline and an option.
    assert clarification_problems(GOOD_REPLY.replace("A. 每天 09:00", "A. 按基准方案，每天 09:00")) == []
    assert clarification_problems("  " + GOOD_REPLY.replace("\n", "\n  ") + "  \n") == []


@pytest.mark.parametrize(
    ("reply", "rule"),
    [
        ("预设基准方案：每天 09:00。\nA. 每天 09:00\n其他：[由用户补充]", "2-3 个结构化选项"),
        (
            "预设基准方案：X\nA. 1\nB. 2\nC. 3\nD. 4\n其他：[由用户补充]",
            "2-3 个结构化选项",
        ),
        ("预设基准方案：X\nA. 1\nB. 2", "最后追加"),
        ("A. 1\nB. 2\n其他：[由用户补充]", "预设基准方案"),
        ("你想怎么做？", "预设基准方案"),
        # Issue 23 A6: exactly one baseline, and the last line exactly the skill's.
        ("预设基准方案：X\n默认方案：Y\nA. 1\nB. 2\n其他：[由用户补充]",
         "预设基准方案: the reply must give exactly one default baseline proposal (found 2)"),
        ("预设基准方案：X\nA. 1\nB. 2\nD. 其他：[由用户补充]", "最后追加"),
        ("预设基准方案：X\nA. 1\nB. 2\n其他：[由用户补充]。", "最后追加"),
        ("预设基准方案：X\nA. 1\nB. 2\n还有其他：[由用户补充]", "最后追加"),
    ],
)
def test_4_a_clarification_that_breaks_the_rule_names_it(reply, rule):
    assert any(problem.startswith(rule) for problem in clarification_problems(reply))


@pytest.mark.parametrize(
    ("message", "expected"),
    [
        ("帮我做个每天早上9点的库存日报定时任务", True),
        ("帮我把这段话翻译成英文", False),
        ("每周提醒我交周报", True),
    ],
)
def test_1_2_which_messages_open_the_protocol(message, expected):
    assert is_schedule_request(message) is expected


@pytest.mark.parametrize(
    ("job", "problem"),
    [
        # case 28
        ({"sessionTarget": "isolated", "payload": {"kind": "systemEvent", "text": "x"}},
         'isolated cron jobs require payload.kind="agentTurn"'),
        # case 29
        ({"sessionTarget": "main", "payload": {"kind": "agentTurn", "message": "x"}},
         'main cron jobs require payload.kind="systemEvent"'),
        # case 37
        ({"sessionTarget": "main", "payload": {"kind": "systemEvent"}, "delivery": {"mode": "announce"}},
         'cron channel delivery config is only supported for sessionTarget="isolated"'),
        ({"sessionTarget": "main", "payload": {"kind": "systemEvent"}}, 'job.sessionTarget: must be "isolated" (D-C7)'),
        ({"delivery": {"mode": "announce"}}, 'job.delivery: must be {"mode": "none", "bestEffort": true} (D-C7)'),
        ({"delivery": {"mode": "none"}}, 'job.delivery: must be {"mode": "none", "bestEffort": true} (D-C7)'),
        ({"wakeMode": "next-heartbeat"}, 'job.wakeMode: must be "now" (D-C7)'),
        ({"deleteAfterRun": True}, "job.deleteAfterRun: not a field of a plan's job"),
        ({"delivery": None}, "job.delivery: must not be null"),
        ({"name": 5}, "job.name: must be a string"),
        ({"payload": {"kind": "agentTurn", "message": {}}}, "job.payload.message: must be a string"),
        ({"payload": {"kind": "agentTurn", "model": "x"}}, "job.payload.model: not a field"),
        ({"payload": "agentTurn"}, "job.payload: must be an object"),
    ],
)
def test_28_29_37_a_job_of_another_shape_is_refused_with_the_rule(job, problem):
    assert any(found.startswith(problem) for found in job_shape_problems(job))


@pytest.mark.parametrize(
    "delivery",
    [{"mode": "webhook"}, {"mode": "webhook", "to": "ftp://x.example/h"},
     {"mode": " Webhook ", "to": "not a url"}, {"mode": "webhook", "to": 7},
     {"mode": "webhook", "to": "https://"}],
)
def test_openclaws_webhook_rule_comes_with_the_d_c7_rule(delivery):
    # Issue 23 A5: OpenClaw's own message first (assertDeliverySupport), then ours.
    assert job_shape_problems({"delivery": delivery}) == [
        "cron webhook delivery requires delivery.to to be a valid http(s) URL",
        'job.delivery: must be {"mode": "none", "bestEffort": true} (D-C7)',
    ]


def test_a_webhook_with_a_valid_url_meets_only_the_d_c7_rule():
    assert job_shape_problems({"delivery": {"mode": "webhook", "to": "https://hooks.example/x"}}) == [
        'job.delivery: must be {"mode": "none", "bestEffort": true} (D-C7)'
    ]


def test_35_absent_fields_take_the_only_shape_allowed():
    assert job_shape_problems({}) == []
    assert job_shape_problems({"sessionTarget": " Isolated ", "payload": {"kind": "agentturn"},
                               "wakeMode": "now", "delivery": {"mode": "none", "bestEffort": True}}) == []
