"""Programs written as Theano users wrote them (the Deep Learning Tutorials' models, scan loops,
random streams, custom ops, pickled checkpoints, the debugging tools), with `import hypatia as
theano` in place of `import theano`: tests/python/programs/. Each checks its own results against
numpy (values, gradients against finite differences, losses that fall) and exits non-zero with
the failed checks listed. They were written by adversarial test sessions (2026-12-07); what they
found failing is fixed and tested in the suites of those areas. Each runs in a fresh interpreter
on the CPU and on the emulated GPU (device=cuda over host memory: placement and its transfers).
A line "GAP ..." in a program's output is a Theano feature it found missing and worked around."""
import os
import pathlib
import subprocess
import sys

import pytest

PROGRAMS = pathlib.Path(__file__).parent / "programs"
NAMES = sorted(p.name for p in PROGRAMS.glob("*.py"))


@pytest.mark.parametrize("device", ["cpu", "emulated_gpu"])
@pytest.mark.parametrize("name", NAMES)
def test_a_theano_users_program_runs_as_written(name, device, tmp_path):
    env = {k: v for k, v in os.environ.items() if k not in ("HYPATIA_FLAGS", "THEANO_FLAGS")}
    path = str(PROGRAMS / name)
    if device == "cpu":
        cmd = [sys.executable, path]
    else:
        env["HYPATIA_FLAGS"] = "device=cuda"
        cmd = [sys.executable, "-c",
               "import runpy, sys, hypatia; hypatia._core._install_emulated_gpu(as_default=True); "
               f"sys.argv = [{path!r}]; runpy.run_path({path!r}, run_name='__main__')"]
    r = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=300, cwd=tmp_path)
    assert r.returncode == 0, f"{name} on {device}:\n{r.stdout[-4000:]}\n{r.stderr[-4000:]}"


def test_the_programs_are_there():
    assert len(NAMES) >= 25, NAMES
