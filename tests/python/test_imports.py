"""The package's module graph has no import cycle.

Each module's imports are read with ast (every import statement, at module level or inside a
function) and turned into edges between the package's modules. Importing hypatia.a.b first runs
the package hypatia.a, so an import of hypatia.a.b is an edge to hypatia.a.b and to hypatia.a, except
from a module inside hypatia.a (its package is already being initialized, and reading a submodule
of a partly initialized package works); importing a *name* (not a submodule) from a package is an
edge to that package wherever it is written. The root package is the entry point (every module is
reached through it), so only names read from it count as edges to it.
"""
import ast
import os

import pytest

import hypatia


def _module_files(root_dir, root_name):
    """{module name: file} for the .py modules of the package, and the names of its extension
    modules."""
    modules, extensions = {}, set()
    for dirpath, _, files in os.walk(root_dir):
        rel = os.path.relpath(dirpath, root_dir)
        parts = [root_name] + ([] if rel == "." else rel.split(os.sep))
        if "__init__.py" not in files:
            continue
        for f in files:
            if f == "__init__.py":
                modules[".".join(parts)] = os.path.join(dirpath, f)
            elif f.endswith(".py"):
                modules[".".join(parts + [f[:-3]])] = os.path.join(dirpath, f)
            elif f.endswith((".so", ".pyd")):
                extensions.add(".".join(parts + [f.split(".")[0]]))
    return modules, extensions


def module_graph(root_dir, root_name, extension_modules=()):
    """{module: set of modules it imports} over the package's modules (see the module docstring);
    extension_modules: compiled modules the folder may lack (a source tree)."""
    modules, extensions = _module_files(root_dir, root_name)
    known = set(modules) | extensions | set(extension_modules)
    graph = {m: set() for m in known}

    for mod, path in modules.items():
        package = mod if path.endswith("__init__.py") else mod.rpartition(".")[0]
        edges = graph[mod]

        def inside(pkg, mod=mod):
            return mod == pkg or mod.startswith(pkg + ".")

        def add_module(name, mod=mod, edges=edges, inside=inside):
            """An import of module `name`: it and the packages above it run first, except the
            packages `mod` is inside (already being initialized)."""
            parts = name.split(".")
            for i in range(2, len(parts) + 1):
                p = ".".join(parts[:i])
                if p in known and p != mod and not inside(p):
                    edges.add(p)

        with open(path, encoding="utf-8") as f:
            tree = ast.parse(f.read(), path)
        for node in ast.walk(tree):
            if isinstance(node, ast.Import):
                for alias in node.names:
                    if alias.name == root_name or alias.name.startswith(root_name + "."):
                        add_module(alias.name)
            elif isinstance(node, ast.ImportFrom):
                if node.level:
                    base = package.split(".")
                    if node.level > 1:
                        base = base[: len(base) - node.level + 1]
                    base = ".".join(base + ([node.module] if node.module else []))
                else:
                    base = node.module or ""
                if not (base == root_name or base.startswith(root_name + ".")):
                    continue
                if base != root_name:
                    add_module(base)
                for alias in node.names:
                    sub = f"{base}.{alias.name}"
                    if sub in known:
                        if sub != mod:
                            edges.add(sub)
                    elif base != mod:
                        # A name read from a module or package: it must be initialized first.
                        edges.add(base)
    return graph


def find_cycle(graph):
    """A cycle of the graph as a list of modules (its first module repeated at the end), or None."""
    color = {m: 0 for m in graph}
    for start in sorted(graph):
        if color[start]:
            continue
        stack = [(start, iter(sorted(graph[start])))]
        path = [start]
        color[start] = 1
        while stack:
            node, children = stack[-1]
            for child in children:
                if color.get(child, 0) == 1:
                    return path[path.index(child):] + [child]
                if color.get(child, 0) == 0:
                    color[child] = 1
                    path.append(child)
                    stack.append((child, iter(sorted(graph.get(child, ())))))
                    break
            else:
                color[node] = 2
                path.pop()
                stack.pop()
    return None


def _write(root, files):
    for rel, text in files.items():
        p = root / rel
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_text(text)


def test_the_checker_finds_cycles_and_accepts_sibling_imports(tmp_path):
    pkg = tmp_path / "pkg"
    _write(pkg, {
        "__init__.py": "from pkg import a\nfrom pkg import sub\n",
        "a.py": "from pkg.sub import b\n",
        "sub/__init__.py": "from pkg.sub import b\nfrom pkg.sub.b import f\n",
        "sub/b.py": "import pkg.a\ndef f():\n    pass\n",
    })
    g = module_graph(str(pkg), "pkg")
    assert g["pkg.a"] == {"pkg.sub", "pkg.sub.b"}
    assert g["pkg.sub"] == {"pkg.sub.b"}  # its own submodules: no edge back to itself
    assert find_cycle(g) == ["pkg.a", "pkg.sub", "pkg.sub.b", "pkg.a"]

    # Two modules that import each other inside functions are a cycle too.
    _write(pkg, {"sub/b.py": "def f():\n    from pkg import a\n", "a.py": "def g():\n    from pkg.sub.b import f\n"})
    assert find_cycle(module_graph(str(pkg), "pkg")) is not None

    # Reading a name (not a submodule) from a package one is inside waits for that package.
    _write(pkg, {"sub/b.py": "from pkg.sub import something\n", "a.py": ""})
    assert find_cycle(module_graph(str(pkg), "pkg")) == ["pkg.sub", "pkg.sub.b", "pkg.sub"]

    # Relative imports resolve against the package; a sibling submodule is no cycle.
    _write(pkg, {"sub/b.py": "from . import c\nfrom .c import h\n", "sub/c.py": "def h():\n    pass\n"})
    g = module_graph(str(pkg), "pkg")
    assert g["pkg.sub.b"] == {"pkg.sub.c"}
    assert find_cycle(g) is None


def test_hypatia_has_no_import_cycle():
    root = os.path.dirname(os.path.abspath(hypatia.__file__))
    graph = module_graph(root, "hypatia")
    for m in ("hypatia.tensor.basic", "hypatia.tensor.shape_ops", "hypatia.compile.function", "hypatia.gof.graph",
              "hypatia.tensor.nnet.basic", "hypatia._core"):
        assert m in graph, m
    assert "hypatia.tensor.basic" not in graph["hypatia.tensor.shape_ops"]
    cycle = find_cycle(graph)
    assert cycle is None, "import cycle: " + " -> ".join(cycle)


@pytest.mark.parametrize("module", ["hypatia.tensor.shape_ops", "hypatia.compile.sharedvalue", "hypatia.gof.graph",
                                    "hypatia.tensor.nnet", "hypatia.scan_module.scan_utils"])
def test_each_module_imports_first_in_a_fresh_interpreter(module):
    import subprocess
    import sys

    code = f"import importlib; m = importlib.import_module({module!r}); print(m.__name__)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == module
