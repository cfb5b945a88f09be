"""D-K20: the embedded broker hands a consumer a whole message or none, under a racing writer;
D-K39: a consumer holding its prefetch gets control back after one poll."""

from __future__ import annotations

import threading
import time
import uuid
from pathlib import Path
from queue import Empty
from typing import Any

import pytest
from kombu import Connection, Exchange, Queue

from xworkmate.filebroker import Channel, Transport, use_whole_file_messages

QUEUE = "celery"


def _channel(folder: Path, **options: Any) -> Any:
    use_whole_file_messages()
    folder.mkdir(exist_ok=True)
    conn = Connection(
        "filesystem://",
        transport_options={
            "data_folder_in": str(folder),
            "data_folder_out": str(folder),
            "processed_folder": str(folder.parent / "processed"),
            "store_processed": False,
            **options,
        },
    )
    return conn, conn.default_channel


def test_filesystem_urls_use_the_whole_file_transport(tmp_path: Path):
    conn, channel = _channel(tmp_path / "queue")
    try:
        assert isinstance(conn.transport, Transport)
        assert isinstance(channel, Channel)
    finally:
        conn.release()


def test_a_message_is_renamed_into_place_and_nothing_partial_stays(tmp_path: Path):
    folder = tmp_path / "queue"
    conn, channel = _channel(folder)
    try:
        channel._put(QUEUE, {"body": "x" * 1000})
        names = sorted(p.name for p in folder.iterdir())
        assert len(names) == 1 and names[0].endswith(f".{QUEUE}.msg")
        assert channel._get(QUEUE) == {"body": "x" * 1000}
    finally:
        conn.release()


def test_messages_published_within_one_millisecond_are_taken_in_the_order_published(
    tmp_path: Path,
):
    # The name's stamp was kombu's monotonic millisecond, and a random uuid settled ties:
    # two messages published in one millisecond came out in either order (a task and
    # the one published right after it swapped; seen in CI).
    conn, channel = _channel(tmp_path / "queue")
    try:
        for n in range(300):
            channel._put(QUEUE, {"n": n})
        assert [channel._get(QUEUE)["n"] for _ in range(300)] == list(range(300))
    finally:
        conn.release()


def test_a_file_still_being_written_is_never_taken(tmp_path: Path):
    folder = tmp_path / "queue"
    conn, channel = _channel(folder)
    try:
        # What a writer leaves while it writes (or after it was killed mid-write).
        (folder / ".partial-0b8e").write_bytes(b'{"body": "half')
        with pytest.raises(Empty):
            channel._get(QUEUE)
    finally:
        conn.release()


def test_a_consumer_racing_a_writer_reads_every_message_whole(tmp_path: Path):
    """kombu's own transport fails this: the reader moves a file the writer has created
    but not yet filled, and dies on JSONDecodeError (celery/kombu#1551)."""
    folder = tmp_path / "queue"
    writer_conn, writer = _channel(folder)
    reader_conn, reader = _channel(folder)
    count, body = 300, "y" * 200_000
    received: list[Any] = []
    failures: list[BaseException] = []
    done = threading.Event()

    def consume() -> None:
        while len(received) < count:
            try:
                received.append(reader._get(QUEUE))
            except Empty:
                if done.is_set() and not any(folder.glob(f"*.{QUEUE}.msg")):
                    return
            except Exception as exc:  # noqa: BLE001 (the failure under test, reported below)
                failures.append(exc)
                return

    thread = threading.Thread(target=consume)
    thread.start()
    try:
        for n in range(count):
            writer._put(QUEUE, {"n": n, "body": body})
    finally:
        done.set()
        thread.join(timeout=120)
        writer_conn.release()
        reader_conn.release()
    assert failures == []
    assert sorted(m["n"] for m in received) == list(range(count))
    assert all(m["body"] == body for m in received)


def test_a_consumer_takes_messages_through_the_brokers_folder_not_the_temp_folder(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
):
    """kombu moves a taken message to the system temp folder (a copy across filesystems);
    with that folder gone, kombu's consumer skips every message and reads none."""
    import tempfile

    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path / "no-such-temp-folder"))
    folder = tmp_path / "queue"
    conn, channel = _channel(folder)
    try:
        channel._put(QUEUE, {"body": "z"})
        assert channel._get(QUEUE) == {"body": "z"}
        assert list(folder.iterdir()) == [] and list((tmp_path / "processed").iterdir()) == []
    finally:
        conn.release()


