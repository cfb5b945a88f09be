"""The OpenAPI schema covers every endpoint, one path per registered gateway method."""

from __future__ import annotations

import importlib
import math
import re
from typing import Any
from urllib.parse import urlencode

import pytest
from django.urls import clear_url_caches
from hypothesis import given
from hypothesis import settings as hypothesis_settings
from hypothesis import strategies as st

from artifacts.engine.coerce import js_number, js_parse_int
from artifacts.engine.schema import NUMERIC_STRING_PATTERN
from xworkmate import methods as gateway
from xworkmate.lib.jstext import NOT_BLANK_PATTERN, js_trim
from xworkmate.openapi import ANY_BODY


@pytest.fixture
def urls_with_test_methods(test_methods, settings):
    import xworkmate.urls

    importlib.reload(xworkmate.urls)  # the URLconf builds a path per registered method
    clear_url_caches()
    yield test_methods
    for name in test_methods:
        gateway.unregister_method(name)
    importlib.reload(xworkmate.urls)
    clear_url_caches()


def test_the_schema_documents_the_gateway_and_each_method(reader, urls_with_test_methods):
    response = reader.get("/api/schema/?format=json")
    assert response.status_code == 200
    schema = response.json()
    paths = schema["paths"]
    assert "/gateway" in paths and "/gateway/{method}" in paths
    for name in urls_with_test_methods:
        operation = paths[f"/gateway/{name}"]["post"]
        assert operation["summary"].startswith("echo")
        # The statuses the method answers (echo declares its 409); its own path never 404s.
        assert set(operation["responses"]) >= {"200", "400", "401", "403", "409", "500"}
        assert "404" not in operation["responses"]
    for generic in (paths["/gateway"]["post"], paths["/gateway/{method}"]["post"]):
        assert set(generic["responses"]) >= {"200", "400", "401", "403", "404", "409", "500"}
    assert "ApiKey" in schema["components"]["securitySchemes"]
    # The method answers at its documented path.
    assert reader.post("/gateway/test.echo.read", {}).json()["ok"] is True


def test_the_docs_page_is_self_hosted(client, db):
    from django.contrib.auth.models import User

    client.force_login(User.objects.create_superuser("docs", "", "pw-docs-1234"))
    page = client.get("/api/docs/").content.decode()
    assert "swagger-ui" in page and "cdn.jsdelivr.net" not in page


def test_the_schema_documents_the_rest_endpoints(reader):
    paths = reader.get("/api/schema/?format=json").json()["paths"]
    preview = paths["/api/plans/schedule-preview"]["post"]
    assert preview["operationId"] == "plans_schedule_preview"
    assert "plans:read" in preview["description"]


@pytest.mark.parametrize("version", ["\r", "\rĀ", "\n1", "Ā"])
def test_a_version_in_the_query_is_not_written_into_a_header(reader, version):
    # drf-spectacular copied `?version=` into Content-Disposition, where Django
    # refuses a CR or a character outside latin-1: a 500 for a query.
    response = reader.get("/api/schema/?" + urlencode({"version": version}))
    assert response.status_code == 200
    assert response["Content-Disposition"] == 'inline; filename="xworkmate API.yaml"'


def test_the_schema_documents_the_six_contract_methods_with_their_params(reader):
    paths = reader.get("/api/schema/?format=json").json()["paths"]
    contract = [
        "xworkmate.session.prepare", "xworkmate.tasks.get", "xworkmate.artifacts.export",
        "xworkmate.artifacts.collect-and-snapshot", "xworkmate.artifacts.list",
        "xworkmate.artifacts.read",
    ]
    for name in contract:
        operation = paths[f"/gateway/{name}"]["post"]
        body = operation["requestBody"]["content"]["application/json"]["schema"]
        assert "runId" in body["properties"], name
    prepare = paths["/gateway/xworkmate.session.prepare"]["post"]["requestBody"]
    assert prepare["required"] is True
    params = prepare["content"]["application/json"]["schema"]
    # The mapping fields at the top level, or in an `xworkmate` / `xworkmateMetadata`
    # object (§13.1): the top-level form requires all three, each envelope appThreadKey.
    top_level, *envelopes = params["oneOf"]
    assert top_level["required"] == ["appThreadKey", "openclawSessionKey", "runId"]
    assert params["required"] == ["runId"]
    for envelope, name in zip(envelopes, ("xworkmate", "xworkmateMetadata"), strict=True):
        assert envelope["required"] == [name]
        assert envelope["properties"][name]["required"] == ["appThreadKey"]
    for rest in ("/api/artifacts/download", "/api/artifacts/tool", "/api/gateway/native-tasks",
                 "/api/gateway/hooks/agent_end", "/api/gateway/hooks/session_start"):
        assert rest in paths, rest


