"""The outcome of a run's agentTurn (the plans.run outcome handler)."""

from __future__ import annotations

from plans.models import Job, Run
from plans.services._runs import _finish
from xworkmate.delivery.outcomes import Outcome, RecordedMessage

_DELIVERY = {"sent": "delivered", "failed": "not-delivered", "unknown": "unknown"}


def run_record_delivery(message: RecordedMessage, outcome: Outcome, final: bool) -> None:
    """The outcome the outbox recorded for a run's agentTurn (runs in its transaction).

    Sent: the run is ok. Failed or unknown for good: error, with the reason.
    An outcome that will be retried only updates the delivery status shown.
    """
    run = Run.objects.select_for_update().filter(delivery_message_id=message.pk).first()
    if run is None or run.status != Run.RUNNING:
        return
    run.delivery_status = _DELIVERY[str(outcome)]
    run.delivery_error = "" if outcome == "sent" else message.last_error
    if outcome == "sent":
        run.delivered = True
    elif final:
        run.delivered = False
    else:
        run.save(update_fields=["delivery_status", "delivery_error"])
        return
    job = Job.objects.select_for_update().get(pk=run.job_id)
    status = Run.OK if outcome == "sent" else Run.ERROR
    error = "" if status == Run.OK else f"delivery {outcome}: {message.last_error}".strip()
    _finish(run, job, status=status, error=error, now=message.updated_at)
