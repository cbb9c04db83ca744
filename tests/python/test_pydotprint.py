"""pydotprint through Graphviz: the DOT text's structure (kinds, colours, inplace and view edges,
scan clusters, ifelse roles) and real renderings by dot (SVG parsed as XML, PNG and PDF headers)."""
import re
import shutil
import xml.etree.ElementTree as ET

import numpy as np
import pytest

import hypatia
import hypatia.tensor as T
from hypatia.ifelse import ifelse
from hypatia.printing import graph_to_dot, pydotprint


def _nodes(dot):
    """id -> attribute text of every node statement."""
    return dict(re.findall(r"^\s*(\w+) \[(label=.*)\];$", dot, re.M))


@pytest.mark.host_graphs
def test_variables_and_ops_are_drawn_by_kind():
    x = T.dvector("x")
    s = hypatia.shared(np.ones(2), "s")
    f = hypatia.function([x], T.exp(x) * s + T.dot(x, x), updates=[(s, s * 2)])
    dot = graph_to_dot(f)
    nodes = _nodes(dot)
    fills = [re.search(r'fillcolor="([^"]+)"', a).group(1) for a in nodes.values()]
    assert "green" in fills and "cyan" in fills and "SpringGreen" in fills and "dodgerblue" in fills
    labels = {re.search(r'label="([^"]*)"', a).group(1): a for a in nodes.values()}
    assert "#AACCFF" in labels["dot"]  # BLAS
    assert any(k.startswith("Elemwise{Composite") and "#FFAABB" in a for k, a in labels.items())
    assert 'x\\nfloat64 (n)' in labels
    # every op of the compiled graph is drawn once
    assert sum(1 for a in nodes.values() if "shape=ellipse" in a) == len(f.maker.fgraph.toposort())


def test_inplace_and_view_edges_are_marked():
    a, b = T.dmatrix("a"), T.dmatrix("b")
    f = hypatia.function([a, b], T.dot(b, b) + T.exp(a))
    dot = graph_to_dot(f)
    destroyers = [n for n in f.maker.fgraph.toposort() if n.op.destroy_map]
    assert destroyers, hypatia.printing.debugprint(f, file="str")
    assert 'xlabel="inplace"' in dot and 'color="red"' in dot
    g = hypatia.function([a], a.T * 1 + 0)
    viewers = [n for n in g.maker.fgraph.toposort() if n.op.view_map]
    assert ('xlabel="view"' in graph_to_dot(g)) == bool(viewers)


def test_scan_bodies_are_clusters_and_ifelse_inputs_are_labelled():
    x = T.dvector("x")
    ys, _ = hypatia.scan(lambda v, acc: acc + v * 2, sequences=[x], outputs_info=[T.constant(0.0, dtype="float64")])
    dot = graph_to_dot(hypatia.function([x], ys))
    assert "subgraph cluster_" in dot and "inner graph of Scan" in dot and 'fillcolor="yellow"' in dot
    c = T.dscalar("c")
    d = graph_to_dot(hypatia.function([x, c], ifelse(T.gt(c, 0), x * 2, x * 3)))
    assert 'label="cond 0:' in d and 'label="then 1:' in d and re.search(r'label="else \d+:', d)
    assert 'fillcolor="magenta"' in d
    # variables' graphs (not compiled) too
    assert "Elemwise{mul" in graph_to_dot(x * 2)


@pytest.mark.skipif(shutil.which("dot") is None, reason="Graphviz's dot is not installed")
def test_graphviz_renders_svg_png_and_pdf(tmp_path):
    x = T.dvector("x")
    f = hypatia.function([x], T.tanh(x).sum())
    svg = pydotprint(f, format="svg", return_image=True)
    root = ET.fromstring(svg)
    titles = [t.text for t in root.iter("{http://www.w3.org/2000/svg}title")]
    assert "G" in titles and sum(1 for t in titles if t and "->" in t) >= 2  # nodes and edges were laid out
    texts = " ".join(t.text or "" for t in root.iter("{http://www.w3.org/2000/svg}text"))
    assert "float64" in texts
    out = tmp_path / "g.png"
    pydotprint(f, outfile=str(out), format="png", print_output_file=False)
    assert out.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert pydotprint(f, format="pdf", return_image=True)[:5] == b"%PDF-"
    assert pydotprint(f, format="dot", return_image=True).startswith(b"digraph G {")
    with pytest.raises(TypeError, match="pydotprint"):
        pydotprint(3)


def test_edges_carry_shapes_where_known():
    # Shapes: a shared variable's and a constant's always; intermediates' from a profiled
    # function's calls; otherwise the broadcast pattern.
    x = T.fmatrix("x")
    W = hypatia.shared(np.ones((5, 3), "float32"), "W")
    f = hypatia.function([x], T.tanh(T.dot(x, W)).sum(axis=0), profile=True)
    before = graph_to_dot(f)
    assert "float32 (5, 3)" in before  # W
    assert "(4, 3)" not in before  # nothing has run yet
    f(np.ones((4, 5), "float32"))
    after = graph_to_dot(f)
    assert "float32 (4, 3)" in after  # the product's output
    assert "float32 (3,)" in after  # the sum
    g = hypatia.function([x], T.exp(x) + 1)
    assert "float32 (nn)" in graph_to_dot(g)  # unknown shapes: the broadcast pattern
    hypatia.compile._profiled.clear()
