"""The declarative config: defaults, every validation rule, env overrides, masking."""

from __future__ import annotations

import tomllib
from datetime import timedelta
from pathlib import Path

import pytest

from plans.conf import plans_workspace
from tests.conftest import ROOT
from xworkmate.config import (
    MASK,
    ConfigError,
    effective_config,
)
from xworkmate.config.load import default_home
from xworkmate.lib.durations import parse_duration
from xworkmate.periodic import configured_jobs, default_jobs
from xworkmate.wiring import SCHEMA, load_config, parse_config_text

HOME = Path("/tmp/xworkmate-config-test-home")


def parse(text: str, env: dict[str, str] | None = None):
    return parse_config_text(text, env=env or {}, home=HOME)


def problems(text: str, env: dict[str, str] | None = None) -> list[str]:
    with pytest.raises(ConfigError) as info:
        # The file alone, then merged with the apps' default jobs (D-K5).
        configured_jobs(parse(text, env))
    return [p.removeprefix("<text>: ") for p in info.value.problems]


EXPECTED_DEFAULTS = {
    ("service", "language_code"): "zh-hans",
    ("service", "time_zone"): "Asia/Shanghai",
    ("service", "allowed_hosts"): ("127.0.0.1", "localhost"),
    ("service", "debug"): False,
    ("service", "secret_key"): "",
    ("service", "admin_username"): "admin",
    ("service", "web_workers"): 0,
    ("service", "beat_lease"): timedelta(seconds=30),
    ("service", "metrics_networks"): (),
    ("service", "log_format"): "text",
    ("admin", "login_failure_limit"): 5,
    ("admin", "login_cooloff"): timedelta(minutes=15),
    ("admin", "client_ip_header"): "REMOTE_ADDR",
    ("database", "url"): "",
    ("broker", "url"): "",
    ("gateway", "max_body_bytes"): 1048576,
    ("gateway", "run_history_retention"): timedelta(hours=720),
    ("workspace", "roots"): ("~/.openclaw/workspace",),
    ("workspace", "hosts"): {},
    ("workspace", "this_host"): "",
    ("workspace", "host_wait"): timedelta(seconds=10),
    ("artifacts", "max_files"): 64,
    ("artifacts", "max_inline_bytes"): 10485760,
    ("artifacts", "snapshot_max_files"): 64,
    ("artifacts", "ref_signing_secret"): "",
    ("artifacts", "scan_shared_media_roots"): False,
    ("artifacts", "openclaw_media_dir"): "~/.openclaw/media",
    ("artifacts", "openclaw_tmp_dir"): "",
    ("artifacts", "max_inline_total_bytes"): 33554432,
    ("artifacts", "hash_budget"): timedelta(seconds=10),
    ("plans", "workspace"): "",
    ("plans", "time_zone"): "Asia/Shanghai",
    ("plans", "min_every"): timedelta(seconds=1),
    ("plans", "confirmation_phrases"): (
        "确认", "确认创建", "确认执行", "可以创建定时任务了", "按这个建 Cron", "按这个建Cron",
        "同意", "就这样",
    ),
    ("plans", "confirmation_expiry"): timedelta(days=7),
    ("longrun", "trigger_phrases"): ("长任务模式", "进入长任务模式"),
    ("delivery", "max_body_bytes"): 65536,
    ("delivery", "retry_first"): timedelta(seconds=30),
    ("delivery", "retry_max"): timedelta(hours=1),
    ("delivery", "max_attempts"): 10,
    ("delivery", "dispatch_grace"): timedelta(seconds=30),
    ("delivery", "batch_size"): 100,
    ("delivery", "sends_in_flight"): 32,
    ("delivery", "breaker_failures"): 5,
    ("delivery", "breaker_cooldown"): timedelta(minutes=5),
    ("longrun", "progress_every"): timedelta(minutes=3),
    ("longrun", "idle"): timedelta(seconds=60),
    ("longrun", "stale"): timedelta(minutes=10),
    ("longrun", "unknown_cooldown"): timedelta(minutes=2),
    ("longrun", "blocked_after_failures"): 3,
    ("longrun", "auto_resume"): False,
    ("longrun", "time_zone"): "Asia/Shanghai",
    ("longrun", "archive_after"): timedelta(days=7),
    ("longrun", "max_live_tasks_per_session"): 20,
    ("longrun", "max_resumes_per_day"): 24,
    ("longrun", "escalate_after_recoveries"): 3,
}


