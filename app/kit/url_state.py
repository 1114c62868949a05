"""The state of a view in the URL: the widgets that matter start from the query parameters and write back to
them, so a copied link reproduces the view.

Every query parameter is a visitor's input. :func:`check` is the one rule for reading one: a value that is not
one of the widget's options, not a number, not finite or out of the widget's range is clamped to the range or
replaced by the default, and a warning names the parameter, what was given and what is allowed. Nothing is
substituted silently and nothing ends in a traceback.
"""

from __future__ import annotations

import json
import math
from collections.abc import Callable, Sequence
from typing import Any

import streamlit as st
from streamlit.runtime.scriptrunner import get_script_run_ctx

from app.kit.inputs import md, quoted

MAX_CHOICES = 50  # entries of a list parameter (models=a,b,...) read at most
TRUE, FALSE = ("1", "true", "yes", "on"), ("0", "false", "no", "off")
_UNSET = object()
_LEFT_OUT = object()  # the default of one entry of a list parameter: an unusable entry is dropped


def _number(value: float, kind: type) -> str:
    return f"{value:g}" if kind is float else f"{value:,}"


def _allowed(options: Sequence[Any], names: Callable[[Any], str] | None) -> str:
    shown = [md(names(o) if names else o) for o in list(options)[:12]]
    return ", ".join(shown) + (f" (and {len(options) - 12} more)" if len(options) > 12 else "")


def check(param: str, raw: str, default: Any, options: Sequence[Any] | None = None, kind: type | None = None,
          min_value: float | None = None, max_value: float | None = None, max_chars: int | None = None,
          names: Callable[[Any], str] | None = None) -> Any:
    """``raw`` (the URL's text for ``param``) as the widget's value, or the default or the nearest allowed value
    with a warning that says so.

    options: the widget's choices (compared by their text, so ``2`` matches ``"2"`` whatever the option's type);
    kind: int, float, bool or str when there are no options; min_value/max_value: a number's range (clamped);
    max_chars: a text's length (cut); names: how the options are shown in the warning.
    """
    value, problem = _read(raw, default, options, kind, min_value, max_value, max_chars, names)
    if problem:
        st.warning(f"The link's **{md(param)}** value {quoted(raw)} {problem}.", icon=":material/link_off:")
    return value


def _read(raw: str, default: Any, options, kind, lo, hi, max_chars, names) -> tuple[Any, str | None]:
    """(value, None) for an allowed value, else (the value used instead, what was wrong with ``raw``)."""
    shown = names(default) if names and default is not None and default is not _LEFT_OUT else default
    if isinstance(shown, (int, float)) and not isinstance(shown, bool):
        shown = _number(shown, float if isinstance(shown, float) else int)
    keep = "it is left out" if default is _LEFT_OUT else f"using {md(shown)} instead"
    if options is not None:
        by_text = {str(o): o for o in options}
        if raw in by_text:
            return by_text[raw], None
        folded = {k.casefold(): v for k, v in by_text.items()}
        if raw.strip().casefold() in folded:
            return folded[raw.strip().casefold()], None
        if not options:
            return default, f"cannot be used: there is nothing to choose from; {keep}"
        return default, f"is not one of the choices ({_allowed(options, names)}); {keep}"
    kind = kind or str
    if kind is bool:
        text = raw.strip().lower()
        if text in TRUE or text in FALSE:
            return text in TRUE, None
        return default, f"is not on or off (1/0, true/false); {keep}"
    if kind in (int, float):
        span = f"from {_number(lo, kind)} to {_number(hi, kind)}" if lo is not None and hi is not None else (
            f"at least {_number(lo, kind)}" if lo is not None else
            f"at most {_number(hi, kind)}" if hi is not None else "")
        wanted = ("a whole number" if kind is int else "a number") + (f" {span}" if span else "")
        text = raw.strip()
        try:
            if len(text) > 40:
                raise ValueError
            number = float(text)
        except ValueError:
            return default, f"is not {wanted}; {keep}"
        if not math.isfinite(number):
            return default, f"is not {wanted} (it is not finite); {keep}"
        if kind is int and not number.is_integer():
            return default, f"is not {wanted}; {keep}"
        value = int(number) if kind is int else number
        clamped = min(max(value, lo if lo is not None else value), hi if hi is not None else value)
        if clamped != value:
            return clamped, f"is outside the allowed range ({span}); using {_number(clamped, kind)}"
        return value, None
    if max_chars is not None and len(raw) > max_chars:
        return raw[:max_chars], f"is longer than {max_chars:,} characters; it was cut to that length"
    return raw, None


