"""hypatia.d3viz: an interactive view of a compiled function's graph in one self-contained HTML
file (Theano's d3viz.d3viz(fct, outfile)): the Graphviz layout of pydotprint as inline SVG, with
pan (drag), zoom (wheel, or the + / - / fit buttons) and, on a click, a node's details: its op and
kind, input and output types, the rewrite that made it, the line of user code that began it, and
its share of the profile when the function was compiled with profile=True and has run. No
network: no script, style or font is fetched.
"""
import html
import json

from hypatia._pydot import _build, _render

__all__ = ["d3viz", "d3viz_html"]

_PAGE = """<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8"><title>%(title)s</title>
<style>
body { margin: 0; font-family: Helvetica, Arial, sans-serif; display: flex; height: 100vh; }
#view { flex: 1; overflow: hidden; cursor: grab; background: #fafafa; }
#view svg { width: 100%%; height: 100%%; }
#side { width: 340px; border-left: 1px solid #ccc; padding: 10px; overflow: auto; font-size: 13px; }
#side h2 { font-size: 15px; margin: 4px 0 8px; }
#side table { border-collapse: collapse; }
#side td { padding: 2px 6px; vertical-align: top; border-bottom: 1px solid #eee; }
#tools button { margin-right: 4px; }
g.node { cursor: pointer; }
g.node.selected > ellipse, g.node.selected > polygon { stroke: #d00; stroke-width: 3px; }
</style></head><body>
<div id="view">%(svg)s</div>
<div id="side"><div id="tools"><button id="zin">+</button><button id="zout">-</button><button id="fit">fit</button></div>
<h2>%(title)s</h2><div id="details">Click a node to see its details.</div></div>
<script id="hypatia-graph-data" type="application/json">%(data)s</script>
<script>
(function () {
  var data = JSON.parse(document.getElementById("hypatia-graph-data").textContent);
  var svg = document.querySelector("#view svg");
  var vb = svg.viewBox.baseVal, home = {x: vb.x, y: vb.y, w: vb.width, h: vb.height};
  function setView(x, y, w, h) { svg.setAttribute("viewBox", x + " " + y + " " + w + " " + h); }
  function zoom(f, cx, cy) {
    var b = svg.viewBox.baseVal;
    if (cx === undefined) { cx = b.x + b.width / 2; cy = b.y + b.height / 2; }
    setView(cx - (cx - b.x) * f, cy - (cy - b.y) * f, b.width * f, b.height * f);
  }
  function toSvg(evt) {
    var b = svg.viewBox.baseVal, r = svg.getBoundingClientRect();
    return {x: b.x + (evt.clientX - r.left) / r.width * b.width, y: b.y + (evt.clientY - r.top) / r.height * b.height};
  }
  svg.addEventListener("wheel", function (evt) {
    evt.preventDefault(); var p = toSvg(evt); zoom(evt.deltaY > 0 ? 1.15 : 1 / 1.15, p.x, p.y);
  });
  var drag = null;
  svg.addEventListener("mousedown", function (evt) { drag = {x: evt.clientX, y: evt.clientY}; });
  window.addEventListener("mouseup", function () { drag = null; });
  window.addEventListener("mousemove", function (evt) {
    if (!drag) return;
    var b = svg.viewBox.baseVal, r = svg.getBoundingClientRect();
    var dx = (evt.clientX - drag.x) / r.width * b.width, dy = (evt.clientY - drag.y) / r.height * b.height;
    setView(b.x - dx, b.y - dy, b.width, b.height); drag = {x: evt.clientX, y: evt.clientY};
  });
  document.getElementById("zin").onclick = function () { zoom(1 / 1.3); };
  document.getElementById("zout").onclick = function () { zoom(1.3); };
  document.getElementById("fit").onclick = function () { setView(home.x, home.y, home.w, home.h); };
  function esc(t) { var d = document.createElement("div"); d.textContent = String(t); return d.innerHTML; }
  function show(id, g) {
    var info = data.nodes[id]; if (!info) return;
    document.querySelectorAll("g.node.selected").forEach(function (e) { e.classList.remove("selected"); });
    g.classList.add("selected");
    var rows = [];
    Object.keys(info).forEach(function (k) {
      var v = info[k]; if (Array.isArray(v)) v = v.join(", ");
      rows.push("<tr><td>" + esc(k) + "</td><td>" + esc(v === "" ? "-" : v) + "</td></tr>");
    });
    document.getElementById("details").innerHTML = "<table>" + rows.join("") + "</table>";
  }
  document.querySelectorAll("g.node").forEach(function (g) {
    var t = g.querySelector("title"); if (!t) return;
    g.setAttribute("data-node", t.textContent);
    g.addEventListener("click", function (evt) { evt.stopPropagation(); show(t.textContent, g); });
  });
  window.hypatiaGraph = {data: data, show: function (id) {
    var g = document.querySelector('g.node[data-node="' + id + '"]'); if (g) show(id, g); return !!g; }};
  // page.html#show=n3 opens with node n3's details (a link to one node; the browser test uses it)
  if (location.hash.indexOf("#show=") === 0) window.hypatiaGraph.show(decodeURIComponent(location.hash.slice(6)));
})();
</script></body></html>
"""


def _profile_shares(fct, info):
    prof = getattr(fct, "profile", None)
    nodes = getattr(prof, "nodes", None)
    if not nodes:
        return
    total = sum(n["seconds"] for n in nodes) or 0.0
    main = [k for k, v in info.items() if v.get("kind") == "apply" and v.get("graph") == "main"]
    if len(main) != len(nodes) or total <= 0:
        return
    for k in main:
        n = nodes[info[k]["position"]]
        info[k]["profile"] = f"{100.0 * n['seconds'] / total:.1f}% ({n['seconds']:.3e} s in {n['calls']} calls)"


def d3viz_html(fct, title=None):
    """The HTML text of the interactive view."""
    d = _build(fct)
    _profile_shares(fct, d.info)
    svg = _render(d.text, "svg").decode()
    svg = svg[svg.index("<svg"):]  # drop the XML prolog and DOCTYPE: the SVG is inline
    name = title or getattr(fct, "name", None) or "hypatia graph"
    data = json.dumps({"nodes": d.info}).replace("</", "<\\/")
    return _PAGE % {"title": html.escape(str(name)), "svg": svg, "data": data}


def d3viz(fct, outfile, copy_deps=True, *args, **kwargs):
    """Writes the interactive view of a compiled function's graph (or of variables) to outfile.
    copy_deps is accepted for Theano's signature: the page needs no other file."""
    with open(outfile, "w", encoding="utf-8") as fh:
        fh.write(d3viz_html(fct))
    return outfile