def test_it_has_the_documented_default_for_every_key():
    config = parse("")
    schema_keys = {(s, k) for s, keys in SCHEMA.items() for k in keys}
    assert schema_keys == set(EXPECTED_DEFAULTS)
    for (section, key), expected in EXPECTED_DEFAULTS.items():
        assert config.value(section, key) == expected, f"{section}.{key}"
    # The built-in record channel, and every purpose routed to it.
    assert [(c.name, c.kind) for c in config.delivery_channels] == [("record", "record")]
    assert set(config.delivery_routes.values()) == {"record"}
    assert [(j.name, j.task, j.every, j.cron, j.enabled) for j in configured_jobs(config)] == [
        ("liveness", "xworkmate.liveness", timedelta(seconds=30), None, True),
        ("delivery-dispatch", "xworkmate.delivery.dispatch", timedelta(seconds=10), None, True),
        ("task-run-history-purge", "xworkmate.purge_task_run_history", timedelta(hours=1), None, False),
        ("plans-tick", "plans.tick", timedelta(seconds=15), None, True),
        ("plans-reconcile", "plans.reconcile", timedelta(minutes=5), None, True),
        ("longrun-foreground", "longrun.foreground_due", timedelta(seconds=60), None, True),
        ("longrun-keepalive", "longrun.keepalive", timedelta(seconds=60), None, True),
        ("longrun-watchdog", "longrun.watchdog", timedelta(minutes=5), None, True),
        ("longrun-cleanup", "longrun.cleanup", timedelta(days=1), None, True),
    ]
    assert config.database_url == f"sqlite:///{HOME}/xworkmate.sqlite3"
    assert config.broker_url == "filesystem://"
    assert config.broker_folder == HOME / "broker"
    assert plans_workspace(config) == Path("~/.openclaw/workspace").expanduser()


def test_the_example_file_documents_every_key_with_its_default():
    text = (ROOT / "xworkmate.example.toml").read_text(encoding="utf-8")
    raw = tomllib.loads(text)
    for section, keys in SCHEMA.items():
        # A key with an environment variable is shown commented out (D-K21).
        with_env = {key for key, spec in keys.items() if spec.env}
        assert set(raw[section]) == set(keys) - with_env, section
        for key in with_env:
            assert f'# {key} = ""' in text, f"{section}.{key}"
    example = parse(text)
    default = parse("")
    assert example.values == default.values
    for job in default_jobs():  # the apps' default jobs are described in the comments
        assert f"task = \"{job.task}\"" in text


