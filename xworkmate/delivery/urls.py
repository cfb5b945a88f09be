"""URLs of the outbox: the record channel's fetch and acknowledge."""

from __future__ import annotations

from django.urls import URLPattern, path

from xworkmate.delivery import api

urlpatterns: list[URLPattern] = [
    path("api/delivery/pending", api.PendingMessagesApi.as_view(), name="delivery-pending"),
    path(
        "api/delivery/<int:message_id>/ack",
        api.AcknowledgeMessageApi.as_view(),
        name="delivery-ack",
    ),
]
