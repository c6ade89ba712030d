// Handoff dashboard: live updates. Every element with data-live="URL" follows that SSE stream;
// the server sends rendered HTML fragments ("replace" or "append" {target, html}), so this file
// only puts them in place. Without this script every page still works (reload to refresh).
(function () {
  "use strict";

  function setLive(on) {
    var badge = document.getElementById("live-state");
    if (badge) {
      badge.textContent = on ? "live" : "offline";
      badge.className = "live-state " + (on ? "on" : "off");
    }
    document.body.setAttribute("data-live-state", on ? "on" : "off");
  }

  var FINISHED = ["completed", "failed", "timeout", "cancelled"];

  // A finished task takes no more messages: hide the form the page was rendered with.
  function settle() {
    var state = document.getElementById("task-state");
    var form = document.getElementById("message-form");
    if (state && form && FINISHED.indexOf(state.getAttribute("data-status")) >= 0) {
      form.hidden = true;
    }
  }

  function fragment(event) {
    try {
      var data = JSON.parse(event.data);
      var target = document.getElementById(data.target);
      return target ? { target: target, html: data.html } : null;
    } catch (e) {
      return null;
    }
  }

  function follow(element) {
    var source = new EventSource(element.getAttribute("data-live"));
    source.onopen = function () { setLive(true); };
    source.onerror = function () { setLive(false); };
    source.addEventListener("replace", function (event) {
      var f = fragment(event);
      if (f) {
        f.target.innerHTML = f.html;
        settle();
      }
    });
    source.addEventListener("append", function (event) {
      var f = fragment(event);
      if (!f) { return; }
      var holder = document.createElement("template");
      holder.innerHTML = f.html;
      Array.prototype.forEach.call(holder.content.children, function (child) {
        // A reconnect may resend what is already shown.
        if (!child.id || !document.getElementById(child.id)) {
          f.target.appendChild(child.cloneNode(true));
        }
      });
    });
    source.addEventListener("problem", function (event) {
      try {
        document.body.setAttribute("data-live-problem", JSON.parse(event.data).message);
      } catch (e) { /* ignored: the next update retries */ }
    });
  }

  document.addEventListener("DOMContentLoaded", function () {
    Array.prototype.forEach.call(document.querySelectorAll("[data-live]"), follow);
  });
})();
