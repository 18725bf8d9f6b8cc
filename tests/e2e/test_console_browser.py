"""The sandbox console (``/_sandbox/console``, issue 23) in a real Chromium, against the real server over
a socket with its ticker on (D740-D745).

* Every page (:data:`console_data.PAGES`) renders with data of every family (filled once per module
  through the SDK, :func:`console_data.fill_sandbox`) and on an empty sandbox, with JavaScript on and off,
  with no console error, no uncaught exception and no Content-Security-Policy violation.
* Each action (resend a callback, advance the clock, a fault on and off) is done by clicking in the page;
  the test then asks the API (SDK or HTTP) that it changed what the API answers.
* Keyboard: Tab reaches the skip link first, then the navigation in order, then the page's buttons;
  Enter follows the skip link and activates a button.
* 390 px wide: no page scrolls sideways. ``?lang=es``: the pages are in Spanish.
* A shared sandbox (control token): the token form first, then the page; secrets masked until revealed.
* axe-core (from npm, :mod:`e2e.axe`) finds no serious or critical violation on any page; it runs in a
  context that bypasses the CSP (the CSP refuses its injected script), the CSP is checked without it.

One Chromium per module (the ``browser`` fixture), a new context per page. The module is not kept on one
xdist worker: alone there it took six minutes of one worker; spread, each worker fills its own server.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx
import pytest
from playwright.sync_api import Browser, BrowserContext, ConsoleMessage, Page, Response, expect

import paysdk
from paysdk._tls import verification_context
from paysdk.server.control_token import CONTROL_TOKEN_HEADER, control_token_digest

from .axe import axe_source, axe_violations, describe
from .console_data import CONSOLE, PAGES, ConsoleData, PageSpec, Receiver, fill_sandbox, serve, wait_until

pytestmark = [pytest.mark.browser]

PAGE_IDS = [spec.name for spec in PAGES]
NAV = [
    "home",
    "merchants",
    "transactions",
    "subscriptions",
    "wallet",
    "batches",
    "terminal",
    "clock",
    "faults",
    "tail",
]
#: Records CSP violations before any page script runs (an init script is not subject to the page's CSP).
CSP_LISTENER = """
window.__csp = [];
document.addEventListener('securitypolicyviolation', (e) => {
  window.__csp.push(e.violatedDirective + ' ' + e.blockedURI);
});
"""


@dataclass
class Served:
    url: str
    data: ConsoleData | None
    receiver: Receiver | None = None

    def client(self) -> paysdk.Client:
        return paysdk.Client(environment=paysdk.Environment.local(self.url))


@pytest.fixture(scope="module")
def full(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Served]:
    """A server with data of every family."""
    receiver = Receiver()
    folder = tmp_path_factory.mktemp("console-full")
    try:
        with serve(f"sqlite:///{folder / 'full.db'}") as url:
            yield Served(url, fill_sandbox(url, receiver), receiver)
    finally:
        receiver.close()


@pytest.fixture(scope="module")
def empty(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Served]:
    """A server with nothing in it."""
    folder = tmp_path_factory.mktemp("console-empty")
    with serve(f"sqlite:///{folder / 'empty.db'}") as url:
        yield Served(url, None)


@pytest.fixture
def fresh(tmp_path: Path) -> Iterator[Served]:
    """A server of this test's own (the actions change the sandbox)."""
    with serve(f"sqlite:///{tmp_path / 'fresh.db'}") as url:
        yield Served(url, None)


@dataclass
class Watch:
    """What went wrong in a page: console errors, uncaught exceptions, CSP violations, failed loads."""

    errors: list[str] = field(default_factory=list)
    failed: list[str] = field(default_factory=list)

    def console(self, message: ConsoleMessage) -> None:
        # Chromium asks for /favicon.ico by itself, when it likes; the icon is tested on its own
        # (test_every_page_declares_an_icon_that_loads).
        if message.type == "error" and not str(message.location.get("url")).endswith("/favicon.ico"):
            self.errors.append(f"console: {message.text} ({message.location.get('url')})")

    def page_error(self, error: Any) -> None:
        self.errors.append(f"pageerror: {error}")

    def response(self, response: Response) -> None:
        if response.status >= 400 and response.request.resource_type != "document":
            self.failed.append(f"{response.status} {response.url}")

    def check(self, page: Page, *, js: bool = True) -> None:
        if js:
            for violation in page.evaluate("window.__csp || []"):
                self.errors.append(f"csp: {violation}")
        assert self.errors == [], "\n".join(self.errors)
        assert self.failed == [], "\n".join(self.failed)


