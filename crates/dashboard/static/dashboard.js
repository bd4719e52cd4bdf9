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