def test_the_schema_generates_without_warnings(transactional_db, tmp_path):
    """drf-spectacular's own validation, failing on any warning (name clashes, unknown auth)."""
    from tests.conftest import manage

    result = manage("spectacular", "--validate", "--fail-on-warn", "--file", str(tmp_path / "s.yaml"))
    assert result.returncode == 0, result.stderr
    assert "ApiKey" in (tmp_path / "s.yaml").read_text()


# --- the schema's string rules are the service's own -------------------------------------

_TEXT = st.text(
    st.sampled_from("09.+-eExXoObBaf_Infity٣\x00 \t\n\u00a0\ufeff\u3000\x1c\x85") | st.characters(),
    max_size=12,
)


@given(_TEXT)
def test_a_numeric_string_of_the_schema_is_one_javascript_reads_as_a_number(text):
    """D-A8: the engine takes exactly the strings the schema's pattern describes."""
    described = re.search(NUMERIC_STRING_PATTERN, text) is not None
    assert described == (not math.isnan(js_number(text))), repr(text)


def test_unicode_digits_are_no_number_as_in_javascript():
    assert math.isnan(js_number("٣")) and math.isnan(js_parse_int("٣"))


@given(_TEXT)
def test_a_not_blank_string_of_the_schema_is_one_the_service_keeps(text):
    """Keys are trimmed as JavaScript trims (D-K7); a NUL is refused everywhere."""
    described = re.search(NOT_BLANK_PATTERN, text) is not None
    assert described == (js_trim(text) != "" and "\x00" not in text), repr(text)


# --- what the schema states of every request (D-K15) -------------------------------------


def _request_schemas(schema: dict[str, Any]) -> list[dict[str, Any]]:
    """Every schema a request's value is checked against (bodies, query and path
    parameters), each component once; not inside `not`, which inverts what it holds."""
    components = schema["components"]["schemas"]
    found: list[dict[str, Any]] = []
    seen: set[str] = set()

    def walk(node: object) -> None:
        if not isinstance(node, dict) or node.get(ANY_BODY):
            return
        if "$ref" in node:
            name = node["$ref"].rsplit("/", 1)[-1]
            if name not in seen:
                seen.add(name)
                walk(components[name])
            return
        found.append(node)
        for member in node.get("properties", {}).values():
            walk(member)
        for keyword in ("items", "additionalProperties"):
            walk(node.get(keyword))
        for keyword in ("oneOf", "anyOf", "allOf"):
            for branch in node.get(keyword, ()):
                walk(branch)

    for operations in schema["paths"].values():
        for operation in operations.values():
            for parameter in operation.get("parameters", ()):
                if parameter["in"] in ("query", "path"):
                    walk(parameter["schema"])
            for media in operation.get("requestBody", {}).get("content", {}).values():
                walk(media["schema"])
    return found


def _admits_any_value(node: dict[str, Any]) -> bool:
    shaping = ("$ref", "type", "enum", "properties", "items", "oneOf", "anyOf", "allOf")
    return not any(keyword in node for keyword in shaping)


def test_it_states_that_no_string_of_a_request_holds_a_nul(reader):
    schema = reader.get("/api/schema/?format=json").json()
    nodes = _request_schemas(schema)
    strings = [n for n in nodes if n.get("type") == "string" and "enum" not in n]
    assert len(strings) > 100
    assert [n for n in strings if "pattern" not in n] == []
    # A value of any type, or a member the schema does not name, is a NUL-free one.
    assert [n for n in nodes if _admits_any_value(n)] == []
    objects = [n for n in nodes if n.get("type") == "object" or "properties" in n]
    assert [n for n in objects if n.get("additionalProperties", True) in (True, {})] == []

    for pattern in sorted({n["pattern"] for n in strings}):
        _admits_no_nul(pattern)


def _admits_no_nul(pattern: str) -> None:
    """No string the pattern matches (as JSON Schema's `pattern` searches) holds a NUL:
    none it produces, and none made of one of those with a NUL put in anywhere."""

    @hypothesis_settings(max_examples=50, deadline=None)
    @given(st.from_regex(pattern))
    def check(text: str) -> None:
        assert "\x00" not in text, pattern
        for at in range(len(text) + 1):
            assert not re.search(pattern, f"{text[:at]}\x00{text[at:]}"), (pattern, text, at)

    check()


def test_it_leaves_the_hooks_bodies_open_as_the_hooks_answer_any_body(reader):
    paths = reader.get("/api/schema/?format=json").json()["paths"]
    for hook in ("session_start", "agent_end"):
        body = paths[f"/api/gateway/hooks/{hook}"]["post"]["requestBody"]
        schema = body["content"]["application/json"]["schema"]
        assert schema[ANY_BODY] is True and "additionalProperties" not in schema


def test_it_documents_the_web_servers_refusals_on_every_operation(reader):
    paths = reader.get("/api/schema/?format=json").json()["paths"]
    for path, operations in paths.items():
        for method, operation in operations.items():
            for status in ("414", "431"):
                answer = operation["responses"][status]["content"]["application/json"]
                assert answer["schema"]["required"] == ["ok", "error"], (method, path)
