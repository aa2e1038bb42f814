// The served index (`trail serve`) follows the ledger: it asks the server for the ledger's version (its last
// notification), and when that moved it loads the same page (the same search) anew and draws it in place,
// keeping what the reader is typing into the search box.
(function(){
"use strict";
var root = document.documentElement, every = 1000;
function redraw(html, version){
  var doc = new DOMParser().parseFromString(html, "text/html");
  var box = document.getElementById("q"), typed = box ? box.value : "", focused = document.activeElement === box;
  var y = window.scrollY;
  document.body.replaceWith(document.adoptNode(doc.body));  // a parsed document's scripts never run
  document.title = doc.title;
  root.setAttribute("data-version", String(version));
  box = document.getElementById("q");
  if (box){ box.value = typed; if (focused) box.focus(); }
  window.scrollTo(0, y);
}
function poll(){
  fetch(root.getAttribute("data-live"), {cache: "no-store"}).then(function(r){
    return r.ok ? r.json() : null;
  }).then(function(d){
    if (!d || String(d.version) === root.getAttribute("data-version")) return;
    return fetch(location.pathname + location.search, {cache: "no-store"}).then(function(r){
      return r.text().then(function(t){ if (r.ok) redraw(t, d.version); });
    });
  }).catch(function(){}).then(function(){ setTimeout(poll, every); });
}
setTimeout(poll, every);
})();
