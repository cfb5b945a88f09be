"""sql.together on PostgreSQL (D-K35): several statements, one query text, one round trip.

A delivery step reads in one exchange and writes in one more; these tests hold
the helper to what the step relies on: each statement's rows come back in order
(a RETURNING in the middle too), an error in any of them leaves none of them
written, and a step on a real receiver costs exactly two such exchanges.
"""

from __future__ import annotations

import pytest
from django.db import DatabaseError, connection, transaction
from django.db.models import F
from django.test.utils import CaptureQueriesContext
from django.utils import timezone

from tests.delivery.conftest import Receiver, use_channels
from xworkmate import sql
from xworkmate.config import DeliveryChannel
from xworkmate.delivery.models import Attempt, Message
from xworkmate.delivery.services import (
    deliveries_step,
    message_send,
    messages_claim,
    outbox_enqueue,
)

pytestmark = pytest.mark.usefixtures("real_services")

MESSAGE = sql.table(Message)


def _statements(queries: CaptureQueriesContext) -> list[str]:
    """What reached the server, the transaction's own BEGIN and COMMIT aside."""
    return [q["sql"] for q in queries if q["sql"] not in ("BEGIN", "COMMIT")]


def _enqueue(key: str, purpose: str = "longrun.progress") -> Message:
    return outbox_enqueue(
        purpose=purpose, target=f"agent:main:{key}", body=f"正在看：{key}",
        idempotency_key=key, now=timezone.now(),
    )


def test_several_statements_go_as_one_query_and_answer_in_order():
    first, second = _enqueue("a"), _enqueue("b")
    with CaptureQueriesContext(connection) as queries, transaction.atomic():
        answers = sql.together(
            [
                (f"SELECT id FROM {MESSAGE} WHERE id = %s", [first.pk]),  # noqa: S608
                (f"UPDATE {MESSAGE} SET last_error = %s WHERE id = %s", ["x; y", first.pk]),  # noqa: S608
                (
                    f"UPDATE {MESSAGE} SET last_error = %s WHERE id = %s RETURNING id",  # noqa: S608
                    ["it's 100%", second.pk],
                ),
                (f"SELECT count(*) FROM {MESSAGE}", []),  # noqa: S608
            ]
        )
    assert answers == [[(first.pk,)], None, [(second.pk,)], [(2,)]]
    assert len(_statements(queries)) == 1  # one query text, one round trip
    # Values travel as values: a quote, a semicolon or a percent sign is text.
    assert Message.objects.get(pk=first.pk).last_error == "x; y"
    assert Message.objects.get(pk=second.pk).last_error == "it's 100%"


def test_an_error_in_any_statement_leaves_none_of_them_written():
    message = _enqueue("a")
    with pytest.raises(DatabaseError), transaction.atomic():
        sql.together(
            [
                (f"UPDATE {MESSAGE} SET last_error = %s WHERE id = %s", ["written?", message.pk]),  # noqa: S608
                (f"UPDATE {MESSAGE} SET attempt_count = -1 WHERE id = %s", [message.pk]),  # noqa: S608
            ]
        )
    message.refresh_from_db()
    assert message.last_error == "" and message.attempt_count == 0


def test_a_step_reads_in_one_exchange_and_writes_in_one_more(settings):
    receiver = Receiver()
    try:
        use_channels(
            settings, DeliveryChannel(name="hook", kind="webhook", url=receiver.url),
            routes={"longrun.progress": "hook"},
        )
        for i in range(5):
            _enqueue(f"m{i}")
        claims = messages_claim(new=True, now=timezone.now(), limit=5)
        with CaptureQueriesContext(connection) as beginning:
            started = deliveries_step(
                finished=[], start=claims, renew=[], now=timezone.now(), by="test"
            )
        answers = [(one, message_send(one)) for one in started]
        with CaptureQueriesContext(connection) as recording:
            deliveries_step(finished=answers, start=[], renew=[], now=timezone.now(), by="test")
    finally:
        receiver.close()
    assert len(started) == 5
    # The reads (the locked messages, the breakers), then the writes; BEGIN and
    # COMMIT aside, nothing else reaches the server.
    assert len(_statements(beginning)) == 2, _statements(beginning)
    assert len(_statements(recording)) == 2, _statements(recording)
    assert set(Message.objects.values_list("status", flat=True)) == {Message.SENT}
    assert Attempt.objects.filter(outcome="sent", finished_at__isnull=False).count() == 5


