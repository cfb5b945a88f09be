"""D-K27: JSON log lines with the request id, session, run and task bound."""

from __future__ import annotations

import io
import json
import logging

from django.http import HttpResponse
from django.test import RequestFactory

from xworkmate.logs import ContextFilter, JsonFormatter, RequestIdMiddleware, bind, bound, unbind


def _logger() -> tuple[logging.Logger, io.StringIO]:
    out = io.StringIO()
    handler = logging.StreamHandler(out)
    handler.setFormatter(JsonFormatter())
    handler.addFilter(ContextFilter())
    logger = logging.getLogger("tests.json_logs")
    logger.handlers = [handler]
    logger.propagate = False
    logger.setLevel(logging.INFO)
    return logger, out


def test_a_line_carries_what_is_bound_and_nothing_after_unbinding():
    logger, out = _logger()
    tokens = bind(task_name="plans.tick", task_id="t-1")
    logger.warning("tick %s", "late")
    unbind(tokens)
    logger.info("after")
    first, second = (json.loads(line) for line in out.getvalue().splitlines())
    assert {k: first[k] for k in ("level", "logger", "message", "task_name", "task_id")} == {
        "level": "WARNING", "logger": "tests.json_logs", "message": "tick late",
        "task_name": "plans.tick", "task_id": "t-1",
    }
    assert "task_name" not in second and second["message"] == "after"


def test_the_middleware_binds_the_request_id_for_the_request_only():
    logger, out = _logger()

    def view(request):
        bind(session_key="agent:main:s1", run_id="r-1")  # as the authentication does
        logger.info("inside")
        return HttpResponse("ok")

    response = RequestIdMiddleware(view)(RequestFactory().get("/", HTTP_X_REQUEST_ID="req-7"))
    assert response["X-Request-ID"] == "req-7"
    line = json.loads(out.getvalue())
    assert (line["request_id"], line["session_key"], line["run_id"]) == ("req-7", "agent:main:s1", "r-1")
    assert bound() == {}
