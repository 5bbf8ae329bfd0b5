"""ALBERT-base's 48 matrix multiplies of one call at few rows: TensorFlow's kernels against ONNX
Runtime's, nothing else in the graph.

Run by hand (needs the test extra: onnx, onnxruntime):
    python -m benchmarks.small_row_matmul --rows 1,8,17,32,64 --rounds 5
    python -m benchmarks.small_row_matmul --rows 1,17,64 --formulations matmul,batch_matmul,conv2d

A served batch-1 request of 17 tokens spends most of its time in the shared block's four
multiplies per pass (Q/K/V 768 × 2304, attention output 768 × 768, feed-forward 768 × 3072 and
3072 × 768) applied 12 times (docs/guides/precision_and_speed.md). This times exactly that
chain — each pass's output fed to the next, the weights graph constants shared by the 12
passes, as our exports hold them — in ONE process, interleaved rounds:
- TensorFlow float32 and bfloat16, a v1 session over a graph (Grappler and the oneDNN rewrite
  run as when TF Serving loads a SavedModel: `_MklNativeFusedMatMul`), biases added and fused;
  with `--formulations`, also the same chain as rank-3 `BatchMatMulV2`s or 1 x 1 `Conv2D`s
  (oneDNN's matmul and convolution primitives instead of its inner product);
- ONNX Runtime float32 (MLAS), the same chain as an ONNX graph (`MatMul` + `Add`, which its
  optimizer fuses into `Gemm`/`FusedMatMul`), the same weights, all graph optimizations.
Prints ms per chain, GFLOP/s and the fraction of TensorFlow's GEMM roof measured in the same
run (`roofs.gemm_roof`). If ONNX Runtime's chain is faster at 17 rows than TensorFlow's, no
graph change around the multiplies can win batch 1 against it with TensorFlow's kernels.
"""

import os
import statistics
import tempfile
import time

from benchmarks import prelude  # isort: skip  (first: sets the environment)

import numpy as np
import tensorflow as tf

from benchmarks.roofs import gemm_roof

SHAPES = [(768, 2304), (768, 768), (768, 3072), (3072, 768)]  # (inner, columns) per pass
PASSES = 12


def chain_flops(rows: int) -> float:
    return 2.0 * rows * PASSES * sum(inner * columns for inner, columns in SHAPES)


def _weights(seed: int = 0):
    rng = np.random.default_rng(seed)
    return [
        (rng.normal(0, 0.02, shape).astype(np.float32), rng.normal(0, 0.02, shape[1]))
        for shape in SHAPES
    ]


def _multiply(x, kernel, bias, formulation: str):
    """`x @ kernel + bias` written as one of FORMULATIONS (the same sums, other TF ops)."""
    inner, columns = kernel.shape
    if formulation == "matmul":  # as served: oneDNN inner product, bias fused
        return tf.nn.bias_add(tf.matmul(x, kernel), bias)
    if formulation == "batch_matmul":  # rank 3: oneDNN's matmul primitive
        y = tf.linalg.matmul(tf.reshape(x, (1, -1, inner)), tf.reshape(kernel, (1, inner, columns)))
        return tf.reshape(y, (-1, columns)) + bias
    # conv2d: a 1 x 1 convolution over a 1 x rows image (oneDNN convolution, bias fused)
    y = tf.nn.conv2d(
        tf.reshape(x, (1, 1, -1, inner)), tf.reshape(kernel, (1, 1, inner, columns)), 1, "VALID"
    )
    return tf.reshape(tf.nn.bias_add(y, bias), (-1, columns))


FORMULATIONS = ("matmul", "batch_matmul", "conv2d")


class TensorFlowChain:
    def __init__(self, rows: int, dtype: str, formulation: str = "matmul"):
        graph = tf.Graph()
        with graph.as_default():
            self.input = tf.compat.v1.placeholder(tf.float32, (rows, 768))
            weights = [
                (tf.constant(kernel, dtype=dtype), tf.constant(bias.astype(np.float32), dtype))
                for kernel, bias in _weights()
            ]
            x = tf.cast(self.input, dtype)
            for _ in range(PASSES):
                (qkv, qkv_b), (out, out_b), (up, up_b), (down, down_b) = weights
                projected = _multiply(x, qkv, qkv_b, formulation)
                attended = _multiply(projected[:, :768], out, out_b, formulation)
                hidden = _multiply(attended, up, up_b, formulation)
                x = _multiply(hidden, down, down_b, formulation)
            self.output = tf.cast(x, tf.float32)
        self.session = tf.compat.v1.Session(graph=graph)

    def __call__(self, x):
        return self.session.run(self.output, {self.input: x})