def test_it_reads_a_full_file(tmp_path):
    path = tmp_path / "x.toml"
    path.write_text(
        """
[service]
language_code = "EN"
time_zone = "America/New_York"
[database]
url = "postgresql://u:p@db:5432/xw"
[workspace]
roots = ["/srv/ws", "/srv/other"]
[longrun]
progress_every = "1h30m"
[[delivery.channels]]
name = "ops"
kind = "webhook"
url = "https://hooks.example.org/x"
read_timeout = "5s"
[delivery.routes]
"longrun.progress" = "ops"
[[periodic_jobs]]
name = "liveness"
cron = "*/5 * * * *"
[[periodic_jobs]]
name = "nightly.report"
task = "xworkmate.liveness"
every = "2h"
enabled = false
""",
        encoding="utf-8",
    )
    config = load_config(path, env={}, cwd=tmp_path)
    assert config.source == str(path)
    assert config.value("service", "language_code") == "en"
    assert config.database_url == "postgresql://u:p@db:5432/xw"
    assert config.workspace_roots == ("/srv/ws", "/srv/other")
    assert plans_workspace(config) == Path("/srv/ws")
    assert config.value("longrun", "progress_every") == timedelta(hours=1, minutes=30)
    assert config.delivery_channels[1].read_timeout == timedelta(seconds=5)
    assert config.delivery_routes["longrun.progress"] == "ops"
    assert config.delivery_routes["plans.run"] == "record"
    jobs = {j.name: j for j in configured_jobs(config)}
    # Setting cron on the built-in job replaces its every; the task is kept.
    assert (jobs["liveness"].task, jobs["liveness"].every, jobs["liveness"].cron) == (
        "xworkmate.liveness", None, "*/5 * * * *",
    )
    assert jobs["nightly.report"].enabled is False


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("[nope]\nx = 1", "nope: unknown section"),
        ("[service]\ncolour = 'red'", "service.colour: unknown key (known: language_code"),
        ("service = 3", "service: must be a table ([service])"),
        ("[service]\nlanguage_code = 'fr'", "service.language_code: must be one of zh-hans, en (got 'fr')"),
        ("[service]\ntime_zone = 'Mars/Olympus'", "service.time_zone: 'Mars/Olympus' is not an IANA time zone"),
        ("[plans]\ntime_zone = ''", "plans.time_zone: '' is not an IANA time zone"),
        ("[service]\ndebug = 'yes'", "service.debug: must be true or false (got 'yes')"),
        ("[service]\nallowed_hosts = []", "service.allowed_hosts: must list at least one entry"),
        ("[service]\nallowed_hosts = ['a', 3]", "service.allowed_hosts: must be a list of non-empty strings"),
        ("[service]\nadmin_username = ' '", "service.admin_username: must not be empty"),
        ("[service]\nsecret_key = 5", "service.secret_key: must be a string (got 5)"),
        ("[database]\nurl = 'mysql://x/y'", "database.url: must be a URL with scheme sqlite://, postgres://, postgresql:// (got 'mysql')"),
        ("[database]\nurl = 'postgresql://host:5432'", "database.url: must name the database"),
        ("[broker]\nurl = 'kafka://x'", "broker.url: must be a URL with scheme filesystem://"),
        ("[gateway]\nmax_body_bytes = 10", "gateway.max_body_bytes: must be an integer >= 1024 (got 10)"),
        ("[artifacts]\nmax_files = 0", "artifacts.max_files: must be an integer >= 1 (got 0)"),
        ("[artifacts]\nmax_files = true", "artifacts.max_files: must be an integer >= 1 (got true)"),
        ("[artifacts]\nmax_files = 1001", "artifacts.max_files: must be an integer <= 1000 (got 1001)"),
        (
            "[longrun]\nmax_live_tasks_per_session = 0",
            "longrun.max_live_tasks_per_session: must be an integer >= 1 (got 0)",
        ),
        ("[artifacts]\nmax_inline_bytes = 1.5", "artifacts.max_inline_bytes: must be an integer >= 0 (got 1.5)"),
        ("[artifacts]\nscan_shared_media_roots = 1", "artifacts.scan_shared_media_roots: must be true or false"),
        ("[workspace]\nroots = '~/ws'", "workspace.roots: must be a list of non-empty strings (got '~/ws')"),
        ("[longrun]\nprogress_every = '5 min'", "longrun.progress_every: '5 min' is not a duration like 90s"),
        ("[longrun]\nidle = '0s'", "longrun.idle: '0s' must be longer than zero"),
        ("[longrun]\nstale = 10", "longrun.stale: must be a string (got 10)"),
        ("[longrun]\nblocked_after_failures = 0", "longrun.blocked_after_failures: must be an integer >= 1"),
        ("[longrun]\ntrigger_phrases = []", "longrun.trigger_phrases: must list at least one entry"),
        ("[[delivery.channels]]\nkind = 'webhook'\nurl = 'https://x.org'", "delivery.channels[0].name: required"),
        ("[[delivery.channels]]\nname = 'a'\nkind = 'webhook'\nurl = 'ftp://x'", "delivery.channels[0].url: must be an http:// or https:// URL"),
        ("[[delivery.channels]]\nname = 'a'\nkind = 'webhook'", "delivery.channels[0].url: required for a webhook channel"),
        ("[[delivery.channels]]\nname = 'a'\nurl = 'https://x'\nkind = 'sms'", "delivery.channels[0].kind: must be one of record, webhook, openclaw (got 'sms')"),
        ("[[delivery.channels]]\nname = 'a'\nkind = 'webhook'\nurl = 'https://x'\ncolour = 1", "delivery.channels[0].colour: unknown key"),
        ("[[delivery.channels]]\nname = 'a'\nkind = 'webhook'\nurl = 'https://x'\nbinary = 'x'", "delivery.channels[0].binary: not a key of a webhook channel"),
        ("[[delivery.channels]]\nname = 'a'\nkind = 'webhook'\nurl = 'https://x'\n[[delivery.channels]]\nname = 'a'\nkind = 'webhook'\nurl = 'https://y'", "delivery.channels[1].name: duplicate channel name 'a'"),
        ("[[delivery.channels]]\nname = 'record'\nkind = 'record'", "delivery.channels[0].name: duplicate channel name 'record'"),
        ("[[delivery.channels]]\nname = 'oc'\nkind = 'openclaw'\nbinary = '/nonexistent/openclaw'\nsessions_index = '/dev/null'", "delivery.channels[0].binary: no executable '/nonexistent/openclaw'"),
        ("[[delivery.channels]]\nname = 'oc'\nkind = 'openclaw'\nbinary = 'sh'\nsessions_index = '/nonexistent/sessions.json'", "delivery.channels[0].sessions_index: cannot read /nonexistent/sessions.json"),
        ("[delivery]\nfoo = 1", "delivery.foo: unknown key"),
        ("[delivery.routes]\n'plans.run' = 'nowhere'", "delivery.routes.plans.run: no channel named 'nowhere' (channels: record)"),
        ("[delivery.routes]\n'plans.walk' = 'record'", "delivery.routes.plans.walk: unknown purpose (known: plans.run, longrun.progress, longrun.resume, longrun.recovery, longrun.escalation)"),
        ("[delivery]\nmax_attempts = 0", "delivery.max_attempts: must be an integer >= 1 (got 0)"),
        ("[delivery]\nbatch_size = 0", "delivery.batch_size: must be an integer >= 1 (got 0)"),
        ("[[periodic_jobs]]\nname = 'x'\nevery = '1m'", "periodic_jobs[x].task: required"),
        ("[[periodic_jobs]]\ntask = 'a.b'\nevery = '1m'", "periodic_jobs[0].name: required"),
        ("[[periodic_jobs]]\nname = 'Bad Name'\ntask = 'a.b'\nevery = '1m'", "periodic_jobs[0].name: must be lowercase letters"),
        ("[[periodic_jobs]]\nname = 'x'\ntask = 'a.b'", "periodic_jobs[x]: set exactly one of every or cron"),
        ("[[periodic_jobs]]\nname = 'x'\ntask = 'a.b'\nevery = '1m'\ncron = '* * * * *'", "periodic_jobs[x]: set exactly one of every or cron"),
        ("[[periodic_jobs]]\nname = 'x'\ntask = 'nodots'\nevery = '1m'", "periodic_jobs[x].task: must be a dotted Celery task name"),
        ("[[periodic_jobs]]\nname = 'x'\ntask = 'a.b'\nevery = '1 minute'", "periodic_jobs[0].every: '1 minute' is not a duration"),
        ("[[periodic_jobs]]\nname = 'x'\ntask = 'a.b'\ncron = '61 * * * *'", "periodic_jobs[0].cron: is not a valid cron expression"),
        ("[[periodic_jobs]]\nname = 'x'\ntask = 'a.b'\ncron = '* * *'", "periodic_jobs[0].cron: must have 5 fields"),
        ("[[periodic_jobs]]\nname = 'x'\ntask = 'a.b'\nevery = '1m'\n[[periodic_jobs]]\nname = 'x'\ntask = 'a.c'\nevery = '1m'", "periodic_jobs[1].name: duplicate job name 'x'"),
        ("periodic_jobs = 3", "periodic_jobs: must be an array of tables"),
    ],
)
def test_it_names_the_key_and_rule_of_every_problem(text, expected):
    found = problems(text)
    assert any(p.startswith(expected) for p in found), found


