"""The console's HTML: one layout, tables, forms (D721, D727). Every value is escaped with
:func:`html.escape`; nothing inline runs (no ``<script>`` body, no ``style=``, no ``on*=`` attribute):
the stylesheet and the one script are static files of the package."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from html import escape
from urllib.parse import urlencode

from paysdk.server.console.text import LANGUAGES, Language, t
from paysdk.server.control_token import CONSOLE_PREFIX

__all__ = ["NAV", "Page", "dl", "e", "form", "layout", "table"]

#: The sections of the navigation: (key of the text table, path under the console).
NAV: tuple[tuple[str, str], ...] = (
    ("home", ""),
    ("merchants", "/merchants"),
    ("transactions", "/transactions"),
    ("subscriptions", "/subscriptions"),
    ("wallet", "/wallet"),
    ("batches", "/batches"),
    ("terminal", "/terminal"),
    ("clock", "/clock"),
    ("faults", "/faults"),
    ("tail", "/tail"),
)


def e(value: object) -> str:
    """``value`` as escaped HTML text (``None`` as an empty string)."""
    return "" if value is None else escape(str(value), quote=True)


@dataclass(frozen=True, slots=True)
class Page:
    """What a page knows of its request: the language, whether ``?lang=`` chose it (links keep it), the
    path it answers (for the language links), and whether the console has a session to sign out of."""

    language: Language
    explicit: bool = False
    path: str = CONSOLE_PREFIX
    signed_in: bool = False

    def url(self, path: str = "", **query: str) -> str:
        """The console URL of ``path`` (under :data:`CONSOLE_PREFIX`), ``?lang=`` kept, escaped."""
        params = dict(query)
        if self.explicit:
            params["lang"] = self.language
        suffix = "?" + urlencode(params) if params else ""
        return e(CONSOLE_PREFIX + path + suffix)

    def t(self, key: str, **values: str) -> str:
        """The sentence ``key`` escaped (its values escaped too)."""
        return e(t(self.language, key, **values))


def layout(page: Page, title: str, body: str, *, section: str | None = None, live: str | None = None) -> str:
    """A whole page: skip link, banner with the navigation and language switch, ``<main id="main">``
    with one ``<h1>`` (``title``), the footer. ``section``: the navigation entry marked current.
    ``live``: the ``data-live`` of ``<main>`` (what the script enhances: ``tail``, ``batches``)."""
    lang = page.language
    links = "".join(
        f"<li><a href='{page.url(path)}' id='nav-{key}'"
        + (" aria-current='page'" if key == section else "")
        + f">{page.t(key)}</a></li>"
        for key, path in NAV
    )
    switch = "".join(
        f"<li><a href='{e(page.path)}?lang={code}' lang='{code}' hreflang='{code}' id='lang-{code}'"
        + (" aria-current='true'" if code == lang else "")
        + f">{code.upper()}</a></li>"
        for code in LANGUAGES
    )
    logout = (
        f"<form method='post' action='{page.url('/logout')}' class='logout'>"
        f"<button type='submit' id='logout'>{page.t('logout')}</button></form>"
        if page.signed_in
        else ""
    )
    live_attr = f" data-live='{e(live)}'" if live else ""
    return (
        f"<!doctype html><html lang='{lang}'><head><meta charset='utf-8'>"
        "<meta name='viewport' content='width=device-width,initial-scale=1'>"
        f"<title>{e(title)} · {page.t('console')}</title>"
        f"<link rel='icon' href='{CONSOLE_PREFIX}/static/favicon.svg' type='image/svg+xml'>"
        f"<link rel='stylesheet' href='{CONSOLE_PREFIX}/static/console.css'>"
        f"<script src='{CONSOLE_PREFIX}/static/console.js' defer></script></head><body>"
        f"<a class='skip' href='#main'>{page.t('skip')}</a>"
        f"<header class='top'><p class='brand'><a href='{page.url()}'>{page.t('console')}</a></p>"
        f"<p class='banner' id='test-mode'>{page.t('test_mode')}</p>"
        f"<nav aria-label='{page.t('sections')}'><ul class='nav'>{links}</ul></nav>"
        f"<nav aria-label='{page.t('language')}'><ul class='langs'>{switch}</ul></nav>{logout}</header>"
        f"<main id='main' tabindex='-1'{live_attr}><h1>{e(title)}</h1>{body}</main>"
        "<footer class='foot'><p>paysdk</p></footer></body></html>"
    )


def table(
    table_id: str,
    caption: str,
    headers: Sequence[str],
    rows: Iterable[Sequence[str]],
    *,
    empty: str,
    body_id: str | None = None,
) -> str:
    """A table with a caption and ``th scope='col'`` headers; each row's first cell is its
    ``th scope='row'``. Cells are HTML already (escape values with :func:`e`). Wrapped in a focusable
    region that scrolls sideways on a narrow screen. No rows: a paragraph saying ``empty`` as well."""
    rendered = [
        "<tr><th scope='row'>" + row[0] + "</th>" + "".join(f"<td>{cell}</td>" for cell in row[1:]) + "</tr>"
        for row in rows
    ]
    head = "".join(f"<th scope='col'>{e(h)}</th>" for h in headers)
    tbody_id = f" id='{e(body_id)}'" if body_id else ""
    note = "" if rendered else f"<p class='empty' id='{e(table_id)}-empty'>{e(empty)}</p>"
    return (
        f"<div class='table-wrap' role='region' aria-labelledby='{e(table_id)}-caption' tabindex='0'>"
        f"<table id='{e(table_id)}'><caption id='{e(table_id)}-caption'>{e(caption)}</caption>"
        f"<thead><tr>{head}</tr></thead><tbody{tbody_id}>{''.join(rendered)}</tbody></table></div>{note}"
    )


def dl(dl_id: str, pairs: Iterable[tuple[str, str]]) -> str:
    """A description list of ``(term, HTML value)``."""
    items = "".join(f"<div><dt>{e(term)}</dt><dd>{value}</dd></div>" for term, value in pairs)
    return f"<dl class='facts' id='{e(dl_id)}'>{items}</dl>"


def form(action: str, inner: str, button: str, *, form_id: str, css: str = "") -> str:
    """A POST form to ``action`` (an escaped URL from :meth:`Page.url`) with ``inner`` fields and a
    submit button."""
    klass = f" class='{e(css)}'" if css else ""
    return (
        f"<form method='post' action='{action}' id='{e(form_id)}'{klass}>{inner}"
        f"<button type='submit' id='{e(form_id)}-submit'>{e(button)}</button></form>"
    )
