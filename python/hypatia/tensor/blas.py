"""hypatia.tensor.blas: which library runs the CPU's matrix products.

float32 GEMMs run on oneDNN or OpenBLAS, whichever is faster for the call's size class on this
machine (``blas=auto``, the default, measured once per process the first time a class is used),
or the one ``hypatia.config.blas`` / ``HYPATIA_FLAGS=blas=onednn|openblas`` names. float64
products, matrix-vector products and LAPACK use OpenBLAS.
"""
from hypatia import _core

__all__ = ["gemm_choices"]


def gemm_choices():
    """What ``blas=auto`` measured: one dict per size class of GEMM call (``size_class``,
    ``max_macs``: the largest call of the class in multiply-adds, ``shape``: the (m, n, k) that was
    timed, ``openblas_gflops``, ``onednn_gflops``, ``chosen``). Classes not used yet are timed now."""
    return list(_core.gemm_choices())
