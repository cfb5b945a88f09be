"""The API's side of bounded lists (D-K13): the page a request asks for, and its documentation.

Every list endpoint reads `limit` (and `offset`) through `page_of`, so a limit
out of range is refused the same way everywhere (400, naming the parameter
and the rule), and documents them with `page_parameters`, so the schema's
`maximum` is the one the view enforces. How an answer says where the next
page starts depends on its shape: a JSON object that is the service's own
gets `Page.fields` (`total`, `offset`, `limit`, `hasMore`, `nextOffset`);
an answer whose body is fixed by a contract (long-run mode's, the original
scripts' output) carries the same in the headers `NEXT_OFFSET_HEADER` and
`TOTAL_HEADER`.
"""

from __future__ import annotations

from typing import Any

from django.utils.translation import gettext
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiParameter
from rest_framework.exceptions import ValidationError
from rest_framework.request import Request

from xworkmate.lib.paging import MAX_OFFSET, Page, PageError, read_page

__all__ = [
    "NEXT_OFFSET_HEADER",
    "TOTAL_HEADER",
    "page_header_parameters",
    "page_headers",
    "page_of",
    "page_parameters",
]

NEXT_OFFSET_HEADER = "X-Next-Offset"
TOTAL_HEADER = "X-Total-Count"


def page_of(
    request: Request,
    *,
    default: int,
    maximum: int,
    offset: bool = True,
    refusal: str = "",
) -> Page:
    """The page `request` asks for; a bad `limit` or `offset` is a 400 naming it.

    `refusal` replaces the message where a contract fixes it (`{name}` is the
    parameter), e.g. the plans API's "Invalid query parameter `limit`".
    """
    try:
        return read_page(
            dict(request.query_params.lists()), default=default, maximum=maximum, offset=offset
        )
    except PageError as exc:
        if refusal:
            raise ValidationError(refusal.format(name=exc.field)) from None
        # The rule in the caller's language where the catalogue has it (a fixed text).
        raise ValidationError({exc.field: gettext(exc.rule)}) from None


def page_headers(page: Page, shown: int, total: int) -> dict[str, str]:
    """The headers that say how long the list is and where its next page starts."""
    headers = {TOTAL_HEADER: str(total)}
    following = page.next_offset(shown, total)
    if following is not None:
        headers[NEXT_OFFSET_HEADER] = str(following)
    return headers


def page_parameters(*, default: int, maximum: int, offset: bool = True) -> list[OpenApiParameter]:
    """`limit` (and `offset`) as the schema documents them, with the bounds `page_of` applies."""
    parameters = [
        OpenApiParameter(
            "limit",
            {"type": "integer", "minimum": 1, "maximum": maximum},
            description=f"how many, at most {maximum} (default {default})",
        )
    ]
    if offset:
        parameters.append(
            OpenApiParameter(
                "offset",
                {"type": "integer", "minimum": 0, "maximum": MAX_OFFSET},
                description="how many to skip (default 0): the previous page's next offset",
            )
        )
    return parameters


def page_header_parameters() -> list[Any]:
    """The answer headers of `page_headers`, for a 200 of the schema."""
    return [
        OpenApiParameter(
            TOTAL_HEADER,
            OpenApiTypes.INT,
            OpenApiParameter.HEADER,
            required=True,
            response=[200],
            description="how many the whole list holds",
        ),
        OpenApiParameter(
            NEXT_OFFSET_HEADER,
            OpenApiTypes.INT,
            OpenApiParameter.HEADER,
            response=[200],
            description="the `offset` of the next page; absent on the last page",
        ),
    ]
