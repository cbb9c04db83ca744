#!/usr/bin/env bash
# Runs the seed programs in C++ and their numpy baselines side by side, then the same seeds through
# the Python front end (each times itself beside numpy).
set -euo pipefail
cd "$(dirname "$0")/.."
build=${1:-build}
py=.venv/bin/python
echo "== seed 000: y = m.x + b, 1000x1000 float32, 500 iterations =="
"$build"/examples/cpp/seed000_linear 1000 500
$py examples/python/numpy_baselines.py seed000 1000 500
echo
echo "== seed 001: exp over 230,400 float32, 1000 calls =="
"$build"/examples/cpp/seed001_exp
$py examples/python/numpy_baselines.py seed001
echo
echo "== Python (import hypatia as theano): seed 000, the four variants =="
$py examples/python/seed000_linear.py 1000 30
echo
echo "== Python: seed 001, exp over a shared vector (float32, then float64), with and without Out(borrow=True) =="
$py examples/python/seed001_exp.py
echo
echo "== Python: seed 003, a 2-3-2 tanh network on two moons, gradient descent =="
$py examples/python/seed003_mlp.py
echo
echo "== Python: a denoising autoencoder, corruption drawn in the graph by RandomStreams, beside numpy =="
$py examples/python/denoising_autoencoder.py 5
echo
echo "== Python: an Elman RNN trained with scan (BPTT), beside the same network in numpy =="
$py examples/python/rnn_scan.py 8
echo
echo "== Python: LeNet-5 (conv2d, max pooling, dense layers) trained on generated seven-segment digits =="
$py examples/python/lenet.py 300
