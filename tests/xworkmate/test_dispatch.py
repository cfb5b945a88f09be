"""The gateway envelope: success, contract errors, unknown methods, bad bodies."""

from __future__ import annotations

import json

import pytest
from django.test import override_settings

from tests.conftest import ApiClient
from xworkmate import methods as gateway
from xworkmate.lib.errors import InputError
from xworkmate.services import api_key_create


def test_it_wraps_a_payload_in_the_success_envelope(owner, test_methods):
    response = owner.post("/gateway/test.echo.read", {"a": 1})
    assert response.status_code == 200
    assert response.json() == {
        "ok": True,
        "payload": {"method": "test.echo.read", "params": {"a": 1}, "key": "owner"},
    }


def test_it_accepts_method_and_params_in_the_body(owner, test_methods):
    response = owner.post("/gateway", {"method": "test.echo.write", "params": {"b": [1]}})
    assert response.status_code == 200
    assert response.json()["payload"]["params"] == {"b": [1]}


def test_it_treats_an_empty_body_as_empty_params(owner, test_methods):
    response = owner.post("/gateway/test.echo.read", raw=b"")
    assert response.json()["payload"]["params"] == {}


def test_it_answers_404_for_an_unknown_method(owner):
    for response in (
        owner.post("/gateway/xworkmate.nope", {}),
        owner.post("/gateway", {"method": "xworkmate.nope"}),
    ):
        assert response.status_code == 404
        assert response.json() == {
            "ok": False,
            "error": {"code": "INVALID_REQUEST", "message": "unknown method: xworkmate.nope"},
        }


@pytest.mark.parametrize(
    ("raw", "message"),
    [
        (b"{", "request body is not valid JSON: Expecting property name enclosed in double quotes at line 1 column 2"),
        (b"[1, 2]", "request body must be a JSON object (got array)"),
        (b'"text"', "request body must be a JSON object (got string)"),
        (b"null", "request body must be a JSON object (got null)"),
        (b"\xff\xfe", "request body is not UTF-8 JSON: invalid start byte"),
    ],
)
def test_it_refuses_a_malformed_body(owner, test_methods, raw, message):
    response = owner.post("/gateway/test.echo.read", raw=raw)
    assert response.status_code == 400
    assert response.json() == {"ok": False, "error": {"code": "INVALID_REQUEST", "message": message}}


@pytest.mark.parametrize(
    ("body", "message"),
    [
        ({"params": {}}, "method: required, a non-empty string"),
        ({"method": "  "}, "method: required, a non-empty string"),
        ({"method": 3}, "method: required, a non-empty string"),
        ({"method": "test.echo.read", "params": [1]}, "params: must be a JSON object (got array)"),
    ],
)
def test_it_refuses_a_malformed_envelope(owner, test_methods, body, message):
    response = owner.post("/gateway", body)
    assert response.status_code == 400
    assert response.json()["error"] == {"code": "INVALID_REQUEST", "message": message}


@override_settings()
def test_it_refuses_an_oversize_body(owner, test_methods, settings):
    limit = settings.XWORKMATE.value("gateway", "max_body_bytes")
    body = json.dumps({"pad": "x" * limit}).encode()
    response = owner.post("/gateway/test.echo.read", raw=body)
    assert response.status_code == 400
    assert response.json()["error"] == {
        "code": "INVALID_REQUEST",
        "message": f"request body too large: limit is {limit} bytes (gateway.max_body_bytes)",
    }
    # Just under the limit still works.
    fits = json.dumps({"pad": "x" * (limit - 20)}).encode()
    assert owner.post("/gateway/test.echo.read", raw=fits).status_code == 200


def test_it_maps_contract_errors_to_400_and_409(owner, test_methods):
    invalid = owner.post("/gateway/test.echo.write", {"fail": "invalid"})
    assert invalid.status_code == 400
    assert invalid.json()["error"] == {
        "code": "INVALID_REQUEST", "message": "openclawSessionKey required",
    }
    conflict = owner.post("/gateway/test.echo.write", {"fail": "conflict"})
    assert conflict.status_code == 409
    assert conflict.json()["error"]["code"] == "CONFLICT"


def test_it_chooses_the_code_by_error_type_not_message_text_d_a5(owner, test_methods):
    # "conflict" in the message of a plain InputError is still INVALID_REQUEST.
    def handler(call):
        raise InputError("this mentions a conflict")

    gateway.register_method(gateway.GatewayMethod("test.words", handler, "gateway:read", "x"))
    try:
        response = owner.post("/gateway/test.words", {})
    finally:
        gateway.unregister_method("test.words")
    assert response.status_code == 400
    assert response.json()["error"]["code"] == "INVALID_REQUEST"


def test_it_keeps_registration_order_and_refuses_duplicates(test_methods):
    names = [m.name for m in gateway.registered_methods()]
    assert names[-2:] == test_methods
    with pytest.raises(ValueError, match="already registered"):
        gateway.register_method(
            gateway.GatewayMethod("test.echo.read", lambda call: {}, "gateway:read", "dup")
        )
    with pytest.raises(ValueError, match="scope must be one of gateway:read, gateway:write, plans:read"):
        gateway.register_method(gateway.GatewayMethod("test.bad", lambda call: {}, "weather:read", "x"))


def test_any_area_may_register_a_method(db):
    """The table serves every app (D-K1): a plans method needs plans:read, not a gateway scope."""
    method = gateway.GatewayMethod("test.plans.echo", lambda call: {"ok": 1}, "plans:read", "x")
    gateway.register_method(method)
    try:
        _, plans_token = api_key_create(name="plans-reader", scopes=["plans:read"])
        _, gateway_token = api_key_create(name="gateway-writer", scopes=["gateway:write"])
        assert ApiClient(plans_token).post("/gateway/test.plans.echo", {}).json() == {"ok": True, "payload": {"ok": 1}}
        refused = ApiClient(gateway_token).post("/gateway/test.plans.echo", {})
        assert refused.status_code == 403 and refused.json()["error"]["code"] == "FORBIDDEN"
    finally:
        gateway.unregister_method("test.plans.echo")


def test_case_123_a_bound_key_overrides_the_callers_scope():
    """§13.0 scopedGatewayParams: session, run, workspace and task directory of the key win."""
    from xworkmate.auth import Caller
    from xworkmate.methods import scoped_params
    from xworkmate.models import ApiKey

    agent = ApiKey(name="agent", bound_session_key="k1", bound_run_id="r1",
                   bound_artifact_scope="tasks/k1/r1")
    params = {"openclawSessionKey": "evil", "runId": "x", "maxFiles": 3}
    assert scoped_params(params, Caller.for_key(agent)) == {
        "openclawSessionKey": "k1", "runId": "r1", "maxFiles": 3, "artifactScope": "tasks/k1/r1",
    }
    assert scoped_params(params, Caller.for_key(ApiKey(name="bridge"))) == params
    assert scoped_params(params, Caller.command_line()) == params
