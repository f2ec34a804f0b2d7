"""Hardware targets and their ceilings.

Measured figures come from this project's own runs; datasheet figures are labelled as such.
The web app mirrors these rows in its `HardwareTarget` model (seeded from `TARGETS`).
"""

from __future__ import annotations

from dataclasses import asdict, dataclass


@dataclass(frozen=True)
class HardwareTarget:
    name: str
    vendor: str
    architecture: str
    memory_bandwidth_gbs: float  # GB/s (1e9 bytes/s)
    fp32_tflops: float
    bf16_tflops: float
    multiprocessors: int
    l2_bytes: int
    shared_memory_per_block_bytes: int
    source: str  # "measured" or "datasheet" or "interpreter"
    notes: str = ""
    # what one thread may hold (NVIDIA: 255 registers; AMD CDNA 3: 512 VGPRs); 0: no limit
    max_registers_per_thread: int = 255

    @property
    def is_interpreter(self) -> bool:
        return self.name == "interpreter"

    def to_dict(self) -> dict:
        return asdict(self)


MB = 1024 * 1024

TARGETS: dict[str, HardwareTarget] = {
    "h200": HardwareTarget(
        name="h200", vendor="nvidia", architecture="sm90 (Hopper)",
        memory_bandwidth_gbs=4300.0, fp32_tflops=67.0, bf16_tflops=790.0,
        multiprocessors=132, l2_bytes=60 * MB, shared_memory_per_block_bytes=227 * 1024,
        source="measured",
        notes="Measured on this project's H200 on 2026-11-29: device copy 4.3 TB/s, "
        "bf16 matmul 790 TFLOP/s. fp32 is the datasheet figure.",
    ),
    "h100": HardwareTarget(
        name="h100", vendor="nvidia", architecture="sm90 (Hopper)",
        memory_bandwidth_gbs=3350.0, fp32_tflops=67.0, bf16_tflops=989.0,
        multiprocessors=132, l2_bytes=50 * MB, shared_memory_per_block_bytes=227 * 1024,
        source="datasheet", notes="NVIDIA H100 SXM5 datasheet (dense bf16).",
    ),
    "a100": HardwareTarget(
        name="a100", vendor="nvidia", architecture="sm80 (Ampere)",
        memory_bandwidth_gbs=2039.0, fp32_tflops=19.5, bf16_tflops=312.0,
        multiprocessors=108, l2_bytes=40 * MB, shared_memory_per_block_bytes=163 * 1024,
        source="datasheet", notes="NVIDIA A100 SXM4 80GB datasheet (dense bf16).",
    ),
    "mi300x": HardwareTarget(
        name="mi300x", vendor="amd", architecture="gfx942 (CDNA 3)",
        memory_bandwidth_gbs=5300.0, fp32_tflops=163.4, bf16_tflops=1307.4,
        multiprocessors=304, l2_bytes=256 * MB, shared_memory_per_block_bytes=64 * 1024,
        source="datasheet", max_registers_per_thread=512,
        notes="AMD Instinct MI300X datasheet (dense bf16; L2 figure is the 256 MB Infinity Cache).",
    ),
    "interpreter": HardwareTarget(
        name="interpreter", vendor="generic", architecture="Triton interpreter (CPU)",
        memory_bandwidth_gbs=0.0, fp32_tflops=0.0, bf16_tflops=0.0,
        multiprocessors=0, l2_bytes=0, shared_memory_per_block_bytes=0,
        source="interpreter", max_registers_per_thread=0,
        notes="CPU-only host: kernels run in TRITON_INTERPRET=1; timings are never "
        "compared with GPU numbers.",
    ),
}


class DeviceUnavailable(ValueError):
    """This host has no device for the target: an infrastructure condition (the evaluation
    never ran), never a verdict on the kernel."""


# -- compute ceilings per precision policy -------------------------------------------------
# The roofline's compute floor must use the fastest arithmetic a policy ACCEPTS for
# matmul-like work (the FLOPs counted are GEMMs, convolutions and attention), or a correct
# kernel that uses tensor cores is called impossible. Derived from each target's dense
# bf16 tensor-core rate (measured on the H200: 790 TFLOP/s, 2026-11-29):
#   tf32   = bf16 / 2  (Hopper/Ampere tensor cores run tf32 at half the bf16 rate; H200
#                       datasheet 495 vs 989 TFLOP/s dense)
#   tf32x3 = tf32 / 3  (strict fp32 on tensor cores: three tf32 products hi*hi + hi*lo + lo*hi)
#   bf16x3 = bf16 / 3  (three bf16 products, the same split in bf16)
#   fp32   = the SIMT FMA rate (datasheet)
# On the H200: fp32 67, tf32x3 132, bf16x3 263, tf32 395, bf16 790 TFLOP/s.
ARITHMETIC_SOURCE = ("derived from the measured dense bf16 matmul rate: tf32 = bf16/2, "
                     "tf32x3 = tf32/3, bf16x3 = bf16/3; fp32 SIMT from the datasheet")
POLICY_ARITHMETIC: dict[str, tuple[str, ...]] = {
    "fp32": ("fp32", "tf32x3", "bf16x3"),  # strict: anything that meets fp32 accuracy
    "tf32": ("tf32",),
    "fp16": ("bf16",),  # fp16 and bf16 tensor cores share a rate
    "bf16": ("bf16",),
}


def arithmetic_tflops(target: HardwareTarget, arithmetic: str) -> float:
    """Dense TFLOP/s of one kind of arithmetic on `target` (see ARITHMETIC_SOURCE)."""
    rates = {"fp32": target.fp32_tflops, "bf16": target.bf16_tflops,
             "tf32": target.bf16_tflops / 2, "tf32x3": target.bf16_tflops / 6,
             "bf16x3": target.bf16_tflops / 3}
    try:
        return rates[arithmetic]
    except KeyError:
        raise ValueError(f"unknown arithmetic {arithmetic!r}; known: {', '.join(rates)}")


def compute_ceiling(target: HardwareTarget, precision_class: str) -> tuple[float, str]:
    """(TFLOP/s, arithmetic) of the fastest arithmetic `precision_class` accepts."""
    kinds = POLICY_ARITHMETIC.get(precision_class, ("fp32",))
    best = max(kinds, key=lambda kind: arithmetic_tflops(target, kind))
    return arithmetic_tflops(target, best), best


def get_target(name: str) -> HardwareTarget:
    """Return a target by name; `auto` picks the local GPU when there is one."""
    if name == "auto":
        return detect_local_target()
    try:
        return TARGETS[name.lower()]
    except KeyError:
        raise ValueError(f"unknown hardware target {name!r}; known: {', '.join(TARGETS)}, auto")


def target_for_gpu_name(gpu: str) -> str | None:
    """The known target a GPU's name ("NVIDIA H200", "AMD Instinct MI300X") is, or None."""
    squeezed = gpu.lower().replace(" ", "")
    return next((key for key in ("h200", "h100", "a100", "mi300x") if key in squeezed), None)


def detect_local_target() -> HardwareTarget:
    """The target this host can actually run: a known GPU by name, else the interpreter."""
    try:
        import torch

        if torch.cuda.is_available():
            gpu = torch.cuda.get_device_name(0)
            return TARGETS[target_for_gpu_name(gpu) or
                           ("h100" if "hopper" in gpu.lower() else "a100")]
    except Exception:  # torch missing or CUDA probe failed: the interpreter still works
        pass
    return TARGETS["interpreter"]
