// Handoff dashboard: live updates. Every element with data-live="URL" follows that SSE stream;
// the server sends rendered HTML fragments ("replace" or "append" {target, html}), so this file
// only puts them in place. Without this script every page still works (reload to refresh; a
// cancel is confirmed on a page of its own); with it, a task page also collects line comments
// on the diff, says in its title when a task waits for an approval, and (when allowed) shows
// a browser notification once per request.
(function () {
  "use strict";

  document.documentElement.classList.add("js");

  function setLive(on) {
    var badge = document.getElementById("live-state");
    if (badge) {
      badge.textContent = on ? "live" : "offline";
      badge.className = "live-state " + (on ? "on" : "off");
    }
    document.body.setAttribute("data-live-state", on ? "on" : "off");
  }

  var FINISHED = ["completed", "failed", "timeout", "cancelled"];
  var APPROVAL = "(approval) ";

  // The page as the state it shows: a finished task takes a message as a follow-up round (the
  // note says so), and a request waiting for an answer shows in the title.
  function settle() {
    var state = document.getElementById("task-state");
    var note = document.getElementById("message-note");
    if (state && note) {
      note.hidden = FINISHED.indexOf(state.getAttribute("data-status")) < 0;
    }
    if (!document.getElementById("task")) { return; }
    var requests = document.querySelectorAll("#pending form.request[data-request-id]");
    var plain = document.title.indexOf(APPROVAL) === 0 ? document.title.slice(APPROVAL.length) : document.title;
    document.title = requests.length ? APPROVAL + plain : plain;
    Array.prototype.forEach.call(requests, notify);
  }

  // --- Notifications: asked for only on a click of "Notify me"; one per request. ---

  function canNotify() {
    return "Notification" in window;
  }

  function notify(form) {
    if (!canNotify() || Notification.permission !== "granted") { return; }
    var id = form.getAttribute("data-request-id");
    var key = "handoff-notified-" + id;
    try {
      if (window.sessionStorage.getItem(key)) { return; }
      window.sessionStorage.setItem(key, "1");
    } catch (e) { /* storage off: this page's memory only */
      if (notify.seen && notify.seen[id]) { return; }
      notify.seen = notify.seen || {};
      notify.seen[id] = true;
    }
    var title = form.querySelector(".title");
    var task = document.getElementById("task").getAttribute("data-task-id");
    try {
      new Notification("Task " + task + " waits for an approval", {
        body: title ? title.textContent : "",
        tag: id,
      });
    } catch (e) { /* a browser that only notifies from a service worker */ }
  }

  function offerNotifications() {
    var button = document.getElementById("notify-me");
    if (!button || !canNotify() || Notification.permission !== "default") { return; }
    button.hidden = false;
    button.addEventListener("click", function () {
      Notification.requestPermission().then(function () {
        button.hidden = Notification.permission === "default";
        settle();
      });
    });
  }

  // --- Cancel asks first; the server then takes it without its own confirm page. ---

  function confirmControls() {
    document.addEventListener("click", function (event) {
      var button = event.target.closest && event.target.closest("button[data-confirm]");
      if (!button || !button.form) { return; }
      if (!window.confirm(button.getAttribute("data-confirm"))) {
        event.preventDefault();
        return;
      }
      var confirmed = button.form.querySelector("input[name=confirm]");
      if (!confirmed) {
        confirmed = document.createElement("input");
        confirmed.type = "hidden";
        confirmed.name = "confirm";
        button.form.appendChild(confirmed);
      }
      confirmed.value = "yes";
    });
  }

  // --- Line comments on the diff, sent together as one message. ---

  var comments = [];

  function lineOf(button) {
    var row = button.closest("tr");
    var text = row.querySelector(".txt").textContent;
    var fresh = button.getAttribute("data-new");
    return {
      row: row,
      file: button.getAttribute("data-file"),
      side: fresh ? "new" : "old",
      line: parseInt(fresh || button.getAttribute("data-old"), 10),
      text: text.slice(1),
    };
  }

  function element(tag, className, text) {
    var node = document.createElement(tag);
    if (className) { node.className = className; }
    if (text !== undefined) { node.textContent = text; }
    return node;
  }

  function openBox(button) {
    var line = lineOf(button);
    var next = line.row.nextElementSibling;
    if (next && next.classList.contains("cmt-box")) {
      next.querySelector("textarea").focus();
      return;
    }
    var row = element("tr", "cmt-box");
    var cell = element("td");
    cell.colSpan = 3;
    var input = element("textarea");
    input.rows = 2;
    input.setAttribute("aria-label", "Comment on " + line.file + ":" + line.line);
    var add = element("button", "cmt-add", "Add comment");
    add.type = "button";
    var drop = element("button", "cmt-cancel link", "Cancel");
    drop.type = "button";
    add.addEventListener("click", function () {
      var said = input.value.trim();
      if (!said) { input.focus(); return; }
      comments.push({ file: line.file, line: line.line, side: line.side, text: line.text, comment: said });
      line.row.classList.add("commented");
      row.remove();
      showComments();
    });
    drop.addEventListener("click", function () { row.remove(); });
    cell.appendChild(input);
    cell.appendChild(add);
    cell.appendChild(drop);
    row.appendChild(cell);
    line.row.parentNode.insertBefore(row, line.row.nextSibling);
    input.focus();
  }

  function showComments() {
    var section = document.getElementById("review");
    var list = document.getElementById("review-comments");
    if (!section || !list) { return; }
    while (list.firstChild) { list.removeChild(list.firstChild); }
    comments.forEach(function (c, n) {
      var item = element("li", "review-comment");
      var where = c.side === "new" ? c.file + ":" + c.line : c.file + ", removed line " + c.line;
      item.appendChild(element("code", "where", where));
      item.appendChild(element("span", "said", " " + c.comment + " "));
      var remove = element("button", "link remove", "Remove");
      remove.type = "button";
      remove.addEventListener("click", function () {
        comments.splice(n, 1);
        showComments();
      });
      item.appendChild(remove);
      list.appendChild(item);
    });
    section.hidden = comments.length === 0;
    document.getElementById("review-payload").value = JSON.stringify(comments);
  }

  function reviewComments() {
    document.addEventListener("click", function (event) {
      var button = event.target.closest && event.target.closest("button.cmt");
      if (button) { openBox(button); }
    });
    var form = document.getElementById("review-form");
    if (form) {
      form.addEventListener("submit", function (event) {
        if (!comments.length) { event.preventDefault(); return; }
        document.getElementById("review-payload").value = JSON.stringify(comments);
      });
    }
  }

  // --- Live updates. ---

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
    offerNotifications();
    confirmControls();
    reviewComments();
    settle();
    Array.prototype.forEach.call(document.querySelectorAll("[data-live]"), follow);
  });
})();
