"""Hidden states at given positions: `(batch, seq, H)` at `(batch, k)` → `(batch, k, H)`."""

from keras import ops


def gather_positions(sequence, positions):
    """`sequence[b, positions[b, j]]` for every `b`, `j`, as the original's `gather_indexes`: one
    gather from the flattened batch (offset `b * seq` per row).

    `ops.take_along_axis` gives the same values but broadcasts the indices to `(batch, k, H)`
    and, on TensorFlow, transposes them as int64, which TensorFlow's oneDNN graph pass (on by
    default on AVX-512 VNNI/BF16 CPUs) reports on stderr as `E0000 … oneDNN supports DT_INT64
    only on platforms with AVX-512`. Positions must lie in `[0, seq)`, as the data guarantees.
    """
    positions = ops.cast(positions, "int32")
    batch_size, length, hidden_dim = ops.shape(sequence)
    offsets = ops.expand_dims(ops.arange(batch_size, dtype="int32") * length, 1)  # (batch, 1)
    flat = ops.reshape(sequence, (-1, hidden_dim))  # (batch * seq, H)
    return ops.take(flat, positions + offsets, axis=0)