def test_ids_and_rows_travel_as_arrays_so_a_statements_text_stays_the_same():
    # D-K36: psycopg parses a query text once and keeps it only if the text (and its
    # 50 parameters at most) come again; a step's statements must not change with
    # how many messages they carry.
    messages = [_enqueue(f"m{i}") for i in range(3)]
    ids = [m.pk for m in messages]
    one, one_params = sql.one_of("id", ids[:1])
    three, three_params = sql.one_of("id", ids)
    assert one == three and one_params == [ids[:1]] and three_params == [ids]
    with connection.cursor() as cursor:
        cursor.execute(f"SELECT id FROM {MESSAGE} WHERE {three} ORDER BY id", three_params)  # noqa: S608
        assert [row[0] for row in cursor.fetchall()] == ids
    now = timezone.now()
    fields = ["message", "number", "channel", "started_at", "outcome", "detail", "by"]
    rows = [[pk, 1, "hook", now, "", "", "test"] for pk in ids]
    text_one, _ = sql.insert_rows(Attempt, fields, rows[:1])
    text_three, params = sql.insert_rows(Attempt, fields, rows)
    assert text_one == text_three and len(params) == len(fields)
    with transaction.atomic():
        sql.together([(text_three, params)])
    assert sorted(Attempt.objects.values_list("message_id", flat=True)) == ids


def test_an_inserted_value_too_long_for_its_column_is_refused_and_nothing_written():
    # The arrays are cast to their columns' types without a length, so a value too
    # long for varchar(64) is refused as a plain INSERT refuses it, never cut short.
    message = _enqueue("a")
    fields = ["message", "number", "channel", "started_at", "outcome", "detail", "by"]
    now = timezone.now()
    rows = [[message.pk, 1, "hook", now, "", "", "test"], [message.pk, 2, "x" * 65, now, "", "", "t"]]
    with pytest.raises(DatabaseError), transaction.atomic():
        sql.together([sql.insert_rows(Attempt, fields, rows)])
    assert not Attempt.objects.exists()


def test_racing_claims_take_each_message_once_oldest_first_and_skip_open_breakers(settings):
    # D-K37: the claim is one hand-written statement; six batches claiming at once,
    # each on its own connection, must share the outbox without overlap (SKIP
    # LOCKED), each taking the oldest it can, and leave a blocked channel's
    # messages alone but for its probe.
    from tests.support.threads import in_threads
    from xworkmate.delivery.models import Breaker

    use_channels(
        settings,
        DeliveryChannel(name="hook", kind="webhook", url="http://127.0.0.1:9/hook"),
        DeliveryChannel(name="down", kind="webhook", url="http://127.0.0.1:9/down"),
        routes={"longrun.progress": "hook", "plans.run": "down"},
    )
    sendable = [_enqueue(f"m{i}").pk for i in range(60)]
    blocked = [_enqueue(f"d{i}", purpose="plans.run").pk for i in range(3)]
    Breaker.objects.create(
        channel="down", state="half_open", failures=5, probe_message_id=blocked[1],
        opened_at=timezone.now(), probe_after=timezone.now(), times_opened=1,
    )
    batches: list[list[int]] = [[] for _ in range(6)]

    def claim(i: int) -> None:
        batches[i] = [c.message_id for c in messages_claim(new=True, now=timezone.now(), limit=8)]

    in_threads(claim, 6)
    claimed = [pk for batch in batches for pk in batch]
    assert len(claimed) == len(set(claimed)) == 48  # six batches of 8, no message twice
    assert all(batch == sorted(batch) for batch in batches)
    assert blocked[0] not in claimed and blocked[2] not in claimed
    rest = [c.message_id for c in messages_claim(new=True, now=timezone.now(), limit=100)]
    assert sorted(claimed + rest) == sorted([*sendable, blocked[1]])  # the probe goes
    tokens = set(Message.objects.filter(pk__in=claimed).values_list("claimed_by", flat=True))
    assert len(tokens) == 6


@pytest.mark.parametrize(
    ("new", "uses"),
    [
        (True, ["delivery_message_new"]),
        # The dispatch job's question reads the due index by its condition, not
        # merely in its order.
        (False, ["delivery_message_due", "Index Cond: (next_attempt_at <="]),
    ],
)
def test_the_claim_can_use_the_index_made_for_its_question(new, uses):
    # The claim is hand-written (D-K37) and restates the models' conditions as text:
    # the new-message question must imply NEW_FOR_A_WORKER, the partial index's
    # predicate, or PostgreSQL cannot use that index and every claim reads the
    # outbox. With sequential scans priced out, the plan names the index exactly
    # when it is usable; if either copy of the condition changes alone, this fails.
    from xworkmate.delivery.services.claim import _claim

    for i in range(20):
        _enqueue(f"m{i}")
    text, params = _claim(new, timezone.now(), 10, "token")
    with transaction.atomic(), connection.cursor() as cursor:
        cursor.execute(f"ANALYZE {MESSAGE}")
        cursor.execute("SET LOCAL enable_seqscan = off")
        cursor.execute(f"EXPLAIN {text}", params)
        plan = "\n".join(row[0] for row in cursor.fetchall())
    assert all(part in plan for part in uses), plan