def _context(browser: Browser, **options: Any) -> BrowserContext:
    context = browser.new_context(**options)
    if options.get("java_script_enabled", True):
        context.add_init_script(CSP_LISTENER)
    return context


def _open(context: BrowserContext, url: str) -> tuple[Page, Watch, Response]:
    page = context.new_page()
    watch = Watch()
    page.on("console", watch.console)
    page.on("pageerror", watch.page_error)
    page.on("response", watch.response)
    response = page.goto(url, wait_until="load")
    assert response is not None
    return page, watch, response


def _submit(page: Page, selector: str | None = None) -> None:
    """Submit a form by clicking ``selector`` (or pressing Enter on the focused button) and wait for the
    page it leads to."""
    with page.expect_navigation(wait_until="load"):
        if selector is None:
            page.keyboard.press("Enter")
        else:
            page.locator(selector).click()


def _text(page: Page, selector: str) -> str:
    return page.locator(selector).first.inner_text()


def _assert_shows(page: Page, spec: PageSpec, data: ConsoleData) -> None:
    values = data.every_id()
    for table_id in spec.tables:
        expect(page.locator(f"#{table_id}")).to_be_visible()
    shown = _text(page, spec.within)
    # Shown as text, or as a link to its own page (a card's id is in its link; the text is masked).
    missing = [
        f"{name}={values[name]}"
        for name in spec.shows
        if values[name] not in shown
        and page.locator(f"{spec.within} a[href*='/{values[name]}']").count() == 0
    ]
    assert missing == [], f"{spec.name} does not show {missing}"
    for selector, text in spec.texts:
        expect(page.locator(selector)).to_contain_text(text)


# ------------------------------------------------------------------------------------- every page


@pytest.mark.parametrize("js", [True, False], ids=["js", "no-js"])
@pytest.mark.parametrize("spec", PAGES, ids=PAGE_IDS)
def test_every_page_renders_the_data(browser: Browser, full: Served, spec: PageSpec, js: bool) -> None:
    assert full.data is not None
    context = _context(browser, java_script_enabled=js)
    try:
        page, watch, response = _open(context, full.url + spec.url(full.data))
        assert response.status == 200, f"{spec.name}: {response.status}"
        csp = response.headers["content-security-policy"]
        assert "script-src 'self'" in csp
        assert "unsafe-inline" not in csp
        assert "unsafe-eval" not in csp
        expect(page.locator("main#main h1")).to_have_count(1)
        expect(page.locator("#test-mode")).to_be_visible()
        _assert_shows(page, spec, full.data)
        for table_id in spec.tables:
            expect(page.locator(f"#{table_id}-empty")).to_have_count(0)
        watch.check(page, js=js)
    finally:
        context.close()


def test_every_page_declares_an_icon_that_loads(browser: Browser, full: Served) -> None:
    """Without one Chromium asks for ``/favicon.ico`` by itself, and its 404 is an error in the console."""
    assert full.data is not None
    context = _context(browser)
    try:
        page = context.new_page()
        for spec in PAGES:
            page.goto(full.url + spec.url(full.data), wait_until="load")
            icon = page.locator("link[rel~=icon]")
            expect(icon).to_have_count(1)
            href = icon.get_attribute("href")
            assert href is not None
            assert href.startswith(CONSOLE + "/static/"), href  # the CSP's img-src 'self' allows it
            assert httpx.get(full.url + href, verify=verification_context(), timeout=60).status_code == 200
    finally:
        context.close()


@pytest.mark.parametrize("spec", PAGES, ids=PAGE_IDS)
def test_every_page_renders_an_empty_sandbox(browser: Browser, empty: Served, spec: PageSpec) -> None:
    context = _context(browser)
    try:
        page, watch, response = _open(context, empty.url + spec.url(None))
        if spec.detail:  # nothing to show: the console's not-found page, no error page of the browser
            assert response.status == 404, f"{spec.name}: {response.status}"
            expect(page.locator("#message")).to_be_visible()
            watch.errors = [e for e in watch.errors if "404" not in e]  # Chromium logs the document's 404
        else:
            assert response.status == 200, f"{spec.name}: {response.status}"
            for table_id in spec.tables:
                if table_id != "overview":
                    expect(page.locator(f"#{table_id}-empty")).to_be_visible()
        expect(page.locator("#test-mode")).to_be_visible()
        watch.check(page)
    finally:
        context.close()


