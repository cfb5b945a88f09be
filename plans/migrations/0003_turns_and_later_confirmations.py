"""D-C18: the turns each plan has seen, and what a confirmation copies to be checked.

Existing confirmations are taken as they were judged then: their turn counts as
first seen after the revision they confirmed, and their revision's source says
whether its author is known. The turn table is filled from the revisions'
writers, the confirmations and the change requests, each turn with the earliest
role it had.
"""

import django.db.models.deletion
import django.utils.timezone
from django.db import migrations, models


def _backfill(apps, schema_editor):
    Revision = apps.get_model("plans", "Revision")
    Confirmation = apps.get_model("plans", "Confirmation")
    ChangeRequest = apps.get_model("plans", "ChangeRequest")
    Turn = apps.get_model("plans", "Turn")
    newest = {}  # plan id -> the newest revision number
    for revision in Revision.objects.order_by("plan_id", "number").iterator():
        newest[revision.plan_id] = revision.number
    seen = {}  # (plan id, turn) -> (seen_after, role, revision number, when)

    def saw(plan_id, turn_id, seen_after, role, number, when):
        if not turn_id:
            return
        key = (plan_id, turn_id)
        if key not in seen or seen[key][0] > seen_after:
            seen[key] = (seen_after, role, number, when)

    for revision in Revision.objects.iterator():
        role = "proposer" if revision.number == 1 else "writer"
        saw(revision.plan_id, revision.turn_id, revision.number - 1, role, revision.number,
            revision.written_at)
    for confirmation in Confirmation.objects.select_related("revision").iterator():
        revision = confirmation.revision
        Confirmation.objects.filter(pk=confirmation.pk).update(
            revision_number=revision.number,
            revision_author_known=revision.source == "api" and bool(revision.turn_id),
            turn_seen_after=revision.number if confirmation.how == "api" else None,
        )
        saw(revision.plan_id, confirmation.turn_id, revision.number, "confirmer",
            revision.number, confirmation.confirmed_at)
    for change in ChangeRequest.objects.select_related("revision").iterator():
        revision = change.revision
        saw(revision.plan_id, change.turn_id, revision.number, "change-requester",
            revision.number, change.requested_at)
    Turn.objects.bulk_create(
        Turn(plan_id=plan_id, turn_id=turn_id[:200], role=role, revision_number=number,
             seen_after=after, seen_at=when)
        for (plan_id, turn_id), (after, role, number, when) in seen.items()
    )


class Migration(migrations.Migration):
    dependencies = [("plans", "0002_entry_proposal_change_requests")]

    operations = [
        migrations.CreateModel(
            name="Turn",
            fields=[
                ("id", models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name="ID")),
                ("turn_id", models.CharField(max_length=200, verbose_name="turn")),
                ("role", models.CharField(choices=[("proposer", "proposer"), ("writer", "writer"), ("disk-writer", "presumed writer of an edit on disk"), ("confirmer", "confirmer"), ("change-requester", "change requester")], max_length=20, verbose_name="first seen as")),
                ("revision_number", models.PositiveIntegerField(verbose_name="of revision")),
                ("seen_after", models.PositiveIntegerField(verbose_name="first seen after revision")),
                ("seen_at", models.DateTimeField(default=django.utils.timezone.now, verbose_name="first seen at")),
                ("plan", models.ForeignKey(on_delete=django.db.models.deletion.CASCADE, related_name="turns", to="plans.plan", verbose_name="plan")),
            ],
            options={
                "verbose_name": "turn",
                "verbose_name_plural": "turns",
                "ordering": ("plan", "seen_after", "id"),
                "constraints": [
                    models.UniqueConstraint(fields=("plan", "turn_id"), name="plans_turn_once"),
                    models.CheckConstraint(condition=models.Q(("turn_id", ""), _negated=True), name="plans_turn_named"),
                ],
            },
        ),
        migrations.AddField(
            model_name="confirmation",
            name="revision_number",
            field=models.PositiveIntegerField(default=1, verbose_name="revision number"),
            preserve_default=False,
        ),
        migrations.AddField(
            model_name="confirmation",
            name="revision_author_known",
            field=models.BooleanField(default=True, verbose_name="revision's author known"),
            preserve_default=False,
        ),
        migrations.AddField(
            model_name="confirmation",
            name="turn_seen_after",
            field=models.PositiveIntegerField(null=True, verbose_name="turn first seen after"),
        ),
        migrations.AddField(
            model_name="confirmation",
            name="by_agent",
            field=models.BooleanField(default=False, verbose_name="relayed by an agent key"),
        ),
        migrations.RunPython(_backfill, migrations.RunPython.noop),
        migrations.AddConstraint(
            model_name="confirmation",
            constraint=models.CheckConstraint(condition=models.Q(("how", "admin"), ("turn_seen_after__isnull", True), ("turn_seen_after__gte", models.F("revision_number")), _connector="OR"), name="plans_confirmation_from_a_later_turn"),
        ),
        migrations.AddConstraint(
            model_name="confirmation",
            constraint=models.CheckConstraint(condition=models.Q(("how", "admin"), ("revision_author_known", True), ("by_agent", False), _connector="OR"), name="plans_confirmation_disk_revision_not_by_an_agent"),
        ),
    ]
