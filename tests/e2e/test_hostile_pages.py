"""Hostile web pages in a real Chromium against the reference server (issue 8, items 5, 6 and 8).

Each page is served by a small HTTP server on another port of 127.0.0.1, so it is another origin
than the reference server (``live_server``). The checks go through the control plane afterwards.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import httpx
import pytest
from playwright.sync_api import Page, expect

import paysdk

pytestmark = [pytest.mark.browser, pytest.mark.parametrize("db_url", ["sqlite"], indirect=True)]

CARD_FIELDS = {"cardNumber": "4000000000000002", "expiry": "12/34", "cvc": "123", "name": "Mallory"}


class HostilePages:
    """A web server on another origin serving the HTML it is given, by path."""

    def __init__(self) -> None:
        self.pages: dict[str, str] = {}
        pages = self.pages

        class Handler(BaseHTTPRequestHandler):
            def do_GET(self) -> None:
                html = pages.get(self.path)
                payload = (html or "not found").encode()
                self.send_response(200 if html is not None else 404)
                self.send_header("Content-Type", "text/html; charset=utf-8")
                self.send_header("Content-Length", str(len(payload)))
                self.end_headers()
                self.wfile.write(payload)

            def log_message(self, format: str, *args: Any) -> None:
                return

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)  # port 0: the system picks it
        self.port: int = self.server.server_address[1]
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        self.thread.start()

    def serve(self, path: str, html: str) -> str:
        """Serve ``html`` at ``path``; its URL."""
        self.pages[path] = html
        return f"http://127.0.0.1:{self.port}{path}"

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()


@pytest.fixture
def hostile() -> Iterator[HostilePages]:
    pages = HostilePages()
    try:
        yield pages
    finally:
        pages.close()


def _link(live_server: str) -> tuple[paysdk.Client, str, str]:
    """A sandbox client (control plane) and a pending payment link: ``(client, uid, url)``."""
    sandbox = paysdk.Client(environment=paysdk.Environment.local(live_server))
    merchant = sandbox.sandbox.create_client()
    client = paysdk.Client(merchant.sandbox_token, paysdk.Environment.local(live_server))
    link = client.payment_links.create(amount=12, user_id="+50255550123", channel="web", client=merchant.slug)
    sandbox.close()
    return client, link.uid, link.url


def test_a_page_on_another_origin_cannot_frame_the_checkout(
    live_server: str, hostile: HostilePages, page: Page
) -> None:
    client, uid, url = _link(live_server)
    framing = hostile.serve(
        "/frame.html", f"<!doctype html><h1>Win a prize</h1><iframe src='{url}'></iframe>"
    )
    page.goto(framing, wait_until="load")
    expect(page.locator("h1")).to_have_text("Win a prize")
    frames = [frame for frame in page.frames if frame != page.main_frame]
    assert len(frames) == 1
    assert frames[0].locator("[data-testid='card-number']").count() == 0
    assert frames[0].locator("[data-testid='pay-button']").count() == 0
    # The same page opened directly (top level) shows its form: the frame was refused, not the page.
    page.goto(url)
    expect(page.get_by_test_id("card-number")).to_be_visible()
    assert client.sandbox.transaction(uid).status == "pending"
    client.close()


@pytest.mark.parametrize(
    ("with_token", "hide_origin"),
    [(False, False), (True, False), (False, True)],
    ids=["no-token", "leaked-token", "origin-null-no-token"],
)
def test_a_cross_origin_form_post_is_refused_and_changes_nothing(
    live_server: str, hostile: HostilePages, page: Page, with_token: bool, hide_origin: bool
) -> None:
    client, uid, url = _link(live_server)
    fields = {"orderId": uid, **CARD_FIELDS}
    if with_token:  # even a token read off the real page does not help another origin (Origin check)
        page_html = httpx.get(url, timeout=60).text
        fields["formToken"] = page_html.split("name='formToken' value='", 1)[1].split("'", 1)[0]
    # With no-referrer the browser sends ``Origin: null``, as from the checkout's own page: the token decides.
    head = "<meta name='referrer' content='no-referrer'>" if hide_origin else ""
    inputs = "".join(f"<input type='hidden' name='{name}' value='{value}'>" for name, value in fields.items())
    attack = hostile.serve(
        "/post.html",
        f"<!doctype html>{head}<form method='post' action='{live_server}/checkout/pay'>{inputs}</form>"
        "<script>document.forms[0].submit()</script>",
    )
    with page.expect_request(lambda request: request.method == "POST") as posted:
        page.goto(attack)
    expected = "null" if hide_origin else f"http://127.0.0.1:{hostile.port}"
    assert posted.value.all_headers().get("origin") == expected
    page.wait_for_url(f"{live_server}/checkout/pay")
    expect(page.locator("main")).to_have_attribute("data-status", "forbidden")
    stored = client.sandbox.transaction(uid)
    assert stored.status == "pending"
    # The checkout's own form, in the same browser, still pays (its Origin is the server's or null).
    page.goto(url)
    page.get_by_test_id("card-number").fill("4242424242424242")
    page.get_by_test_id("card-expiry").fill("12/34")
    page.get_by_test_id("card-cvc").fill("123")
    page.get_by_test_id("card-name").fill("Ana")
    with page.expect_request(lambda request: request.method == "POST") as own:
        page.get_by_test_id("pay-button").click()
    assert own.value.all_headers().get("origin") == "null"  # Referrer-Policy: no-referrer (D93, D94)
    expect(page.get_by_test_id("status")).to_have_attribute("data-status", "approved")
    client.close()


def test_a_web_page_cannot_write_to_the_control_plane(
    live_server: str, hostile: HostilePages, page: Page
) -> None:
    client = json.dumps({"slug": "evil-shop", "callbackUrl": "http://attacker.example/cb"})
    fault = json.dumps({"kind": "error", "count": 5})
    script = f"""
    const server = {json.dumps(live_server)};
    const sends = [
      ["/_sandbox/clients", {{"Content-Type": "text/plain"}}, {json.dumps(client)}],
      ["/_sandbox/faults", {{"Content-Type": "text/plain"}}, {json.dumps(fault)}],
      ["/_sandbox/clients", {{}}, new Blob([{json.dumps(client)}])],
      ["/_sandbox/faults", {{}}, new Blob([{json.dumps(fault)}])],
      ["/_sandbox/reset", {{}}, null],
    ];
    window.results = Promise.all(sends.map(([path, headers, body]) =>
      fetch(server + path, {{method: "POST", mode: "no-cors", headers, body}})
        .then(answer => answer.type, error => "error: " + error)));
    """
    attack = hostile.serve("/sandbox.html", f"<!doctype html><script>{script}</script>")
    with httpx.Client(base_url=live_server, timeout=10) as control:
        keep = control.post(
            "/_sandbox/clients",
            content=b'{"slug": "kept-shop"}',
            headers={"Content-Type": "application/json"},
        )
        assert keep.status_code == 201
        page.goto(attack)
        results = page.evaluate("window.results")
        # Every request reached the server and got an (opaque) answer: none was blocked by the browser.
        assert results == ["opaque"] * 5
        assert control.get("/_sandbox/clients/evil-shop").status_code == 404
        assert control.get("/_sandbox/faults").json() == []
        assert control.get("/_sandbox/clients/kept-shop").status_code == 200  # the reset was refused too
