"""Seed 003: a 2-3-2 tanh network on a two-moons data set, trained by batch gradient descent with
T.grad and updates of shared weights, printing loss and accuracy (the blog post's program).

    .venv/bin/python examples/python/seed003_mlp.py [passes]
"""
import sys
import time

import numpy as np

import hypatia as theano
import hypatia.tensor as T


def make_moons(n, noise, rng):
    """Two interleaving half circles (scikit-learn's make_moons) with Gaussian noise."""
    n_out = n // 2
    n_in = n - n_out
    outer = np.stack([np.cos(np.linspace(0, np.pi, n_out)), np.sin(np.linspace(0, np.pi, n_out))], 1)
    inner = np.stack([1 - np.cos(np.linspace(0, np.pi, n_in)), 1 - np.sin(np.linspace(0, np.pi, n_in)) - 0.5], 1)
    X = np.concatenate([outer, inner]) + rng.normal(scale=noise, size=(n, 2))
    y = np.concatenate([np.zeros(n_out, np.int64), np.ones(n_in, np.int64)])
    return X.astype("float32"), y


def main(num_passes=20000):
    rng = np.random.RandomState(0)
    train_X, train_y = make_moons(200, 0.20, rng)
    num_examples, nn_input_dim, nn_hdim, nn_output_dim = len(train_X), 2, 3, 2
    epsilon, reg_lambda = np.float32(0.01), np.float32(0.01)

    X = T.fmatrix("X")
    y = T.lvector("y")
    W1 = theano.shared((rng.randn(nn_input_dim, nn_hdim) / np.sqrt(nn_input_dim)).astype("float32"), name="W1")
    b1 = theano.shared(np.zeros(nn_hdim, "float32"), name="b1")
    W2 = theano.shared((rng.randn(nn_hdim, nn_output_dim) / np.sqrt(nn_hdim)).astype("float32"), name="W2")
    b2 = theano.shared(np.zeros(nn_output_dim, "float32"), name="b2")

    # Forward propagation, the loss (with L2 regularization) and the prediction.
    z1 = X.dot(W1) + b1
    a1 = T.tanh(z1)
    z2 = a1.dot(W2) + b2
    y_hat = T.nnet.softmax(z2)
    loss_reg = 1.0 / num_examples * reg_lambda / 2 * (T.sum(T.sqr(W1)) + T.sum(T.sqr(W2)))
    loss = T.nnet.categorical_crossentropy(y_hat, y).mean() + loss_reg
    prediction = T.argmax(y_hat, axis=1)

    forward_prop = theano.function([X], y_hat)
    calculate_loss = theano.function([X, y], loss)
    predict = theano.function([X], prediction)

    # Gradients by T.grad; one gradient-descent step updates the shared weights.
    dW2, db2, dW1, db1 = T.grad(loss, [W2, b2, W1, b1])
    gradient_step = theano.function(
        [X, y], updates=((W2, W2 - epsilon * dW2), (W1, W1 - epsilon * dW1),
                         (b2, b2 - epsilon * db2), (b1, b1 - epsilon * db1)))
    print("the forward pass, as compiled:")
    theano.printing.debugprint(forward_prop)

    t0 = time.perf_counter()
    for i in range(num_passes + 1):
        if i % (num_passes // 10) == 0:
            acc = np.mean(predict(train_X) == train_y)
            print(f"pass {i:6d}: loss {float(calculate_loss(train_X, train_y)):.6f}  accuracy {acc:.3f}")
        if i < num_passes:
            gradient_step(train_X, train_y)
    s = time.perf_counter() - t0
    print(f"{num_passes} gradient steps in {s:.2f} s ({1e6 * s / num_passes:.1f} us per step)")
    assert forward_prop(train_X).shape == (num_examples, nn_output_dim)


if __name__ == "__main__":
    main(*[int(a) for a in sys.argv[1:2]])
