"""What this machine's CPU can do, read from `/proc/cpuinfo` (Linux; elsewhere nothing is
known): its model name and the instruction-set flags that decide whether bfloat16 (and, for
other engines, int8) matrix multiplies beat float32. The serving benchmarks print it; the
training drivers' `--precision auto` asks `cpu_has_bfloat16`."""

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
# Those that multiply bfloat16 natively.
BFLOAT16_FEATURES = ("avx512_bf16", "amx_bf16")


def cpu_features(path: str = "/proc/cpuinfo") -> dict:
    """The CPU model name and which of `FAST_LOW_PRECISION_FEATURES` it has (Linux only)."""
    try:
        with open(path, encoding="utf-8") as file:
            text = file.read()
    except OSError:
        return {"model_name": "unknown", "flags": {}}
    model_name, flags = "unknown", set()
    for line in text.splitlines():
        key, _, value = line.partition(":")
        if key.strip() == "model name" and model_name == "unknown":
            model_name = value.strip()
        elif key.strip() == "flags" and not flags:
            flags = set(value.split())
    return {
        "model_name": model_name,
        "flags": {name: name in flags for name in ("avx2", "fma", *FAST_LOW_PRECISION_FEATURES)},
    }


def cpu_has_bfloat16(path: str = "/proc/cpuinfo") -> bool:
    """Whether the CPU multiplies bfloat16 natively (AVX512-BF16 or AMX); False where `path`
    cannot be read."""
    flags = cpu_features(path)["flags"]
    return any(flags.get(name) for name in BFLOAT16_FEATURES)