@pytest.mark.parametrize("spec", PAGES, ids=PAGE_IDS)
def test_no_page_scrolls_sideways_at_390_px(browser: Browser, full: Served, spec: PageSpec) -> None:
    assert full.data is not None
    context = _context(browser, viewport={"width": 390, "height": 844}, device_scale_factor=1)
    try:
        page, watch, _ = _open(context, full.url + spec.url(full.data))
        widths = page.evaluate("[document.documentElement.scrollWidth, document.documentElement.clientWidth]")
        assert widths[0] <= widths[1], f"{spec.name} is {widths[0]} px wide in a {widths[1]} px window"
        watch.check(page)
    finally:
        context.close()


@pytest.mark.parametrize("spec", PAGES, ids=PAGE_IDS)
def test_no_serious_accessibility_violation(browser: Browser, full: Served, spec: PageSpec) -> None:
    assert full.data is not None
    source = axe_source()
    context = browser.new_context(bypass_csp=True)  # axe is an injected script; the CSP is tested above
    try:
        page = context.new_page()
        response = page.goto(full.url + spec.url(full.data), wait_until="load")
        assert response is not None
        assert response.status == 200, f"{spec.name}: {response.status}"
        violations = axe_violations(page, source)
        assert violations == [], f"{spec.name}:\n{describe(violations)}"
    finally:
        context.close()


def test_the_token_form_and_an_empty_page_have_no_serious_accessibility_violation(
    browser: Browser, empty: Served, tmp_path: Path
) -> None:
    source = axe_source()
    token = "console-token-" + "x" * 20
    context = browser.new_context(bypass_csp=True)
    try:
        page = context.new_page()
        page.goto(empty.url + CONSOLE + "/transactions", wait_until="load")
        assert (violations := axe_violations(page, source)) == [], describe(violations)
        with serve(
            f"sqlite:///{tmp_path / 'guarded.db'}", control_token_digest=control_token_digest(token)
        ) as url:
            page.goto(url + CONSOLE + "/", wait_until="load")
            expect(page.locator("#login")).to_be_visible()
            assert (violations := axe_violations(page, source)) == [], describe(violations)
    finally:
        context.close()


def test_pages_are_in_spanish_with_lang_es(browser: Browser, full: Served) -> None:
    assert full.data is not None
    context = _context(browser, locale="en-US")
    try:
        for spec in PAGES:
            page, watch, response = _open(context, full.url + spec.url(full.data) + "?lang=es")
            assert response.status == 200
            assert page.locator("html").get_attribute("lang") == "es", spec.name
            assert response.headers.get("content-language") == "es"
            # Links keep the language.
            assert "lang=es" in (page.locator("#nav-merchants").get_attribute("href") or "")
            watch.check(page)
            page.close()
        english = context.new_page()
        english.goto(full.url + CONSOLE + "/clock")
        spanish = context.new_page()
        spanish.goto(full.url + CONSOLE + "/clock?lang=es")
        assert english.locator("#nav-clock").inner_text() != spanish.locator("#nav-clock").inner_text()
        assert english.locator("main h1").inner_text() != spanish.locator("main h1").inner_text()
    finally:
        context.close()


# ------------------------------------------------------------------------------------------ keyboard


def _focused(page: Page) -> str:
    return str(
        page.evaluate(
            "(() => { const a = document.activeElement;"
            " return a.id || (a.className ? a.tagName + '.' + a.className : a.tagName); })()"
        )
    )