def url_state(key: str, default: Any, options: Sequence[Any] | None = None, kind: type | None = None,
              many: bool = False, **limits: Any) -> None:
    """Put the URL's value of ``key`` (else ``default``) into ``st.session_state[key]`` on a session's first run,
    so the widget with that key starts from it; after Back or Forward (:func:`from_history`) the URL wins again.
    ``limits`` as for :func:`check`."""
    if key in st.session_state and not from_history():
        return
    st.session_state[key] = url_value(key, default, options, kind, many, **limits)


def url_value(key: str, default: Any, options: Sequence[Any] | None = None, kind: type | None = None,
              many: bool = False, raw: Any = _UNSET, param: str | None = None, **limits: Any) -> Any:
    """The URL's value of ``key`` (checked with :func:`check`), else the value this session last had, else
    ``default``. ``raw``: the URL's text (None: not given) when the page reads a parameter of its own format,
    ``param`` its name in the link (for the warning).

    For a widget's ``value=`` argument: a widget that starts from its own ``value`` keeps it even if the browser
    re-creates it (as can happen when a rerun from every keystroke interrupts another), where one that starts
    from session state falls back to its built-in default.
    """
    if kind is None and options is None:
        kind = type(default) if default is not None and not many else str
    # Not in the URL: the value this session last had (page switches drop the other page's widget state), if it
    # is still allowed.
    value = st.session_state.get(f"_keep::{key}", default)
    if not _still_allowed(value, options, many, limits):
        value = default
    if raw is not _UNSET:
        return value if raw is None else check(param or key, str(raw), value, options, kind, **limits)
    given = st.query_params.get_all(key)
    if not given:
        return value
    if many:
        entries = [r.strip() for chunk in given for r in chunk.split(",") if r.strip()]
        if len(entries) > MAX_CHOICES:
            st.warning(f"The link's **{md(key)}** has {len(entries):,} values; only the first {MAX_CHOICES} are read.")
            entries = entries[:MAX_CHOICES]
        if not entries:
            return value
        picked = [check(key, r, _LEFT_OUT, options, kind, **limits) for r in entries]
        picked = list(dict.fromkeys(p for p in picked if p is not _LEFT_OUT))
        if not picked:
            st.warning(f"Nothing usable in the link's **{md(key)}**; using the default.")
            return value
        return picked
    if len(given) > 1:
        st.warning(f"The link gives **{md(key)}** {len(given)} times; using the last, {quoted(given[-1])}.")
    return check(key, given[-1], value, options, kind, **limits)


def url_pairs(key: str) -> dict[str, str]:
    """A repeated parameter of ``VALUE:NAME`` entries (``layer=2:bert-eltec&layer=1:elmo-eltec``) as
    {NAME: VALUE}; entries without a colon are reported and left out."""
    pairs: dict[str, str] = {}
    for entry in st.query_params.get_all(key)[:MAX_CHOICES]:
        value, sep, name = entry.partition(":")
        if sep:
            pairs[name] = value
        else:
            st.warning(f"The link's **{md(key)}** value {quoted(entry)} is not VALUE:MODEL (such as 2:bert-eltec); "
                       "it is left out.", icon=":material/link_off:")
    return pairs


def _still_allowed(value: Any, options: Sequence[Any] | None, many: bool, limits: dict) -> bool:
    if options is not None:
        return all(v in options for v in value) if many and isinstance(value, list) else value in options
    lo, hi = limits.get("min_value"), limits.get("max_value")
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        return math.isfinite(value) and (lo is None or value >= lo) and (hi is None or value <= hi)
    return True


def to_url(*keys: str) -> None:
    """Write the current values of ``keys`` into the URL (lists as repeated parameters), with the run's other
    changes (:func:`write`)."""
    for key in keys:
        if key not in st.session_state:
            continue
        value = st.session_state[key]
        keep(key, value)
        if isinstance(value, (list, tuple)):
            write(key, [str(v) for v in value])
        elif isinstance(value, bool):
            write(key, "1" if value else "0")
        else:
            write(key, None if value is None else str(value))


_PENDING = "_url_pending"
_SENT = "_url_sent"  # (page, address): the last address a full run of this session left in the browser


