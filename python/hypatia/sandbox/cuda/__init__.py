"""hypatia.sandbox.cuda: the names Theano's old GPU backend gave its transfers (seed 001 keeps a
result on the GPU with ``sandbox.cuda.basic_ops.gpu_from_host(T.exp(x))``). The GPU itself is
the CUDA backend's: ``HYPATIA_FLAGS=device=cuda``. A result kept on the GPU is a
``CudaNdarray`` (hypatia.gpuarray.GpuArray). basic_ops also has as_cuda_ndarray_variable and
gpu_contiguous (a Python op of device values runs on the GPU); hypatia.sandbox.cuda.blas has
seed 004's GpuCorrMM and its gradient ops."""
from hypatia.gpuarray import GpuArray as CudaNdarray  # noqa: F401
from hypatia.gpuarray import use  # noqa: F401  (Theano's theano.sandbox.cuda.use('gpu1'))
from hypatia.sandbox.cuda import basic_ops  # noqa: F401  (blas: imported by name, it needs hypatia.tensor)
