"""detect-trigger: does a message enter long-run mode (§2, D-B1)?"""

from __future__ import annotations

from longrun.conf import longrun_conf
from longrun.models import SessionLock
from longrun.policies.answers import EXIT_ACTION, EXIT_OK, Answer
from longrun.policies.states import ACTIVE_STATES
from longrun.policies.trigger import is_trigger
from xworkmate.lib.jstext import js_trim


def message_mode(*, message: str, session_key: str = "") -> Answer:
    """detect-trigger: does a message enter long-run mode, continue the session's task, or neither?

    Only a configured phrase asked for enters (D-B1); any other message in a
    session whose lock an active task holds means "go on with it" (§2.2 R4).
    Exit 1 when the agent has something to do (enter, or run the work-cycle
    check first), 0 for an ordinary message.
    """
    phrases = longrun_conf().trigger_phrases
    phrase = max((p for p in phrases if p and p in message), key=len, default=None)
    key = js_trim(session_key)
    lock = (
        SessionLock.objects.select_related("task")
        .filter(origin_session_key=key, task__state__in=ACTIVE_STATES)
        .first()
        if key
        else None
    )
    active = lock.task if lock is not None else None
    asks = is_trigger(message, phrases)
    if asks:
        mode = "enter"
        reason = f"the message asks for long-run mode ({phrase}): announce, set, then validate"
        if active is not None:
            reason += (
                f"; the session's lock is held by the active task {active.name}: registering "
                "another task needs --force-lock (else exit 3)"
            )
    else:
        mentioned = (
            f"the message mentions {phrase} without asking for it (a negation or a question)"
            if phrase
            else "no trigger phrase"
        )
        if active is not None:
            mode = "continue"
            reason = (
                f"{mentioned}; the session has the active long task {active.name} "
                f"({active.state}): go on with it, running work_cycle_tick first"
            )
        else:
            mode = "ordinary"
            where = "this session" if key else "a session (no session key given)"
            reason = f"{mentioned}, and no active long task in {where}: an ordinary message"
    return Answer(
        EXIT_OK if mode == "ordinary" else EXIT_ACTION,
        {
            "mode": mode,
            "trigger": asks,
            "phrase": phrase,
            "session_key": key or None,
            "active_task": active.name if active is not None else None,
            "active_state": active.state if active is not None else None,
            "reason": reason,
        },
    )
