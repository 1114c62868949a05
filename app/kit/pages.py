"""Where each page's script is: a page is a folder of ``app/views/`` named by its URL path (``word_senses``), with
its script in ``page.py``. ``st.Page`` and ``st.page_link`` take the script's path relative to ``app/``."""

from __future__ import annotations


def script(name: str) -> str:
    """The script of page ``name`` (``word_senses``), as ``st.Page`` and ``st.page_link`` take it."""
    return f"views/{name}/page.py"