def test_it_reports_every_problem_at_once():
    found = problems("[service]\ndebug = 1\n[artifacts]\nmax_files = -1\n[longrun]\nidle = 'x'")
    assert [p.split(":")[0] for p in found] == [
        "service.debug", "artifacts.max_files", "longrun.idle",
    ]


def test_it_names_the_file_in_syntax_and_missing_file_errors(tmp_path):
    broken = tmp_path / "broken.toml"
    broken.write_text("[service\n", encoding="utf-8")
    with pytest.raises(ConfigError, match=rf"^{broken}: not valid TOML"):
        load_config(broken, env={}, cwd=tmp_path)
    with pytest.raises(ConfigError, match="XWORKMATE_CONFIG: config file not found: /nope.toml"):
        load_config(env={"XWORKMATE_CONFIG": "/nope.toml"}, cwd=tmp_path)
    # A file named by the caller (`config --check FILE`) is named as such (issue 22).
    with pytest.raises(ConfigError, match=r"^/nope.toml: config file not found$"):
        load_config(Path("/nope.toml"), env={"XWORKMATE_CONFIG": "/other.toml"}, cwd=tmp_path)


def test_it_finds_the_file_from_env_then_cwd_then_defaults(tmp_path):
    assert load_config(env={}, cwd=tmp_path).source == "built-in defaults"
    (tmp_path / "xworkmate.toml").write_text("[service]\ndebug = true\n", encoding="utf-8")
    assert load_config(env={}, cwd=tmp_path).value("service", "debug") is True
    other = tmp_path / "other.toml"
    other.write_text("", encoding="utf-8")
    from_env = load_config(env={"XWORKMATE_CONFIG": str(other)}, cwd=tmp_path)
    assert from_env.source == str(other) and from_env.value("service", "debug") is False


