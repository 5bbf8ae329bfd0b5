"""What this machine's CPU can do, read from `/proc/cpuinfo` (Linux; elsewhere nothing is
known): its model name and the instruction-set flags that decide whether bfloat16 (and, for
other engines, int8) matrix multiplies beat float32. The serving benchmarks print it; the
training drivers' `--precision auto` asks `cpu_has_bfloat16` and `onednn_enabled`."""

# The CPU features that make low-precision (bfloat16; int8 for other engines) matrix
# multiplies faster than float32.
FAST_LOW_PRECISION_FEATURES = (
    "avx512f",
    "avx512_bf16",
    "avx512_vnni",
    "avx_vnni",
    "amx_bf16",
    "amx_int8",
)
# Those for which TensorFlow turns its oneDNN rewrite on by default (x86-64 Linux); without
# any (AVX2-only CPUs such as AMD Zen 3), `TF_ENABLE_ONEDNN_OPTS=1` turns it on.
ONEDNN_DEFAULT_FEATURES = ("avx512_vnni", "avx512_bf16", "avx_vnni", "amx_int8", "amx_bf16")
# Those without which TensorFlow's oneDNN rewrite leaves bfloat16 ops to Eigen even where oneDNN
# runs (TensorFlow's `IsBF16SupportedByOneDNNOnThisCPU`: AVX-512 or AVX-NE-CONVERT).
ONEDNN_BFLOAT16_FEATURES = ("avx512f", "avx_ne_convert")
# Those that multiply bfloat16 natively.
BFLOAT16_FEATURES = ("avx512_bf16", "amx_bf16")


def cpu_features(path: str = "/proc/cpuinfo") -> dict:
    """The CPU model name, family and model numbers (AMD Zen 3 is family 25 model 1, Zen 4
    family 25 model 17) and which of `FAST_LOW_PRECISION_FEATURES` it has (Linux only)."""
    try:
        with open(path, encoding="utf-8") as file:
            text = file.read()
    except OSError:
        return {"model_name": "unknown", "family": None, "model": None, "flags": {}}
    fields, flags = {}, set()
    for line in text.splitlines():
        key, _, value = line.partition(":")
        key = key.strip()
        if key in ("model name", "cpu family", "model") and key not in fields:
            fields[key] = value.strip()
        elif key == "flags" and not flags:
            flags = set(value.split())
    numbers = {key: int(value) for key, value in fields.items() if value.isdigit()}
    return {
        "model_name": fields.get("model name", "unknown"),
        "family": numbers.get("cpu family"),
        "model": numbers.get("model"),
        "flags": {
            name: name in flags
            for name in ("avx2", "fma", "avx_ne_convert", *FAST_LOW_PRECISION_FEATURES)
        },
    }


def cpu_has_bfloat16(path: str = "/proc/cpuinfo") -> bool:
    """Whether the CPU multiplies bfloat16 natively (AVX512-BF16 or AMX); False where `path`
    cannot be read."""
    flags = cpu_features(path)["flags"]
    return any(flags.get(name) for name in BFLOAT16_FEATURES)


def onednn_enabled() -> bool:
    """Whether TensorFlow in this process runs its oneDNN graph rewrite and kernels (the fused
    `_MklNativeFusedMatMul`, `_MklLayerNorm`, `_MklSoftmax`, and bfloat16 multiplies at native
    speed), as TensorFlow itself decides: `TF_ENABLE_ONEDNN_OPTS` where set, otherwise on by
    default only on x86-64 CPUs with one of `ONEDNN_DEFAULT_FEATURES`; off on others (an
    AVX2-only CPU such as AMD Zen 3 runs Eigen's kernels). False where TensorFlow is not
    installed or does not say."""
    try:  # TensorFlow's own answer (not public API, hence the fallback)
        from tensorflow.python.util import _pywrap_util_port
    except ImportError:  # without TensorFlow, or one without the module
        return False
    return bool(_pywrap_util_port.IsMklEnabled())


def onednn_runs_bfloat16(path: str = "/proc/cpuinfo") -> bool:
    """Whether oneDNN's kernels take bfloat16 ops too (`_MklLayerNorm`, `_MklSoftmax` in
    bfloat16, computing in float32 inside): oneDNN runs (`onednn_enabled`) and the CPU has one of
    `ONEDNN_BFLOAT16_FEATURES`; elsewhere Eigen's bfloat16 kernels run (an AVX2-only CPU with
    `TF_ENABLE_ONEDNN_OPTS=1` included)."""
    flags = cpu_features(path)["flags"]
    return onednn_enabled() and any(flags.get(name) for name in ONEDNN_BFLOAT16_FEATURES)
