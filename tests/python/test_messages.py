"""Messages a user meets: a malformed HYPATIA_FLAGS or ~/.hypatiarc fails the import naming the
source and the expected form; Theano's rc syntax and options are accepted; corrupted pickles raise
pickle.UnpicklingError."""
import os
import pickle
import subprocess
import sys

import numpy as np
import pytest

import hypatia
import hypatia.tensor as T


def run_import(tmp_path, flags=None, rc=None, code="import hypatia; print(hypatia.config.floatX)"):
    env = dict(os.environ, HOME=str(tmp_path))
    env.pop("HYPATIA_FLAGS", None)
    if flags is not None:
        env["HYPATIA_FLAGS"] = flags
    if rc is not None:
        (tmp_path / ".hypatiarc").write_text(rc)
    return subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, timeout=120)


def test_a_malformed_flags_variable_fails_the_import_with_its_name_and_the_expected_form(tmp_path):
    out = run_import(tmp_path, flags="garbage")
    assert out.returncode != 0
    assert "HYPATIA_FLAGS='garbage'" in out.stderr
    assert "key=value" in out.stderr
    assert "has no option 'floatX'" not in out.stderr


def test_a_bad_value_names_the_option_and_what_it_takes(tmp_path):
    out = run_import(tmp_path, flags="floatX=float8")
    assert out.returncode != 0
    assert "floatX must be one of float32, float64, float16; got 'float8'" in out.stderr


def test_a_malformed_rc_line_names_the_file_and_the_line(tmp_path):
    out = run_import(tmp_path, rc="[global]\nfloatX = float32\nthis is not an option\n")
    assert out.returncode != 0
    assert f"{tmp_path}/.hypatiarc line 3" in out.stderr
    assert "expected 'key = value'" in out.stderr


def test_theano_rc_syntax_is_accepted(tmp_path):
    rc = (
        "; a Theano-style rc file\n"
        "[global]\n"
        "floatX: float32   # inline comment\n"
        "device = cpu\n"
        "linker = cvm\n"
        "\n"
        "[nvcc]\n"
        "fastmath = True\n"
        "[blas]\n"
        "ldflags = -lopenblas\n"
    )
    out = run_import(tmp_path, rc=rc, flags="warn_float64=raise,nvcc.fastmath=True,mode=FAST_RUN")
    assert out.returncode == 0, out.stderr
    assert out.stdout.split() == ["float32"]
    assert "section [nvcc]" in out.stderr and "section [blas]" in out.stderr
    assert "'linker'" in out.stderr and "'warn_float64'" in out.stderr and "'nvcc.fastmath'" in out.stderr


def test_an_unknown_option_fails_the_import(tmp_path):
    out = run_import(tmp_path, flags="floatx=float32")
    assert out.returncode != 0
    assert "unknown option 'floatx'" in out.stderr


def test_theano_options_set_in_code_warn_and_unknown_ones_fail():
    with pytest.warns(UserWarning, match="warn_float64"):
        hypatia.config.warn_float64 = "raise"
    with pytest.raises(AttributeError, match="no option 'not_an_option'"):
        hypatia.config.not_an_option  # noqa: B018
    with pytest.raises(ValueError):
        hypatia.config.not_an_option = 1


@pytest.mark.parametrize(
    "corrupt",
    [
        lambda args: ("float64", "not a list", "x"),  # TensorType arguments
        lambda args: (None,) + tuple(args[1:]),
        lambda args: tuple(reversed(args)),
    ],
)
def test_a_corrupted_pickle_raises_unpickling_error(corrupt):
    x = T.dvector("x")
    w = hypatia.shared(np.ones(3), name="w")
    y = T.exp(x) * w + T.sum(x)
    payload = pickle.dumps(y)
    pickle.loads(payload)  # the good one loads

    # Corrupt the arguments of every rebuild call by re-pickling through a tampering Unpickler.
    class Tamper(pickle.Unpickler):
        def find_class(self, module, name):
            cls = super().find_class(module, name)
            if module == "hypatia._pickle" and name.startswith(("_rebuild", "_output_of")):
                return lambda *args: cls(*corrupt(args))
            return cls

    import io

    with pytest.raises(pickle.UnpicklingError) as e:
        Tamper(io.BytesIO(payload)).load()
    message = str(e.value)
    assert "hypatia: cannot rebuild" in message
    assert "std::bad_cast" not in message


def test_an_op_with_corrupted_attributes_raises_unpickling_error():
    op = T.exp(T.dvector()).owner.op
    cls_and_args = op.__reduce__()
    rebuild, (cls, args) = cls_and_args
    assert rebuild(cls, args) == op
    with pytest.raises(pickle.UnpicklingError, match="cannot rebuild an op"):
        rebuild(cls, ("not", "valid", "arguments", 1, 2, 3))
    with pytest.raises(pickle.UnpicklingError, match="expected a hypatia op class"):
        rebuild(dict, ())