def test_keyboard_reaches_the_skip_link_the_navigation_and_the_buttons(
    browser: Browser, fresh: Served
) -> None:
    context = _context(browser)
    sandbox = fresh.client()
    try:
        page, watch, _ = _open(context, fresh.url + CONSOLE + "/clock")
        page.keyboard.press("Tab")
        skip = page.locator("a.skip")
        expect(skip).to_be_focused()
        expect(skip).to_be_visible()  # shown while focused
        assert skip.get_attribute("href") == "#main"
        page.keyboard.press("Enter")
        expect(page.locator("#main")).to_be_focused()

        # From the top again: the order in which Tab visits things.
        page.goto(fresh.url + CONSOLE + "/clock")
        order = []
        for _ in range(60):
            page.keyboard.press("Tab")
            order.append(_focused(page))
            if order[-1] == "advance-hour-submit":
                break
        assert order[0] == "A.skip"
        nav = [name for name in order if name.startswith("nav-")]
        assert nav == [f"nav-{key}" for key in NAV], order
        assert order[-1] == "advance-hour-submit", order

        before = sandbox.sandbox.clock()
        _submit(page)  # Enter on the focused button submits its form
        after = sandbox.sandbox.clock()
        assert after.offset_seconds - before.offset_seconds == 3600

        # The faults page: every field and both buttons by Tab alone; Enter turns every fault off.
        sandbox.sandbox.add_fault("latency", route="POST /transactions", latency_ms=5, count=1)
        page.goto(fresh.url + CONSOLE + "/faults")
        reached = []
        for _ in range(60):
            page.keyboard.press("Tab")
            reached.append(_focused(page))
            if reached[-1] == "fault-clear-submit":
                break
        fields = [
            "fault-kind",
            "fault-route",
            "fault-count",
            "fault-status",
            "fault-latency",
            "fault-add-submit",
        ]
        assert [name for name in reached if name in fields] == fields, reached
        assert reached[-1] == "fault-clear-submit", reached
        _submit(page)
        assert sandbox.sandbox.faults() == []
        watch.check(page)
    finally:
        sandbox.close()
        context.close()


# ------------------------------------------------------------------------------------------- actions


def test_resend_queues_a_new_delivery_the_api_then_lists(
    browser: Browser, fresh: Served, callback_sink: Any
) -> None:
    sandbox = fresh.client()
    context = _context(browser)
    try:
        merchant = sandbox.sandbox.create_client(callback_url=callback_sink.url)
        shop = paysdk.Client(merchant.sandbox_token, paysdk.Environment.local(fresh.url))
        link = shop.payment_links.create(
            amount=10, user_id="+50255550123", channel="web", client=merchant.slug
        )
        sandbox.sandbox.pay(link.uid, "4242424242424242")
        callback_sink.wait_for(1)
        wait_until(lambda: len(sandbox.sandbox.callbacks(uid=link.uid)) == 1, "the first attempt's record")
        (first,) = sandbox.sandbox.callbacks(uid=link.uid)
        assert first.final
        assert first.status_code == 200

        page, watch, _ = _open(context, fresh.url + CONSOLE + f"/transactions/{link.uid}")
        expect(page.locator("#callback-attempts tbody tr")).to_have_count(1)
        _submit(page, f"#resend-{first.event_id}-submit")
        assert page.url.split("?")[0].endswith(f"/transactions/{link.uid}")
        expect(page.locator("#callback-attempts tbody tr")).to_have_count(2)

        attempts = sandbox.sandbox.callbacks(uid=link.uid)
        assert len(attempts) == 2
        assert {a.event_id for a in attempts} == {first.event_id}  # the same event, delivered again
        assert attempts[-1].status_code == 200
        received = callback_sink.wait_for(2)
        assert received[1].body == received[0].body
        watch.check(page)
        shop.close()
    finally:
        sandbox.close()
        context.close()


def test_advancing_the_clock_moves_the_api_s_virtual_time(browser: Browser, fresh: Served) -> None:
    sandbox = fresh.client()
    context = _context(browser)
    try:
        page, watch, _ = _open(context, fresh.url + CONSOLE + "/clock")
        start = sandbox.sandbox.clock()
        _submit(page, "#advance-day-submit")
        assert sandbox.sandbox.clock().offset_seconds - start.offset_seconds == 86400
        page.locator("#advance [name=seconds]").fill("90")
        _submit(page, "#advance-submit")
        now = sandbox.sandbox.clock()
        assert now.offset_seconds - start.offset_seconds == 86400 + 90
        assert str(now.now.year) in page.locator("#clock-now").inner_text()
        # A bad value is the form again naming the field; the clock does not move.
        page.locator("#advance [name=seconds]").fill("-5")
        _submit(page, "#advance-submit")
        expect(page.locator("#clock-error")).to_be_visible()
        assert sandbox.sandbox.clock().offset_seconds == now.offset_seconds
        watch.errors = [e for e in watch.errors if "400" not in e]  # the refused form's document status
        watch.check(page)
    finally:
        sandbox.close()
        context.close()


