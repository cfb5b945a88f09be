"""Only an explicit request enters long-run mode (§2, D-B1)."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from longrun.policies.trigger import is_trigger

PHRASES = ("长任务模式", "进入长任务模式")
NON_TRIGGERS = ("继续", "接着来", "往下做", "一直做，不停", "持续推进", "不要停下来问")


def test_case_1_entering_with_a_task_triggers():
    assert is_trigger("进入长任务模式，帮我迁移数据库", PHRASES)


def test_case_2_the_bare_phrase_triggers():
    assert is_trigger("长任务模式", PHRASES)
    assert is_trigger("请进入长任务模式吧", PHRASES)
    assert is_trigger("不要停，进入长任务模式", PHRASES)  # the negation is another clause


def test_d_b1_the_phrase_list_is_the_configs():
    # A deployment that pins the strict reading (only 进入长任务模式).
    assert not is_trigger("长任务模式", ("进入长任务模式",))
    assert is_trigger("进入长任务模式", ("进入长任务模式",))


@pytest.mark.parametrize("message", NON_TRIGGERS)
def test_case_4_the_originals_non_trigger_words_never_trigger(message):
    assert not is_trigger(message, PHRASES)


@pytest.mark.parametrize(
    "message",
    [
        "不要进入长任务模式",  # case 5
        "先别进入长任务模式",
        "退出长任务模式",
        "什么是长任务模式？",
        "长任务模式是什么",
        "能进入长任务模式吗",
        "进入长任务模式?",
        "long run mode",  # R6: the token is Chinese
        "",
    ],
)
def test_case_5_negated_or_questioning_mentions_do_not_trigger(message):
    assert not is_trigger(message, PHRASES)


_TEXT = st.text(alphabet=st.sampled_from("继续做事吧好的，。！？ 任务长式模进入不要"), max_size=30)


@given(_TEXT)
def test_no_phrase_no_trigger(text):
    if not any(phrase in text for phrase in PHRASES):
        assert not is_trigger(text, PHRASES)


@given(_TEXT, st.sampled_from(["不要", "别", "不", "退出", "停止"]), st.sampled_from(PHRASES))
def test_a_negation_right_before_the_phrase_never_triggers_its_clause(prefix, negation, phrase):
    text = f"{negation}{phrase}"
    assert not is_trigger(text, PHRASES)
    # Whatever precedes it in the same clause, the negation still applies.
    clause = prefix.replace("，", "").replace("。", "").replace("！", "").replace("？", "")
    assert not is_trigger(f"{clause}{text}", PHRASES) or any(p in clause for p in PHRASES)


@given(st.sampled_from(PHRASES), _TEXT)
def test_a_question_about_the_phrase_never_triggers(phrase, tail):
    tail = "".join(c for c in tail if c not in "，。！？ ")
    assert not is_trigger(f"{phrase}{tail}？", PHRASES)