def test_two_consumers_racing_take_each_message_exactly_once(tmp_path: Path):
    folder = tmp_path / "queue"
    writer_conn, writer = _channel(folder)
    count = 400
    for n in range(count):
        writer._put(QUEUE, {"n": n})
    taken: list[list[int]] = [[], []]
    failures: list[BaseException] = []

    def consume(into: list[int]) -> None:
        conn, channel = _channel(folder)
        try:
            while True:
                try:
                    into.append(channel._get(QUEUE)["n"])
                except Empty:
                    return
        except Exception as exc:  # noqa: BLE001 (a partial read, a crash: reported below)
            failures.append(exc)
        finally:
            conn.release()

    threads = [threading.Thread(target=consume, args=(into,)) for into in taken]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=120)
    writer_conn.release()
    assert failures == []
    assert sorted(taken[0] + taken[1]) == list(range(count))


def _consumer(tmp_path: Path, received: list[Any]) -> Any:
    """A connection consuming QUEUE with a prefetch of one and acknowledgements left to
    the test, as Celery's worker consumes with `acks_late`; polls every 0.05 s."""
    (tmp_path / "control").mkdir(exist_ok=True)
    conn, _ = _channel(
        tmp_path / "queue",
        # kombu keeps an exchange's bindings there (a relative "control" otherwise).
        control_folder=str(tmp_path / "control"),
        polling_interval=0.05,
    )
    # A name of its own: kombu remembers declared bindings for the whole process and
    # would not write this test's control folder for a name an earlier test bound.
    name = f"held-{uuid.uuid4().hex}"
    queue = Queue(name, Exchange(name), routing_key=name)
    consumer = conn.Consumer(queue, callbacks=[lambda body, message: received.append(message)])
    consumer.qos(prefetch_count=1)
    consumer.consume()
    return conn, conn.Producer(exchange=queue.exchange, routing_key=name)


def _drain_in_thread(conn: Any, timeout: float) -> tuple[threading.Thread, list[BaseException]]:
    raised: list[BaseException] = []

    def drain() -> None:
        try:
            conn.drain_events(timeout=timeout)
        except BaseException as exc:  # noqa: BLE001 (what the call ended with, judged below)
            raised.append(exc)

    thread = threading.Thread(target=drain, daemon=True)
    thread.start()
    return thread, raised


def test_a_consumer_holding_its_prefetch_gets_control_back_after_one_poll(tmp_path: Path):
    """D-K39: Celery's blocking loop acknowledges finished tasks only between two
    drain_events calls; kombu's transport kept a full consumer waiting out the whole
    timeout (2 s in the worker), so a worker took its next task up to 2 s late."""
    received: list[Any] = []
    conn, producer = _consumer(tmp_path, received)
    try:
        producer.publish({"n": 1})
        producer.publish({"n": 2})
        conn.drain_events(timeout=5)
        assert [m.payload for m in received] == [{"n": 1}]  # held, not acknowledged
        thread, raised = _drain_in_thread(conn, timeout=60)
        thread.join(timeout=10)
        assert not thread.is_alive(), "a full consumer was kept for the caller's whole timeout"
        assert len(raised) == 1 and isinstance(raised[0], TimeoutError)
        assert len(received) == 1  # the prefetch still holds: nothing more was taken
        received[0].ack()
        conn.drain_events(timeout=5)
        assert [m.payload for m in received] == [{"n": 1}, {"n": 2}]
    finally:
        conn.release()


def test_a_consumer_with_room_still_waits_for_a_message_published_meanwhile(tmp_path: Path):
    received: list[Any] = []
    conn, producer = _consumer(tmp_path, received)
    try:
        thread, raised = _drain_in_thread(conn, timeout=60)
        time.sleep(0.5)  # several polls find the queue empty; the call goes on waiting
        assert thread.is_alive() and raised == []
        producer.publish({"n": 1})
        thread.join(timeout=10)
        assert not thread.is_alive() and raised == []
        assert [m.payload for m in received] == [{"n": 1}]
    finally:
        conn.release()