class OnnxChain:
    def __init__(self, rows: int, directory: str):
        import onnx
        import onnxruntime
        from onnx import TensorProto, helper, numpy_helper

        initializers, nodes, name = [], [], "x"
        for index, (kernel, bias) in enumerate(_weights()):
            initializers += [
                numpy_helper.from_array(kernel, f"w{index}"),
                numpy_helper.from_array(bias.astype(np.float32), f"b{index}"),
            ]
        for step in range(PASSES):
            for index in range(len(SHAPES)):
                source = name
                if index == 1:  # the attention output reads the first 768 of Q/K/V's columns
                    nodes.append(helper.make_node("Slice", [name, "s0", "s1", "s2"], [f"c{step}"]))
                    source = f"c{step}"
                nodes.append(
                    helper.make_node("MatMul", [source, f"w{index}"], [f"m{step}_{index}"])
                )
                name = f"y{step}_{index}"
                nodes.append(helper.make_node("Add", [f"m{step}_{index}", f"b{index}"], [name]))
        initializers += [
            numpy_helper.from_array(np.array(values, np.int64), key)
            for key, values in (("s0", [0]), ("s1", [768]), ("s2", [1]))
        ]
        nodes.append(helper.make_node("Identity", [name], ["y"]))
        graph = helper.make_graph(
            nodes,
            "chain",
            [helper.make_tensor_value_info("x", TensorProto.FLOAT, [rows, 768])],
            [helper.make_tensor_value_info("y", TensorProto.FLOAT, [rows, 768])],
            initializers,
        )
        path = os.path.join(directory, f"chain_{rows}.onnx")
        onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)]), path)
        options = onnxruntime.SessionOptions()
        options.graph_optimization_level = onnxruntime.GraphOptimizationLevel.ORT_ENABLE_ALL
        self.session = onnxruntime.InferenceSession(
            path, options, providers=["CPUExecutionProvider"]
        )

    def __call__(self, x):
        return self.session.run(["y"], {"x": x})[0]


def main() -> None:
    parser = prelude.parser(__file__, __doc__.splitlines()[0])
    parser.add_argument("--rows", default="1,8,17,32,64", help="row counts (tokens) to time")
    parser.add_argument("--rounds", type=int, default=5, help="interleaved rounds")
    parser.add_argument("--steps", type=int, default=20, help="timed chains per round")
    parser.add_argument(
        "--formulations",
        default="matmul",
        help=f"TensorFlow's chain written as any of {','.join(FORMULATIONS)} (each timed)",
    )
    args = parser.parse_args()
    prelude.header()
    formulations = args.formulations.split(",")
    for formulation in formulations:
        if formulation not in FORMULATIONS:
            parser.error(f"--formulations: {formulation!r} is not one of {FORMULATIONS}")
    roofs = {dtype: gemm_roof(dtype, seconds=2.0) for dtype in ("float32", "bfloat16")}
    print(f"GEMM roof: float32 {roofs['float32']:.0f}, bfloat16 {roofs['bfloat16']:.0f} GFLOP/s")
    results = {"args": vars(args), "gemm_roof_gflops": roofs, "milliseconds": {}}
    directory = tempfile.mkdtemp()
    for rows in [int(value) for value in args.rows.split(",")]:
        engines = {
            f"TensorFlow {dtype}" + ("" if formulation == "matmul" else f" {formulation}"): (
                TensorFlowChain(rows, dtype, formulation)
            )
            for formulation in formulations
            for dtype in ("float32", "bfloat16")
        }
        engines["ONNX Runtime float32"] = OnnxChain(rows, directory)
        x = np.random.default_rng(1).normal(size=(rows, 768)).astype(np.float32)
        # The served formulation's float32 chain; built for the check when not timed.
        reference = engines.get("TensorFlow float32") or TensorFlowChain(rows, "float32")
        reference = reference(x)
        for name, engine in engines.items():
            tolerance = 0.2 if "bfloat16" in name else 1e-4
            np.testing.assert_allclose(engine(x), reference, atol=tolerance, err_msg=name)
        times = {name: [] for name in engines}
        for _ in range(args.rounds):
            for name, engine in engines.items():
                for _ in range(3):  # untimed: caches and the previous engine's threads
                    engine(x)
                for _ in range(args.steps):
                    start = time.perf_counter()
                    engine(x)
                    times[name].append(time.perf_counter() - start)
        results["milliseconds"][rows] = {
            name: [value * 1e3 for value in values] for name, values in times.items()
        }
        print(f"\n{rows} rows, {chain_flops(rows) / 1e9:.2f} GFLOP per chain:")
        onnx_ms = statistics.median(times["ONNX Runtime float32"]) * 1e3
        for name, values in times.items():
            ms = statistics.median(values) * 1e3
            rate = chain_flops(rows) / ms / 1e6
            roof = roofs["bfloat16" if "bfloat16" in name else "float32"]
            print(
                f"  {name:35s} {ms:6.2f} ms  {rate:5.0f} GFLOP/s  {rate / roof:.2f} of its roof"
                f"  x{onnx_ms / ms:.2f} ONNX Runtime's speed"
            )
    print(f"\nload at the end {prelude.load_average()}")
    prelude.write_results(args.results_json, results)


if __name__ == "__main__":
    main()
