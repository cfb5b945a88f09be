"""The admin in Simplified Chinese (issue 9 §10): labels, the language picker, read-only pages."""

from __future__ import annotations

import re

import pytest
from django.apps import apps
from django.contrib import admin
from django.contrib.admin.utils import label_for_field
from django.contrib.auth.models import User
from django.utils import translation

from gateway.models import TaskRun
from xworkmate.models import ApiKey, PeriodicJobState

PROJECT_APPS = ("xworkmate", "delivery", "gateway", "artifacts", "plans", "longrun")
# Labels that read the same in both languages.
SAME_IN_BOTH = {"xworkmate", "ID"}


def _project_models():
    return [m for m in apps.get_models() if m._meta.app_label in PROJECT_APPS]


def _project_admins():
    return [(model, model_admin) for model, model_admin in admin.site._registry.items()
            if model._meta.app_label in PROJECT_APPS]


def _labels(model, model_admin, names) -> dict[str, str]:
    return {str(n): str(label_for_field(n, model, model_admin)) for n in names}


def _admin_label_sets(model, model_admin) -> list[dict[str, str]]:
    """The labels that show together: the list's columns, the detail page's fields."""
    return [
        _labels(model, model_admin, model_admin.list_display),
        _labels(model, model_admin, model_admin.get_fields(None)),
    ]


@pytest.mark.parametrize("language", ["zh-hans", "en"])
def test_no_two_fields_of_one_model_share_a_label(language):
    with translation.override(language):
        for model in _project_models():
            labels: dict[str, str] = {}
            for field in model._meta.get_fields():
                if not hasattr(field, "verbose_name") or field.auto_created:
                    continue
                label = str(field.verbose_name)
                assert label not in labels, (
                    f"{model.__name__}: {field.name} and {labels[label]} are both labelled {label!r}"
                )
                labels[label] = field.name


@pytest.mark.parametrize("language", ["zh-hans", "en"])
def test_no_two_admin_columns_share_a_label(language):
    with translation.override(language):
        for model, model_admin in _project_admins():
            for shown_together in _admin_label_sets(model, model_admin):
                labels: dict[str, str] = {}
                for name, label in shown_together.items():
                    assert label not in labels, (
                        f"{model.__name__}: {name} and {labels[label]} are both labelled {label!r}"
                    )
                    labels[label] = name


def test_every_admin_column_is_translated():
    for model, model_admin in _project_admins():
        with translation.override("en"):
            english = _admin_label_sets(model, model_admin)
        with translation.override("zh-hans"):
            chinese = _admin_label_sets(model, model_admin)
        for en, zh in zip(english, chinese, strict=True):
            untranslated = [en[n] for n in en if en[n] == zh[n] and en[n] not in SAME_IN_BOTH]
            assert untranslated == [], model.__name__


def test_the_run_times_have_their_own_chinese_labels():
    with translation.override("zh-hans"):
        labels = [str(TaskRun._meta.get_field(f).verbose_name)
                  for f in ("started_at", "updated_at", "completed_at", "evicted_at")]
    assert labels == ["开始时间", "更新时间", "完成时间", "移入历史时间"]


@pytest.fixture
def staff(client, db):
    user = User.objects.create_superuser("alice", "", "pw-alice-123")
    client.force_login(user)
    return user


@pytest.mark.parametrize("language", ["zh-hans", "en"])
def test_the_language_picker_names_each_language_in_its_own_language(client, staff, language):
    client.post("/admin/language/", {"language": language, "next": "/admin/"})
    page = client.get("/admin/").content.decode()
    picker = page.split('id="xworkmate-language-select"', 1)[1].split("</select>", 1)[0]
    options = re.findall(r'<option value="([^"]+)"[^>]*>([^<]+)</option>', picker)
    assert options == [("zh-hans", "简体中文"), ("en", "English")]
    assert "英语" not in picker


def test_the_periodic_jobs_page_is_in_chinese(client, staff):
    PeriodicJobState.objects.create(name="liveness", task="xworkmate.liveness", runs=3, failures=1)
    client.post("/admin/language/", {"language": "zh-hans", "next": "/admin/"})
    page = client.get("/admin/xworkmate/periodicjobstate/").content.decode()
    # (The admin capitalises a heading's first letter: "Beat".)
    for label in ("名称", "任务", "最近执行时间", "最近状态", "次数", "失败次数", "Beat 调度时间"):
        assert f">{label}<" in page, label
    for english in ("Last tick at", "Beat seen at", "Failures"):
        assert english not in page
    job = PeriodicJobState.objects.get()
    detail = client.get(f"/admin/xworkmate/periodicjobstate/{job.pk}/change/").content.decode()
    assert "最近错误" in detail and 'name="_save"' not in detail


def test_the_api_key_page_has_no_save_button(client, staff):
    client.post("/admin/xworkmate/apikey/add/", {"name": "bridge", "scopes": ["gateway:read"]})
    key = ApiKey.objects.get(name="bridge")
    detail = client.get(f"/admin/xworkmate/apikey/{key.pk}/change/")
    page = detail.content.decode()
    assert detail.status_code == 200 and key.prefix in page
    assert 'name="_save"' not in page and 'name="_continue"' not in page
    assert client.post(f"/admin/xworkmate/apikey/{key.pk}/change/", {"name": "x"}).status_code == 403
    assert ApiKey.objects.get(pk=key.pk).name == "bridge"
    # The list keeps its revoke action.
    assert "revoke_keys" in client.get("/admin/xworkmate/apikey/").content.decode()