def test_it_resolves_the_data_home(tmp_path):
    # Unset: the checkout's var, wherever the command runs (issue 22).
    assert load_config(env={}, cwd=tmp_path).home == ROOT / "var"
    # An installed package (no checkout around the code): the user's data folder.
    site = tmp_path / "site-packages"
    site.mkdir()
    assert default_home({"XDG_DATA_HOME": str(tmp_path / "d")}, site) == tmp_path / "d" / "xworkmate"
    assert default_home({}, site) == Path("~/.local/share/xworkmate").expanduser()
    assert load_config(env={"XWORKMATE_HOME": "data"}, cwd=tmp_path).home == tmp_path / "data"
    assert load_config(env={"XWORKMATE_HOME": "/srv/x"}, cwd=tmp_path).home == Path("/srv/x")


ENV = {
    "DATABASE_URL": "postgresql://app:pw@db/xw",
    "CELERY_BROKER_URL": "redis://:rpw@cache:6379/0",
    "XWORKMATE_ARTIFACT_REF_SIGNING_SECRET": "from-env",
    "SECRET_KEY": "django-from-env",
}


def test_it_takes_urls_and_secrets_from_the_environment():
    config = parse("", ENV)
    assert config.database_url == "postgresql://app:pw@db/xw"
    assert config.broker_url == "redis://:rpw@cache:6379/0"
    assert config.value("artifacts", "ref_signing_secret") == "from-env"
    assert config.value("service", "secret_key") == "django-from-env"
    assert config.from_env == {
        "database.url", "broker.url", "artifacts.ref_signing_secret", "service.secret_key",
    }


