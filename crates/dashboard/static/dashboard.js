// airlock dashboard: optional live refresh of the queue. The page works without it.
// Every few seconds, while the tab is visible and nobody is typing, it fetches the
// queue's fragment (same origin, same session) and swaps in the parts marked
// data-live-part. The fragment is server-rendered and escaped like every page.
(function () {
  "use strict";
  var marker = document.getElementById("live");
  if (!marker || !window.fetch || !window.DOMParser) return;
  var url = marker.getAttribute("data-live");
  var seconds = parseInt(marker.getAttribute("data-refresh"), 10);
  if (!url || !(seconds > 0)) return;

  function typing() {
    var el = document.activeElement;
    return el && (el.tagName === "INPUT" || el.tagName === "TEXTAREA" || el.tagName === "SELECT");
  }

  function refresh() {
    if (document.hidden || typing()) return schedule();
    fetch(url, { credentials: "same-origin", redirect: "manual", headers: { "Accept": "text/html" } })
      .then(function (res) {
        // A redirect means the session ended: stop, the next click goes to the login page.
        if (res.type === "opaqueredirect" || !res.ok) return null;
        return res.text();
      })
      .then(function (html) {
        if (html === null) return;
        var doc = new DOMParser().parseFromString(html, "text/html");
        doc.querySelectorAll("[data-live-part]").forEach(function (fresh) {
          var name = fresh.getAttribute("data-live-part");
          var old = document.querySelector('[data-live-part="' + name + '"]');
          if (old) old.replaceWith(document.importNode(fresh, true));
        });
        schedule();
      })
      .catch(schedule);
  }

  function schedule() {
    window.setTimeout(refresh, seconds * 1000);
  }

  schedule();
})();

// Compose: checks the draft as the operator types, a moment after the last key, and
// shows the server's answer (rules, problems, preview) beside the form. The page's
// Check button does the same without JavaScript.
(function () {
  "use strict";
  var form = document.getElementById("compose");
  if (!form || !window.fetch || !window.FormData || !window.URLSearchParams || !window.DOMParser) return;
  var url = form.getAttribute("data-check");
  if (!url) return;
  var timer = null;
  var sent = 0;

  function check() {
    var mine = ++sent;
    var body = new URLSearchParams(new FormData(form)).toString();
    fetch(url, {
      method: "POST",
      credentials: "same-origin",
      redirect: "manual",
      headers: { "Content-Type": "application/x-www-form-urlencoded", "Accept": "text/html" },
      body: body,
    })
      .then(function (res) {
        // A redirect means the session ended: leave the page as it is.
        if (res.type === "opaqueredirect" || !res.ok) return null;
        return res.text();
      })
      .then(function (html) {
        // An older answer that arrives late never replaces a newer one.
        if (html === null || mine !== sent) return;
        var fresh = new DOMParser().parseFromString(html, "text/html").getElementById("compose-check");
        var old = document.getElementById("compose-check");
        if (fresh && old) old.replaceWith(document.importNode(fresh, true));
        // The date and time are in the channel's zone: name the chosen channel's.
        var zone = document.getElementById("compose-zone");
        if (fresh && zone) zone.textContent = fresh.getAttribute("data-timezone") || zone.textContent;
      })
      .catch(function () {});
  }

  function later() {
    window.clearTimeout(timer);
    timer = window.setTimeout(check, 400);
  }

  form.addEventListener("input", later);
  form.addEventListener("change", later);
})();