def write(key: str, value: str | list[str] | None) -> None:
    """Set ``key`` in the URL (None: take it out). A page run's changes reach the browser together when the run
    ends (:func:`flush`): Streamlit sends, and the browser records, every change of st.query_params on its own.
    A fragment's own run (typing in Fill in) writes at once: the page script does not end after it."""
    ctx = get_script_run_ctx()
    if ctx is not None and ctx.fragment_ids_this_run:
        _apply({key: value}, base=_sent_on_this_page(ctx))
    else:
        st.session_state.setdefault(_PENDING, {})[key] = value


def flush() -> None:
    """Send this run's URL changes (:func:`write`) to the browser as one address; Home.py calls it after the page."""
    pending = st.session_state.pop(_PENDING, None)
    if pending:
        _apply(pending)
    ctx = get_script_run_ctx()
    if ctx is not None:
        st.session_state[_SENT] = (ctx.page_script_hash, _current())


def _sent_on_this_page(ctx: Any) -> dict[str, list[str]] | None:
    """The address the last full run on this page sent. A fragment's run can start from an older one: the address
    the browser had when it asked for the run, before the page run's own reached it (a link followed under load),
    and writing on top of that would drop what the page run wrote (presentation mode among it)."""
    page, params = st.session_state.get(_SENT, (None, None))
    return params if page == ctx.page_script_hash else None


def _current() -> dict[str, list[str]]:
    return {k: st.query_params.get_all(k) for k in st.query_params}


def _apply(changes: dict[str, str | list[str] | None], base: dict[str, list[str]] | None = None) -> None:
    params = _current()
    wanted = dict(params if base is None else base)
    for key, value in changes.items():
        if value is None:
            wanted.pop(key, None)
        else:
            wanted[key] = [value] if isinstance(value, str) else list(value)
    if wanted != params:
        st.query_params.from_dict(wanted)
    ctx = get_script_run_ctx()
    if base is not None and ctx is not None:
        st.session_state[_SENT] = (ctx.page_script_hash, wanted)


def keep(key: str, value: Any) -> None:
    """Remember ``value`` as this session's last value of ``key`` (for a key the page writes to the URL itself)."""
    st.session_state[f"_keep::{key}"] = value


def from_history() -> bool:
    """Whether this run answers the browser's Back or Forward: then the address is the state to restore, over what
    the session last had (the widgets' own state still holds the step the visitor went back from)."""
    ctx = get_script_run_ctx()
    return bool(ctx is not None and getattr(ctx, "is_history_navigation", False))


# What a visitor would call a step, page by page: a model, a word or sentence chosen, a lesson step. A change to one
# of these is a new entry in the browser's history (Back returns to it); every other change of the address (a
# slider, a layer, the text as it is typed, the settings a page fills in on arrival) replaces the current entry.
STEPS = ("present", "step", "try", "try_word", "try_models", "source", "preset", "word", "lemma", "corpus_word",
         "corpus", "models", "att_model", "sentence", "fill_models", "fill_mode", "blank", "ft_model", "ft_base",
         "probe_model", "learn_part", "learn_bert", "learn_gpt", "learn_electra", "learn_run", "learn_measure",
         "learn_metric", "focus", "axis_from", "axis_to")

# Streamlit 1.67 writes every change of st.query_params into a new history entry (pushState, replaceState only
# while answering Back), and a page switch into another: one page visit made 10-19 entries, and Back mostly landed
# on the same page. This wraps history.pushState once per tab: a new page, or a step parameter that had a value
# and changes, pushes; anything else replaces. Page switches and Back themselves stay Streamlit's.
_HISTORY_JS = """<style>.st-key-url_history { display: none; }</style><script>
(() => {
  const steps = new Set(%s);
  if (window.ctxHistory) { window.ctxHistory.steps = steps; return; }
  const push = history.pushState.bind(history), replace = history.replaceState.bind(history);
  window.ctxHistory = { steps };
  const isStep = (url) => {
    const now = new URL(location.href), next = new URL(url, location.href);
    if (now.pathname !== next.pathname) return true;
    for (const key of window.ctxHistory.steps) {
      const was = now.searchParams.getAll(key).join("\\n"), will = next.searchParams.getAll(key).join("\\n");
      if (was && was !== will) return true;
    }
    return false;
  };
  history.pushState = (state, title, url) =>
    url == null || isStep(url) ? push(state, title, url) : replace(state, title, url);
})();
</script>"""


def history_steps() -> None:
    """One browser-history entry per step (:data:`STEPS`); call on every run before the page draws, so the
    address changes of the first run already follow it."""
    with st.container(key="url_history"):
        st.html(_HISTORY_JS % json.dumps(list(STEPS)), unsafe_allow_javascript=True)
