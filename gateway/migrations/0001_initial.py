"""The gateway's models, taken over from the kernel app with their tables (D-K4).

State only: the tables were created by xworkmate 0002 and keep their names
(`db_table`), so a database from before the move keeps every row. Content
types (and with them the admin permissions) are renamed to the new app.
"""

import django.db.models.deletion
import django.utils.timezone
from django.db import migrations, models

_MODELS = ("sessionentry", "sessionmapping", "taskrun", "nativetask")


def _move_content_types(apps, schema_editor):
    content_type = apps.get_model("contenttypes", "ContentType")
    db = schema_editor.connection.alias
    content_type.objects.using(db).filter(app_label="xworkmate", model__in=_MODELS).update(
        app_label="gateway"
    )


def _restore_content_types(apps, schema_editor):
    content_type = apps.get_model("contenttypes", "ContentType")
    db = schema_editor.connection.alias
    content_type.objects.using(db).filter(app_label="gateway", model__in=_MODELS).update(
        app_label="xworkmate"
    )


class Migration(migrations.Migration):
    initial = True

    dependencies = [
        ("contenttypes", "0002_remove_content_type_name"),
        ("xworkmate", "0002_gateway_sessions_runs"),
    ]

    operations = [
        migrations.SeparateDatabaseAndState(
            state_operations=[
                migrations.CreateModel(
                    name="SessionEntry",
                    fields=[
                        (
                            "id",
                            models.BigAutoField(
                                auto_created=True,
                                primary_key=True,
                                serialize=False,
                                verbose_name="ID",
                            ),
                        ),
                        (
                            "session_key",
                            models.CharField(
                                max_length=512, unique=True, verbose_name="session key"
                            ),
                        ),
                        ("session_id", models.CharField(max_length=512, verbose_name="session id")),
                        (
                            "created_at",
                            models.DateTimeField(
                                default=django.utils.timezone.now, verbose_name="created at"
                            ),
                        ),
                    ],
                    options={
                        "verbose_name": "session",
                        "verbose_name_plural": "sessions",
                        "db_table": "xworkmate_sessionentry",
                        "ordering": ("-created_at",),
                    },
                ),
                migrations.CreateModel(
                    name="NativeTask",
                    fields=[
                        (
                            "id",
                            models.BigAutoField(
                                auto_created=True,
                                primary_key=True,
                                serialize=False,
                                verbose_name="ID",
                            ),
                        ),
                        (
                            "session_key",
                            models.CharField(max_length=512, verbose_name="session key"),
                        ),
                        ("task_id", models.CharField(max_length=512, verbose_name="task id")),
                        (
                            "run_id",
                            models.CharField(blank=True, max_length=512, verbose_name="run id"),
                        ),
                        (
                            "status",
                            models.CharField(
                                choices=[
                                    ("queued", "queued"),
                                    ("running", "running"),
                                    ("succeeded", "succeeded"),
                                    ("completed", "completed"),
                                    ("failed", "failed"),
                                    ("timed_out", "timed_out"),
                                    ("cancelled", "cancelled"),
                                    ("lost", "lost"),
                                ],
                                max_length=16,
                                verbose_name="status",
                            ),
                        ),
                        ("record", models.JSONField(default=dict, verbose_name="record")),
                        (
                            "created_at",
                            models.DateTimeField(
                                default=django.utils.timezone.now, verbose_name="created at"
                            ),
                        ),
                        (
                            "updated_at",
                            models.DateTimeField(
                                default=django.utils.timezone.now, verbose_name="updated at"
                            ),
                        ),
                        (
                            "terminal_at",
                            models.DateTimeField(blank=True, null=True, verbose_name="terminal at"),
                        ),
                    ],
                    options={
                        "verbose_name": "native task",
                        "verbose_name_plural": "native tasks",
                        "db_table": "xworkmate_nativetask",
                        "ordering": ("-updated_at", "-id"),
                        "indexes": [
                            models.Index(
                                fields=["session_key", "run_id"], name="xworkmate_native_run"
                            ),
                            models.Index(
                                fields=["session_key", "-updated_at"],
                                name="xworkmate_native_recent",
                            ),
                        ],
                        "constraints": [
                            models.UniqueConstraint(
                                fields=("session_key", "task_id"),
                                name="xworkmate_native_task_unique",
                            ),
                            models.CheckConstraint(
                                condition=models.Q(("updated_at__gte", models.F("created_at"))),
                                name="xworkmate_native_updated_after_created",
                            ),
                        ],
                    },
                ),
                migrations.CreateModel(
                    name="SessionMapping",
                    fields=[
                        (
                            "id",
                            models.BigAutoField(
                                auto_created=True,
                                primary_key=True,
                                serialize=False,
                                verbose_name="ID",
                            ),
                        ),
                        (
                            "app_thread_key",
                            models.CharField(
                                max_length=512, unique=True, verbose_name="app thread key"
                            ),
                        ),
                        (
                            "expected_artifact_dirs",
                            models.JSONField(default=list, verbose_name="expected artifact dirs"),
                        ),
                        (
                            "source",
                            models.CharField(
                                choices=[
                                    ("session_start", "session_start"),
                                    ("bridge_prepare", "bridge_prepare"),
                                ],
                                max_length=16,
                                verbose_name="source",
                            ),
                        ),
                        (
                            "created_at_text",
                            models.CharField(max_length=64, verbose_name="createdAt (as sent)"),
                        ),
                        (
                            "created_at",
                            models.DateTimeField(
                                default=django.utils.timezone.now, verbose_name="created at"
                            ),
                        ),
                        (
                            "updated_at",
                            models.DateTimeField(
                                default=django.utils.timezone.now, verbose_name="updated at"
                            ),
                        ),
                        (
                            "session",
                            models.OneToOneField(
                                on_delete=django.db.models.deletion.CASCADE,
                                related_name="mapping",
                                to="gateway.sessionentry",
                                verbose_name="session",
                            ),
                        ),
                    ],
                    options={
                        "verbose_name": "session mapping",
                        "verbose_name_plural": "session mappings",
                        "db_table": "xworkmate_sessionmapping",
                        "ordering": ("-updated_at",),
                        "constraints": [
                            models.CheckConstraint(
                                condition=models.Q(("updated_at__gte", models.F("created_at"))),
                                name="xworkmate_mapping_updated_after_created",
                            )
                        ],
                    },
                ),
                migrations.CreateModel(
                    name="TaskRun",
                    fields=[
                        (
                            "id",
                            models.BigAutoField(
                                auto_created=True,
                                primary_key=True,
                                serialize=False,
                                verbose_name="ID",
                            ),
                        ),
                        ("run_id", models.CharField(max_length=512, verbose_name="run id")),
                        (
                            "status",
                            models.CharField(
                                choices=[
                                    ("running", "running"),
                                    ("completed", "completed"),
                                    ("failed", "failed"),
                                ],
                                max_length=16,
                                verbose_name="status",
                            ),
                        ),
                        ("success", models.BooleanField(default=False, verbose_name="success")),
                        ("started_at", models.DateTimeField(verbose_name="started at")),
                        ("updated_at", models.DateTimeField(verbose_name="updated at")),
                        (
                            "completed_at",
                            models.DateTimeField(
                                blank=True, null=True, verbose_name="completed at"
                            ),
                        ),
                        ("output", models.TextField(blank=True, verbose_name="output")),
                        ("error", models.TextField(blank=True, verbose_name="error (redacted)")),
                        (
                            "evicted_at",
                            models.DateTimeField(
                                blank=True,
                                help_text="No longer among the session's newest runs the gateway shows.",
                                null=True,
                                verbose_name="moved to history at",
                            ),
                        ),
                        (
                            "session",
                            models.ForeignKey(
                                on_delete=django.db.models.deletion.CASCADE,
                                related_name="runs",
                                to="gateway.sessionentry",
                                verbose_name="session",
                            ),
                        ),
                    ],
                    options={
                        "verbose_name": "task run",
                        "verbose_name_plural": "task runs",
                        "db_table": "xworkmate_taskrun",
                        "ordering": ("-updated_at", "-id"),
                        "indexes": [
                            models.Index(
                                fields=["session", "-updated_at"], name="xworkmate_run_recent"
                            ),
                            models.Index(fields=["evicted_at"], name="xworkmate_run_evicted"),
                        ],
                        "constraints": [
                            models.UniqueConstraint(
                                condition=models.Q(("evicted_at__isnull", True)),
                                fields=("session", "run_id"),
                                name="xworkmate_run_visible_unique",
                            ),
                            models.CheckConstraint(
                                condition=models.Q(("updated_at__gte", models.F("started_at"))),
                                name="xworkmate_run_updated_after_started",
                            ),
                            models.CheckConstraint(
                                condition=models.Q(
                                    models.Q(
                                        ("completed_at__isnull", True),
                                        ("status", "running"),
                                        ("success", False),
                                    ),
                                    models.Q(
                                        ("completed_at__isnull", False),
                                        ("status", "completed"),
                                        ("success", True),
                                    ),
                                    models.Q(
                                        ("completed_at__isnull", False),
                                        ("status", "failed"),
                                        ("success", False),
                                    ),
                                    _connector="OR",
                                ),
                                name="xworkmate_run_status_consistent",
                            ),
                        ],
                    },
                ),
            ],
            database_operations=[],
        ),
        migrations.RunPython(_move_content_types, _restore_content_types),
    ]