def test_a_fault_turned_on_and_off_changes_what_the_api_answers(browser: Browser, fresh: Served) -> None:
    sandbox = fresh.client()
    context = _context(browser)
    try:
        merchant = sandbox.sandbox.create_client()
        page, watch, _ = _open(context, fresh.url + CONSOLE + "/faults")
        page.locator("#fault-kind").select_option("error")
        page.locator("#fault-route").fill("POST /transactions")
        page.locator("#fault-count").fill("5")
        page.locator("#fault-status").fill("503")
        _submit(page, "#fault-add-submit")
        expect(page.locator("#faults tbody tr")).to_have_count(1)
        (fault,) = sandbox.sandbox.faults()
        assert (fault.kind, fault.route, fault.status) == ("error", "POST /transactions", 503)

        body = {"amount": 10, "userId": "+50255550123", "channel": "wa", "client": merchant.slug}
        auth = {"Authorization": merchant.sandbox_token}
        with httpx.Client(base_url=fresh.url, timeout=10) as http:
            assert http.post("/transactions", json=body, headers=auth).status_code == 503
            _submit(page, "#fault-clear-submit")
            expect(page.locator("#faults-empty")).to_be_visible()
            assert sandbox.sandbox.faults() == []
            assert http.post("/transactions", json=body, headers=auth).status_code == 200
        watch.check(page)
    finally:
        sandbox.close()
        context.close()


# ------------------------------------------------------------------------------------ shared sandbox


def test_a_shared_sandbox_asks_for_the_token_then_shows_the_page_with_secrets_masked(
    browser: Browser, tmp_path: Path
) -> None:
    token = "shared-console-" + "k" * 24
    options = {"control_token_digest": control_token_digest(token), "control_plane_exposed": True}
    with serve(f"sqlite:///{tmp_path / 'shared.db'}", **options) as url:
        env = paysdk.Environment.local(url, control_token=token)
        with paysdk.Client(environment=env) as sandbox:
            merchant = sandbox.sandbox.create_client(callback_header_value="header-secret-" + "v" * 20)
        context = _context(browser)
        try:
            page, watch, response = _open(context, url + CONSOLE + f"/merchants/{merchant.slug}")
            assert response.status == 401
            expect(page.locator("#login")).to_be_visible()
            expect(page.locator("#merchant-settings")).to_have_count(0)
            watch.errors = [e for e in watch.errors if "401" not in e]

            page.locator("#token").fill("wrong-token")
            _submit(page, "#login-submit")
            expect(page.locator("#login-error")).to_be_visible()
            watch.errors = [e for e in watch.errors if "403" not in e and "401" not in e]

            page.locator("#token").fill(token)
            _submit(page, "#login-submit")
            expect(page.locator("#merchant-settings")).to_be_visible()
            html = page.content()
            assert merchant.slug in html
            secrets_in_full = [
                merchant.sandbox_token,
                merchant.production_token,
                merchant.callback_header_value,
            ]
            for secret in secrets_in_full:
                assert secret
                assert secret not in html, "a secret is shown before the reveal step"
            assert token not in html
            cookies = context.cookies()
            assert all(token not in c["value"] for c in cookies)  # the session cookie is not the token

            _submit(page, "#reveal-submit")
            expect(page.locator("#revealed")).to_be_visible()
            revealed = page.content()
            assert merchant.sandbox_token in revealed

            # Signed out: the token form again.
            _submit(page, "#logout")
            page.goto(url + CONSOLE + "/merchants")
            expect(page.locator("#login")).to_be_visible()
            watch.errors = [e for e in watch.errors if "401" not in e]
            watch.check(page)
        finally:
            context.close()
        # The header still works for scripts; without it the console is closed.
        with httpx.Client(base_url=url, timeout=10) as http:
            assert http.get(CONSOLE + "/merchants").status_code == 401
            assert http.get(CONSOLE + "/merchants", headers={CONTROL_TOKEN_HEADER: token}).status_code == 200