def _progress_to_a_webhook(settings) -> None:
    """Progress messages go to a webhook, so they wait in the outbox for a worker."""
    use_channels(
        settings,
        DeliveryChannel(name="hook", kind="webhook", url="http://127.0.0.1:9/hook"),
        routes={"longrun.progress": "hook"},
    )


def test_a_workers_claim_reads_no_more_of_a_backlog_than_it_takes(settings):
    # D-K43: with the breakers asked of as a join, the planner read every sendable
    # message and sorted them all before taking the batch, so a claim cost as much
    # as the backlog was long. Now it reads the new-message index in order and stops
    # at the limit, with the planner's own statistics (nothing priced out).
    from xworkmate.delivery.services.claim import _claim

    _progress_to_a_webhook(settings)
    for i in range(400):
        _enqueue(f"b{i}")
    text, params = _claim(True, timezone.now(), 10, "token")
    with transaction.atomic(), connection.cursor() as cursor:
        cursor.execute(f"ANALYZE {MESSAGE}")
        cursor.execute(f"EXPLAIN (ANALYZE, COSTS OFF, TIMING OFF, SUMMARY OFF) {text}", params)
        plan = "\n".join(row[0] for row in cursor.fetchall())
        transaction.set_rollback(True)
    scan = next(line for line in plan.splitlines() if "delivery_message_new" in line)
    assert "Index Scan" in scan and "Sort" not in plan, plan
    assert "(actual rows=10 loops=1)" in scan, plan  # ten read for ten taken, of 400


@pytest.mark.parametrize("new", [True, False], ids=["worker", "dispatch job"])
def test_a_claim_reads_a_backlog_in_order_whatever_the_statistics_say(settings, new):
    # D-K46: statistics gathered while the outbox had nothing to send (as after a
    # quiet night, before an outage) put the sendable messages at a handful. With
    # that estimate PostgreSQL read every sendable message through a bitmap and
    # sorted them all for each claim of a backlog that arrived since; the claim
    # now asks for the index read in order, which stops at the batch size.
    from xworkmate.delivery.services.claim import _claim_statements

    _progress_to_a_webhook(settings)
    with connection.cursor() as cursor:
        cursor.execute(f"ANALYZE {MESSAGE}")  # the outbox is empty
    for i in range(2000):
        _enqueue(f"s{i}")
    if not new:  # the dispatch job's question: overdue, by due time
        Message.objects.update(next_attempt_at=F("created_at"))
    now = timezone.now()
    *steer, (text, params) = _claim_statements(new, now, 10, "token")
    with transaction.atomic(), connection.cursor() as cursor:
        for setting, values in steer:
            cursor.execute(setting, values)
        cursor.execute(f"EXPLAIN (ANALYZE, COSTS OFF, TIMING OFF, SUMMARY OFF) {text}", params)
        plan = "\n".join(row[0] for row in cursor.fetchall())
        transaction.set_rollback(True)
    assert "Bitmap" not in plan and "Seq Scan on delivery_message" not in plan, plan
    scan = next(line for line in plan.splitlines() if "Index Scan" in line and " m " in line)
    assert "(actual rows=10 loops=1)" in scan, plan  # ten read for ten taken, of 2,000


def test_the_outbox_tables_leave_room_for_a_claims_new_row_versions(settings):
    # D-K43: a claim changes no indexed column, so on a page with room its update is
    # HOT (no index entry written); at the default fill no inserted page had room.
    from xworkmate.delivery.models import Attempt
    from xworkmate.delivery.services.claim import _claim

    with connection.cursor() as cursor:
        for model in (Message, Attempt):
            cursor.execute(
                "SELECT reloptions FROM pg_class WHERE relname = %s", [model._meta.db_table]
            )
            assert cursor.fetchone()[0] == ["fillfactor=70"]
    _progress_to_a_webhook(settings)
    for i in range(100):
        _enqueue(f"h{i}")
    with transaction.atomic(), connection.cursor() as cursor:
        sql.together([_claim(True, timezone.now(), 100, "token")])
        cursor.execute(
            "SELECT n_tup_upd, n_tup_hot_upd FROM pg_stat_xact_user_tables WHERE relname = %s",
            [Message._meta.db_table],
        )
        updated, hot = cursor.fetchone()
        transaction.set_rollback(True)
    assert updated == 100 and hot >= 30, (updated, hot)
