"""The one reading of a page's `limit` and `offset` every list endpoint uses (D-K13)."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from xworkmate.lib.paging import MAX_OFFSET, Page, PageError, read_page


def _read(**query: list[str]) -> Page:
    return read_page(query, default=50, maximum=200)


def test_it_answers_the_default_page_when_nothing_is_asked():
    assert _read() == Page(limit=50, offset=0)
    assert _read(limit=["200"], offset=[str(MAX_OFFSET)]) == Page(limit=200, offset=MAX_OFFSET)
    assert _read(limit=["007"]) == Page(limit=7)


@pytest.mark.parametrize(
    ("query", "message"),
    [
        ({"limit": ["0"]}, "limit: must be an integer from 1 to 200"),
        ({"limit": ["201"]}, "limit: must be an integer from 1 to 200"),
        ({"limit": [""]}, "limit: must be an integer from 1 to 200"),
        ({"limit": ["-1"]}, "limit: must be an integer from 1 to 200"),
        ({"limit": [" 5"]}, "limit: must be an integer from 1 to 200"),
        ({"limit": ["²"]}, "limit: must be an integer from 1 to 200"),  # isdigit(), not int()
        ({"limit": ["٣"]}, "limit: must be an integer from 1 to 200"),  # an Arabic-Indic 3
        ({"limit": ["9" * 5000]}, "limit: must be an integer from 1 to 200"),
        ({"offset": [str(MAX_OFFSET + 1)]}, "offset: must be an integer from 0 to 1000000000"),
        ({"limit": ["5", "5"]}, "limit: given more than once (it takes one value)"),
    ],
)
def test_it_refuses_a_page_out_of_range_naming_the_parameter_and_the_rule(query, message):
    with pytest.raises(PageError) as refused:
        _read(**query)
    assert str(refused.value) == message
    assert f"{refused.value.field}: {refused.value.rule}" == message


def test_a_list_without_offsets_ignores_one():
    page = read_page({"offset": ["nonsense"], "limit": ["3"]}, default=3, maximum=3, offset=False)
    assert page == Page(limit=3, offset=0)


def test_it_refuses_a_default_beyond_the_maximum():
    with pytest.raises(ValueError, match="must be from 1 to 10"):
        read_page({}, default=11, maximum=10)


def test_the_paging_fields_say_where_the_next_page_starts():
    assert Page(limit=2, offset=0).fields(2, 5) == {
        "total": 5, "offset": 0, "limit": 2, "hasMore": True, "nextOffset": 2,
    }  # fmt: skip
    assert Page(limit=2, offset=4).fields(1, 5)["nextOffset"] is None
    assert Page(limit=2, offset=9).next_offset(0, 5) is None


@given(st.text(max_size=12))
def test_any_text_is_a_page_or_a_named_refusal(raw):
    try:
        page = _read(limit=[raw])
    except PageError as exc:
        assert exc.field == "limit"
    else:
        assert 1 <= page.limit <= 200 and raw.isascii()
