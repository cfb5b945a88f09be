"""The due index also holds the id, which settles ties in the dispatch claim's order (D-K46).

The dispatch job claims the most overdue messages first, by due time and then
id. Over the due time alone the index gave only part of that order, so
PostgreSQL could read every due message and sort them before taking a batch;
over both, a claim reads the index in order and stops at its batch size.
"""

from django.db import migrations, models


class Migration(migrations.Migration):
    dependencies = [
        ("delivery", "0005_outbox_fillfactor"),
    ]

    operations = [
        migrations.RemoveIndex(model_name="message", name="delivery_message_due"),
        migrations.AddIndex(
            model_name="message",
            index=models.Index(fields=["next_attempt_at", "id"], name="delivery_message_due"),
        ),
    ]
