// window.trailRender draws the page from its data; a served page calls it again after a live update.
window.trailRender = function(){
"use strict";
var data = JSON.parse(document.getElementById("tl-data").textContent);
var rows = data.rows, size = data.page, body = document.getElementById("tl-rows");
var pager = document.getElementById("tl-pager"), where = document.getElementById("tl-where");
var type = document.getElementById("tl-type"), standOut = document.getElementById("tl-stand-out");
var find = document.getElementById("tl-find");
var shown = rows, page = 0, target = 0;
function cell(tr, text, cls){var td = document.createElement("td"); td.textContent = text;
  if (cls) td.className = cls; tr.appendChild(td); return td;}
function header(text, cls){var tr = document.createElement("tr"); tr.className = cls;
  var td = cell(tr, text); td.colSpan = 5; return tr;}
function sessionText(g){if (g < 0) return "Recorded outside any agent session";
  var s = data.sessions[g]; return "Session " + s.agent + " " + s.id + " (linked at [" + s.at + "])";}
function attemptText(a){var at = data.attempts[a]; if (!at) return "Attempt [" + a + "]";
  var end = at.outcome ? " \u2014 " + at.outcome + (at.reason ? ": " + at.reason : "") : " \u2014 open";
  return "Attempt [" + a + "] " + at.text + end;}
function pages(){return Math.max(1, Math.ceil(shown.length / size));}
function show(n){
  page = Math.min(Math.max(0, n), pages() - 1);
  var frag = document.createDocumentFragment(), first = page * size, last = Math.min(shown.length, first + size);
  var g = null, a = null;
  for (var i = first; i < last; i++){
    var r = shown[i];
    if (r[6] !== g){g = r[6]; a = null; frag.appendChild(header(sessionText(g), "group group-session"));}
    if (r[7] !== a){a = r[7];
      if (a){var at = data.attempts[a];
        frag.appendChild(header(attemptText(a), "group group-attempt" + (at && at.failed ? " failed" : "")));}}
    var tr = document.createElement("tr");
    var cls = "row" + (r[5] ? " " + r[5] : "") + (r[7] ? " in-attempt" : "");
    if (r[7] && data.attempts[r[7]] && data.attempts[r[7]].failed) cls += " in-failed-attempt";
    if (r[0] === target) cls += " target";
    tr.className = cls; tr.id = "event-" + r[0]; tr.setAttribute("data-position", r[0]);
    cell(tr, "[" + r[0] + "]", "p"); cell(tr, r[1], "t"); cell(tr, r[2], "a"); cell(tr, r[3], "k");
    cell(tr, r[4], "s"); frag.appendChild(tr);
  }
  body.textContent = ""; body.appendChild(frag);
  pager.setAttribute("data-page", String(page + 1)); pager.setAttribute("data-pages", String(pages()));
  pager.setAttribute("data-total", String(shown.length));
  where.textContent = shown.length ? "page " + (page + 1) + " of " + pages() + " \u00b7 rows " + (first + 1) +
    "\u2013" + last + " of " + shown.length : "no events match";
}
var standing = {fail: 1, corr: 1, att: 1, "att-failed": 1};
function filter(){
  var k = type.value, only = standOut.checked, q = find.value.toLowerCase();
  shown = (!k && !only && !q) ? rows : rows.filter(function(r){
    return (!k || r[3] === k) && (!only || standing[r[5]] || (r[7] && data.attempts[r[7]] &&
      data.attempts[r[7]].failed && r[3] === "AttemptEnded")) &&
      (!q || (r[4] + " " + r[2] + " " + r[3]).toLowerCase().indexOf(q) >= 0);});
  show(0);
}
function goto(position){
  var i = -1; for (var j = 0; j < shown.length; j++){ if (shown[j][0] === position){ i = j; break; } }
  if (i < 0){ shown = rows; type.value = ""; standOut.checked = false; find.value = "";
    for (j = 0; j < rows.length; j++){ if (rows[j][0] === position){ i = j; break; } } }
  if (i < 0) return false;
  target = position; show(Math.floor(i / size));
  var el = document.getElementById("event-" + position); if (el && el.scrollIntoView) el.scrollIntoView();
  return true;
}
function fromHash(){
  var m = /^#page=(\d+)$/.exec(location.hash), p = /^#event-(\d+)$/.exec(location.hash);
  if (m) { show(parseInt(m[1], 10) - 1); return true; }
  if (p) return goto(parseInt(p[1], 10));
  return false;
}
document.getElementById("tl-first").onclick = function(){show(0);};
document.getElementById("tl-prev").onclick = function(){show(page - 1);};
document.getElementById("tl-next").onclick = function(){show(page + 1);};
document.getElementById("tl-last").onclick = function(){show(pages() - 1);};
type.onchange = filter; standOut.onchange = filter; find.oninput = filter;
window.onhashchange = fromHash;  // one handler however often the page is drawn
window.trailReport = {page: function(n){show(n - 1); return page + 1;}, pages: pages, goto: goto,
  rows: function(){return body.querySelectorAll("tr.row").length;}};
if (!fromHash()) show(0);
};
window.trailRender();
