"""hypatia.scan_module.scan_checkpoints: Theano's scan_checkpoints, scan in O(T/N + N) memory.

An outer scan over blocks of save_every_N steps whose body is an inner scan over one block that
returns only its last step: the outputs are the states at the blocks' ends, and the gradient
recomputes each block's steps from its start (checkpointing). Recurrent outputs without taps only.
"""
from hypatia import tensor as T
from hypatia.scan_module.scan import scan


def scan_checkpoints(fn, sequences=(), outputs_info=None, non_sequences=(), name="checkpointscan_fn", n_steps=None,
                     save_every_N=10, padding=True):
    """Like scan, but each output holds only every save_every_N-th step (the last of each block),
    and backpropagation keeps only those: returns (outputs, updates)."""
    sequences = [] if sequences is None else list(sequences) if isinstance(sequences, (list, tuple)) else [sequences]
    outputs_info = list(outputs_info) if isinstance(outputs_info, (list, tuple)) else [outputs_info]
    non_sequences = [] if non_sequences is None else list(non_sequences) if isinstance(
        non_sequences, (list, tuple)) else [non_sequences]
    for element in outputs_info:
        if isinstance(element, dict) and "taps" in element:
            raise RuntimeError("scan_checkpoints doesn't work with taps.")
    sequences = [T.as_tensor_variable(s) for s in sequences]
    if n_steps is None:
        if not sequences:
            raise ValueError("scan_checkpoints: give n_steps or at least one sequence")
        n_steps = sequences[0].shape[0]
    n_steps = T.as_tensor_variable(n_steps)
    N = int(save_every_N)
    o_n_steps = T.cast(T.ceil(n_steps / float(N)), "int64")
    mod = n_steps % N
    last_n_steps = T.switch(T.eq(mod, 0), N, mod)
    i_n_steps = T.set_subtensor((T.ones((o_n_steps,), "int64") * N)[-1], last_n_steps)
    if padding:
        padded = []
        for s in sequences:
            extra = (N - s.shape[0] % N) % N
            z = T.zeros([extra] + [s.shape[i] for i in range(1, s.ndim)], dtype=s.dtype)
            padded.append(T.concatenate([s, z], axis=0))
        sequences = padded
    o_sequences = [s.reshape([s.shape[0] // N, N] + [s.shape[i] for i in range(1, s.ndim)], ndim=s.ndim + 1)
                   for s in sequences]
    o_sequences.append(i_n_steps)
    n_nitsots = sum(1 for i in outputs_info if i is None)
    n_seq, n_ns = len(o_sequences), len(non_sequences)

    def outer_step(*args):
        i_sequences = list(args[:n_seq])
        i_prev = list(args[n_seq:len(args) - n_ns])
        i_non_sequences = list(args[len(args) - n_ns:])
        i_outputs_info = i_prev + [None] * n_nitsots
        results, updates = scan(fn=fn, sequences=i_sequences[:-1], outputs_info=i_outputs_info,
                                non_sequences=i_non_sequences, name=name + "_inner", n_steps=i_sequences[-1],
                                return_list=True)
        return [r[-1] for r in results], updates

    return scan(fn=outer_step, sequences=o_sequences, outputs_info=outputs_info, non_sequences=non_sequences,
                name=name + "_outer", n_steps=o_n_steps)


__all__ = ["scan_checkpoints"]
