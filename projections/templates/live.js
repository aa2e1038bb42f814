// A served page (`trail serve`) follows its task: it asks the server for the task's position, and when the
// task has grown it loads the page anew and draws it in place (no reload: the reader keeps the scroll).
(function(){
"use strict";
var root = document.documentElement, every = 1000;
var state = function(){ return document.getElementById("live-state"); };
function say(text, failed){ var el = state(); if (el){ el.textContent = text; el.className = failed ? "live-error" : "muted"; } }
function byId(id){ return document.getElementById(id); }
function redraw(html, position){
  var doc = new DOMParser().parseFromString(html, "text/html");
  // What the reader chose stays: the timeline's filters, its page, the scroll.
  var kept = {type: byId("tl-type").value, only: byId("tl-stand-out").checked, find: byId("tl-find").value,
              page: Number(byId("tl-pager").getAttribute("data-page")) || 1, y: window.scrollY};
  // The new body's scripts are inert (a parsed document's scripts never run); the page's own draw it.
  document.body.replaceWith(document.adoptNode(doc.body));
  document.title = doc.title;
  root.setAttribute("data-position", String(position));
  window.trailRender();
  byId("tl-type").value = kept.type; byId("tl-stand-out").checked = kept.only; byId("tl-find").value = kept.find;
  if (kept.type || kept.only || kept.find) byId("tl-find").oninput();
  if (kept.page > 1) window.trailReport.page(kept.page);
  window.scrollTo(0, kept.y);
  say("live: updated at event " + position, false);
}
function poll(){
  fetch(root.getAttribute("data-live"), {cache: "no-store"}).then(function(r){
    return r.json().then(function(d){ return {ok: r.ok, d: d}; });
  }).then(function(a){
    if (!a.ok){ say(a.d.error || "the server refused the task", true); return; }
    if (String(a.d.position) === root.getAttribute("data-position")) return;
    return fetch(location.pathname, {cache: "no-store"}).then(function(r){
      return r.text().then(function(t){ if (r.ok) redraw(t, a.d.position); else say(t, true); });
    });
  }).catch(function(){ say("live: the server is not answering", true); })
    .then(function(){ setTimeout(poll, every); });
}
setTimeout(poll, every);
})();
