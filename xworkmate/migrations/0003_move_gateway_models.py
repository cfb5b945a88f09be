"""The gateway models moved to the `gateway` app (D-K4): forgotten here, state only.

The tables stay where they are, under their `xworkmate_` names; the gateway
app's 0001 takes them over in its own migration state. Nothing is dropped.
"""

from django.db import migrations


class Migration(migrations.Migration):
    dependencies = [
        ("xworkmate", "0002_gateway_sessions_runs"),
        ("gateway", "0001_initial"),
    ]

    operations = [
        migrations.SeparateDatabaseAndState(
            state_operations=[
                migrations.DeleteModel(name="NativeTask"),
                migrations.RemoveField(model_name="taskrun", name="session"),
                migrations.DeleteModel(name="SessionMapping"),
                migrations.DeleteModel(name="SessionEntry"),
                migrations.DeleteModel(name="TaskRun"),
            ],
            database_operations=[],
        ),
    ]