def test_an_empty_value_in_the_file_does_not_mask_the_environment_d_k21():
    text = '[database]\nurl = ""\n[broker]\nurl = ""\n[service]\nsecret_key = ""\n'
    config = parse(text + '[artifacts]\nref_signing_secret = ""\n', ENV)
    assert config.database_url == "postgresql://app:pw@db/xw"
    assert config.broker_url == "redis://:rpw@cache:6379/0"
    assert config.value("service", "secret_key") == "django-from-env"
    assert config.value("artifacts", "ref_signing_secret") == "from-env"
    assert config.source_of("database.url") == "environment"
    # Without the variable, the empty value is the file's (the embedded default).
    alone = parse(text, {})
    assert alone.database_url.startswith("sqlite:///")
    assert alone.source_of("database.url") == "file"


def test_the_example_file_copied_as_it_is_keeps_the_environment(tmp_path):
    text = (ROOT / "xworkmate.example.toml").read_text(encoding="utf-8")
    config = parse(text, ENV)
    assert config.database_url == "postgresql://app:pw@db/xw"
    assert config.broker_url == "redis://:rpw@cache:6379/0"
    assert config.value("artifacts", "ref_signing_secret") == "from-env"


def test_the_shown_config_says_where_each_value_came_from():
    config = parse('[service]\ndebug = true\n', ENV)
    shown = effective_config(config, [])
    assert shown["sources"]["service.debug"] == "file"
    assert shown["sources"]["database.url"] == "environment"
    assert shown["sources"]["longrun.idle"] == "default"
    assert set(shown["sources"]) == {f"{s}.{k}" for s, keys in SCHEMA.items() for k in keys}


def test_the_file_wins_over_the_environment_d_a10():
    config = parse('[artifacts]\nref_signing_secret = "from-file"\n', ENV)
    assert config.value("artifacts", "ref_signing_secret") == "from-file"
    assert "artifacts.ref_signing_secret" not in config.from_env


def test_it_validates_values_from_the_environment_and_says_so():
    found = problems("", {"DATABASE_URL": "mysql://x/y"})
    assert found[0].startswith("database.url (from DATABASE_URL): must be a URL with scheme")


def test_it_masks_secrets_when_showing_the_config():
    config = parse('[[delivery.channels]]\nname = "a"\nkind = "webhook"\nurl = "https://x.org"\nsecret = "s3"\n', ENV)
    shown = effective_config(config, configured_jobs(config))
    text = repr(shown)
    for secret in ("pw", "rpw", "from-env", "django-from-env", "s3"):
        assert f"'{secret}'" not in text and f":{secret}@" not in text
    assert shown["database"]["url"] == f"postgresql://app:{MASK}@db/xw"
    assert shown["broker"]["effective_url"] == f"redis://:{MASK}@cache:6379/0"
    assert shown["artifacts"]["ref_signing_secret"] == MASK
    assert shown["service"]["secret_key"] == MASK
    assert shown["delivery"]["channels"][1]["secret"] == MASK
    assert shown["longrun"]["progress_every"] == "3m"
    unmasked = effective_config(config, (), mask_secrets=False)
    assert unmasked["artifacts"]["ref_signing_secret"] == "from-env"
    # An empty secret stays visibly empty rather than pretending to be set.
    assert effective_config(parse(""), ())["artifacts"]["ref_signing_secret"] == ""


def test_durations_round_trip_through_the_shown_config():
    config = parse('[longrun]\nstale = "1h30m15s"\n')
    shown = effective_config(config, ())["longrun"]["stale"]
    assert parse_duration(shown) == config.value("longrun", "stale")


def test_a_route_to_a_channel_that_failed_its_own_check_is_not_a_second_problem():
    """Issue 22: one line for the broken channel, not one more for every route naming it."""
    text = (
        '[[delivery.channels]]\nname = "ops"\nkind = "webhook"\nurl = "ftp://x"\n'
        '[delivery.routes]\n"longrun.progress" = "ops"\n"plans.run" = "ops"\n'
        '"longrun.resume" = "missing"\n'
    )
    found = problems(text)
    assert [p for p in found if p.startswith("delivery.channels[0]")] != []
    assert not [p for p in found if "'ops'" in p and p.startswith("delivery.routes")]
    # A channel nobody declared is still named.
    assert [p for p in found if p.startswith('delivery.routes.longrun.resume: no channel named')]
