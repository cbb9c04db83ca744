"""hypatia.d3viz: the self-contained interactive page, checked as text and in a real headless
Chromium (Debian's chromium, installed by scripts/install_deps.sh): after the page's script ran,
every graph node carries its data-node attribute and a node opened by #show= has its details
(op, the rewrite that made it, the user line, its profile share) in the side panel."""
import json
import re
import shutil
import subprocess

import numpy as np
import pytest

import hypatia
import hypatia.tensor as T
from hypatia import d3viz


def _function():
    x = T.dvector("x")
    s = hypatia.shared(np.ones(3), "s")
    f = hypatia.function([x], T.exp(x) * s + T.dot(x, x), profile=True, name="step")
    f(np.ones(3))
    return f


def test_page_is_self_contained_and_carries_each_nodes_details(tmp_path):
    f = _function()
    out = tmp_path / "graph.html"
    assert d3viz.d3viz(f, str(out)) == str(out)
    page = out.read_text()
    assert "<svg" in page and "hypatia-graph-data" in page
    # No network: nothing is fetched (the only URLs are SVG/XLink namespace names).
    assert not re.search(r'<(script|link|img)[^>]+(src|href)=', page)
    assert not [u for u in re.findall(r'https?://[^"\s<>]+', page) if "www.w3.org" not in u]
    data = json.loads(re.search(r'id="hypatia-graph-data" type="application/json">(.*?)</script>', page, re.S).group(1))
    applies = [v for v in data["nodes"].values() if v["kind"] == "apply"]
    assert len(applies) == len(f.maker.fgraph.toposort())
    for a in applies:
        assert {"op", "op_kind", "made_by", "created_at", "inputs", "outputs", "profile"} <= set(a)
        assert "test_d3viz.py" in a["created_at"]
    assert any(a["made_by"] for a in applies)  # fusion made the Elemwise{Composite}
    assert sum(float(a["profile"].split("%")[0]) for a in applies) == pytest.approx(100.0, abs=0.5)


@pytest.mark.skipif(shutil.which("chromium") is None, reason="Debian's chromium is not installed")
def test_page_runs_in_headless_chromium(tmp_path):
    f = _function()
    out = tmp_path / "graph.html"
    d3viz.d3viz(f, str(out))
    page = out.read_text()
    data = json.loads(re.search(r'id="hypatia-graph-data" type="application/json">(.*?)</script>', page, re.S).group(1))
    fused = next(k for k, v in data["nodes"].items() if v["kind"] == "apply" and v["made_by"])
    cmd = ["chromium", "--headless", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage",
           f"--user-data-dir={tmp_path / 'profile'}"]
    r = subprocess.run(cmd + ["--dump-dom", out.as_uri() + "#show=" + fused], capture_output=True, text=True,
                       timeout=120)
    assert r.returncode == 0, r.stderr[-2000:]
    dom = r.stdout
    n_nodes = len(re.findall(r'<g id="node\d+" class="node"', page))
    assert n_nodes >= 4
    assert len(re.findall(r'<g [^>]*data-node="', dom)) == n_nodes  # the script ran over every node
    details = re.search(r'<div id="details">(.*?)</div>', dom, re.S).group(1)
    assert "<table>" in details and "made_by" in details and data["nodes"][fused]["made_by"] in details
    assert "test_d3viz.py" in details and "%" in details  # user line and profile share
    assert 'class="node selected"' in dom
    shot = tmp_path / "shot.png"
    r = subprocess.run(cmd + [f"--screenshot={shot}", "--window-size=1000,700", out.as_uri()], capture_output=True,
                       timeout=120)
    assert r.returncode == 0 and shot.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
