// The paysdk sandbox console's one script (D727): it only enhances pages that already read without it.
// <main data-live="tail">: new requests and events of the server's feed are added to #tail-body as
// they come (EventSource on /_sandbox/console/events). <main data-live="batches"> (and any page with
// data-live="refresh"): the #live region is fetched again when a job runs, so progress moves.
(function () {
  "use strict";
  var main = document.getElementById("main");
  if (!main || !window.EventSource) { return; }
  var live = main.getAttribute("data-live");
  if (!live) { return; }
  var base = "/_sandbox/console/events";
  var status = document.getElementById("live-status");
  var source = new EventSource(base);
  function say(text) { if (status) { status.textContent = text; } }
  source.onopen = function () { say(status ? status.getAttribute("data-on") || "" : ""); };
  source.onerror = function () { say(status ? status.getAttribute("data-off") || "" : ""); };

  function cell(row, text, header) {
    var c = document.createElement(header ? "th" : "td");
    if (header) { c.setAttribute("scope", "row"); }
    c.textContent = text == null ? "" : String(text);
    row.appendChild(c);
  }

  if (live === "tail") {
    var body = document.getElementById("tail-body");
    var empty = document.getElementById("tail-empty");
    var add = function (kind, event) {
      if (!body) { return; }
      var data;
      try { data = JSON.parse(event.data); } catch (err) { return; }
      var row = document.createElement("tr");
      row.setAttribute("data-kind", kind);
      cell(row, data.at || data.dueAt || "", true);
      cell(row, kind);
      var what = kind === "request" ? (data.method || "") + " " + (data.path || "")
        : kind === "callback" ? (data.eventId || "") + " " + (data.url || "")
        : (data.kind || "") + " " + (data.ref || "");
      cell(row, what);
      cell(row, data.statusCode != null ? data.statusCode : (data.outcome || data.error || ""));
      body.insertBefore(row, body.firstChild);
      while (body.rows.length > 200) { body.deleteRow(body.rows.length - 1); }
      if (empty) { empty.hidden = true; }
    };
    ["request", "callback", "job"].forEach(function (kind) {
      source.addEventListener(kind, function (event) { add(kind, event); });
    });
    return;
  }

  var region = document.getElementById("live");
  if (!region) { return; }
  var pending = false;
  var refresh = function () {
    if (pending) { return; }
    pending = true;
    window.setTimeout(function () {
      fetch(window.location.href, { credentials: "same-origin", headers: { "Accept": "text/html" } })
        .then(function (response) { return response.ok ? response.text() : null; })
        .then(function (html) {
          pending = false;
          if (!html) { return; }
          var doc = new DOMParser().parseFromString(html, "text/html");
          var fresh = doc.getElementById("live");
          if (fresh) { region.replaceChildren.apply(region, Array.prototype.slice.call(fresh.childNodes)); }
        })
        .catch(function () { pending = false; });
    }, 250);
  };
  ["job", "request", "callback"].forEach(function (kind) { source.addEventListener(kind, refresh); });
}());
