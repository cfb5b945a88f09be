"""Room on each page of the outbox tables for a row's next version (D-K43).

A claim changes only a message's claim columns, and an answer only an
attempt's outcome columns; none of them is indexed, so PostgreSQL can write
the new version of the row on the same page without touching any index (a
HOT update), provided the page has room. At the default fill every page is
full when the row is written, so each such update went to another page and
added an entry to each of the table's indexes. PostgreSQL only: SQLite has no
such setting.
"""

from django.db import migrations

FILL = 70  # percent of a page the inserts fill


def _fill(percent):
    def run(apps, schema_editor):
        if schema_editor.connection.vendor != "postgresql":
            return
        quote = schema_editor.quote_name
        for model in ("Message", "Attempt"):
            table = apps.get_model("delivery", model)._meta.db_table
            schema_editor.execute(f"ALTER TABLE {quote(table)} SET (fillfactor = {percent})")

    return run


class Migration(migrations.Migration):
    dependencies = [
        ("delivery", "0004_channel_breakers"),
    ]

    operations = [
        migrations.RunPython(_fill(FILL), _fill(100), elidable=False),
    ]
