"""How the app writes its address (app/kit/url_state.py), without a browser: a page run's changes go out together,
and a fragment's run writes on top of the address the page run sent, not on an older one the browser still had
when it asked for the fragment's run (a link followed under load: presentation mode was dropped from the address,
and the change made a second history entry)."""

from __future__ import annotations

from types import SimpleNamespace

import pytest

from app.kit import url_state


class QueryParams:
    """The part of st.query_params the writes use; ``sent`` counts the addresses sent to the browser."""

    def __init__(self, params: dict[str, list[str]]):
        self.params, self.sent = dict(params), 0

    def __iter__(self):
        return iter(self.params)

    def get_all(self, key: str) -> list[str]:
        return list(self.params.get(key, []))

    def from_dict(self, params: dict[str, list[str]]) -> None:
        self.params, self.sent = dict(params), self.sent + 1


@pytest.fixture
def session(monkeypatch):
    ctx = SimpleNamespace(fragment_ids_this_run=[], page_script_hash="fill_in")
    query = QueryParams({"text": ["She [MASK]."]})
    monkeypatch.setattr(url_state, "get_script_run_ctx", lambda: ctx)
    monkeypatch.setattr(url_state.st, "session_state", {})
    monkeypatch.setattr(url_state.st, "query_params", query)
    return ctx, query


def test_a_page_run_sends_its_changes_as_one_address(session):
    _, query = session
    url_state.write("present", "1")
    url_state.write("k", "5")
    assert query.sent == 0
    url_state.flush()
    assert query.sent == 1 and query.params == {"text": ["She [MASK]."], "present": ["1"], "k": ["5"]}


def test_a_fragment_writes_on_the_address_the_page_run_sent(session):
    ctx, query = session
    url_state.write("present", "1")
    url_state.flush()
    query.params = {"text": ["She [MASK]."]}  # the fragment's run came with the address the link opened
    ctx.fragment_ids_this_run = ["typing"]
    url_state.write("k", "5")
    assert query.params == {"text": ["She [MASK]."], "present": ["1"], "k": ["5"]}
    url_state.write("whole_words", "1")
    assert query.params["present"] == ["1"] and query.params["k"] == ["5"]


def test_another_page_s_address_is_not_written_on_this_one(session):
    ctx, query = session
    url_state.write("present", "1")
    url_state.flush()
    ctx.page_script_hash = "overview"  # a fragment on the next page, before that page's run ended
    query.params = {"try": ["1"]}
    ctx.fragment_ids_this_run = ["try"]
    url_state.write("try_word", "bank")
    assert query.params == {"try": ["1"], "try_word": ["bank"]}
