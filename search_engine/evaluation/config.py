"""Knobs of one evaluation. Defaults are the documented behaviour; tests shrink them."""

from __future__ import annotations

import os
import secrets
from dataclasses import asdict, dataclass, field

# Trial seeds come from the OS's random source once per process: a candidate that reads
# `torch.initial_seed()` (the model is built under `seed`) or knows the default seed cannot
# regenerate its trials' inputs. References are cached per process, so this costs nothing.
_TRIAL_KEY = secrets.randbits(62)

# (scale, shift) applied to every floating input of a trial: not only N(0, 1).
DEFAULT_TRIAL_PLAN: tuple[tuple[float, float], ...] = (
    (1.0, 0.0),
    (1.0, 0.0),
    (30.0, 0.0),   # large magnitudes: catches softmax without max-subtraction
    (0.01, 0.0),   # tiny magnitudes: catches absolute-epsilon shortcuts
    (1.0, 3.0),    # shifted mean: catches kernels that assume centred data
)


def _env_count(name: str) -> int:
    """A non-negative whole number from the environment (0 when unset)."""
    text = os.environ.get(name, "").strip()
    if not text:
        return 0
    if not text.isdigit():
        raise ValueError(f"{name} must be a whole number of 0 or more, not {text!r}")
    return int(text)


@dataclass(frozen=True)
class RewardConfig:
    """Dr. Kernel's reward: when correct, w_c·1 + w_s·min(speedup, clip) + w_v·coverage.

    Everything that is not `correct` earns `failure_reward` (0): incorrect, crashes,
    hack_suspected and rejected_lazy alike. On the interpreter no speedup can be measured,
    so `interpreter_speedup` (1.0, neutral: "as fast as eager") stands in and the result's
    `speedup_label` says so.
    """

    correct_weight: float = 0.5
    speedup_weight: float = 0.5
    speedup_clip: float = 3.0
    coverage_weight: float = 0.5
    speedup_baseline: str = "eager"  # "eager", "compile" or "best" (the faster baseline)
    interpreter_speedup: float = 1.0
    failure_reward: float = 0.0


def default_sandbox_memory(host_bytes: int | None = None) -> int:
    """16 GiB, or a quarter of the host's memory where that is more: a problem whose weights
    are gigabytes (KernelBench's wide MLPs hold 8.6 GB) is built, sent and loaded once each in
    a sandbox, so 16 GiB refused real problems on a GPU host with memory to spare."""
    if host_bytes is None:
        try:
            host_bytes = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
        except (ValueError, OSError, AttributeError):
            host_bytes = 0
    return max(16 << 30, host_bytes // 4)


@dataclass(frozen=True)
class SandboxLimits:
    max_processes: int = 4096      # RLIMIT_NPROC (counts threads; torch spawns many)
    max_open_files: int = 1024     # RLIMIT_NOFILE
    max_file_bytes: int = 8 << 30  # RLIMIT_FSIZE
    cpu_seconds_per_wall_second: float = 4.0  # RLIMIT_CPU = timeout * this
    network: str = "auto"          # "auto": unshare -n when the host allows; "required"; "off"
    kill_grace_s: float = 2.0      # between SIGTERM and SIGKILL
    # OS isolation (search_engine/evaluation/isolation/): "auto" uses every layer this host
    # gives and reports the rest; "required": user, PID, mount, network and memory layers must
    # all work (else IsolationUnavailable); "off": a plain subprocess in its own session.
    isolation: str = "auto"
    # host memory of the whole sandbox (cgroup; else RLIMIT_AS/watchdog)
    memory_bytes: int = field(default_factory=lambda: default_sandbox_memory())
    disk_bytes: int = 1 << 30      # what the workdir may hold (watched; RLIMIT_FSIZE per file)


@dataclass(frozen=True)
class EvaluationConfig:
    trials: int = 5
    seed: int = 1234               # builds the model (the reference's weights): public
    # trial inputs from seeds the OS drew (True) or from `seed` (False: reproducible runs)
    secret_trials: bool = True
    trial_plan: tuple[tuple[float, float], ...] = DEFAULT_TRIAL_PLAN
    # timing (GPU)
    min_timing_ms: float = 100.0
    warmup_ms: float = 25.0
    max_reps: int = 5000
    min_reps: int = 10
    l2_flush_factor: float = 2.0   # flush buffer = factor × L2 size
    time_baselines: bool = True
    time_compile_baseline: bool = True
    noisy_iqr_ratio: float = 0.10  # IQR over this fraction of the median: time again
    retime_attempts: int = 2
    quiet_wait_s: float = 30.0     # how long a timing waits for our other GPU work to stop
    baseline_cache_dir: str | None = None  # None: $KERNELHUB_CACHE_DIR or ~/.cache/kernelhub
    # tensors stay on the device (device_share): "auto" on GPU targets, "on" (also the CPU,
    # through shared memory), "off" (tensors travel through the parent)
    resident: str = field(default_factory=lambda: os.environ.get("KERNELHUB_RESIDENT", "auto"))
    resident_timing_bytes: int = 1 << 30  # timing rotates all trials' inputs below this total
    reference_chunk_bytes: int = 2 << 30  # resident: float64 reference in batch slices above
    ncu_max_input_bytes: int = 2 << 30    # ncu replays inputs from a file: skipped above this
    # the candidate's kernels compiled before its first call, outside the GPU activity lock
    # (child `warm`): "auto" on GPU targets, "on" (also the interpreter), "off"
    compile_pass: str = "auto"
    # warm candidate sandboxes (LocalExecutor): 0 = auto. A GPU sandbox takes seconds to
    # start (torch, Triton, CUDA context, CUPTI), longer than a later candidate's evaluation,
    # so the pool keeps two per worker and starts them on half the host's cores.
    warm_pool_size: int = 0
    warm_starters: int = 0
    # screening (`screening.screen`): one short timing per configuration, never reported
    screen_min_timing_ms: float = 10.0
    screen_warmup_ms: float = 5.0
    # warm sandboxes a screening spreads its configurations over (each compiles its share):
    # 0 = auto (one on the interpreter, half the host's cores up to 8 on a GPU)
    screen_lanes: int = field(default_factory=lambda: _env_count("KERNELHUB_SCREEN_LANES"))
    # interpreter timing: a few wall-clock reps, labelled `interpreter`
    interpreter_reps: int = 3
    # the problem's own sandbox: reference outputs and baselines
    reference_timeout_s: float = 600.0
    # integrity
    static_checks: bool = True
    ghost_replay: bool = True      # rerun with every Triton launch a no-op: must come out wrong
    sample_elements: int = 65536   # timed / ghost outputs are read at this many random places
    lazy_threshold: float = 0.3    # τ: coverage below this (and correct) → rejected_lazy
    roofline_slack: float = 0.8    # flag times below slack × roofline floor
    wallclock_mismatch_factor: float = 3.0
    # diagnostics
    ncu: str = "auto"              # "auto" (when the ncu binary exists and a GPU is used), "off"
    ncu_timeout_s: float = 120.0
    profile_iterations: int = 5
    # bookkeeping
    log_chars: int = 4000
    reward: RewardConfig = field(default_factory=RewardConfig)
    limits: SandboxLimits = field(default_factory=SandboxLimits)

    def timing_spec(self, l2_bytes: int = 64 << 20) -> dict:
        """What the sandboxes' timing loops need (the same for candidate and baselines)."""
        return {"l2_bytes": l2_bytes, "warmup_ms": self.warmup_ms,
                "min_timing_ms": self.min_timing_ms, "min_reps": self.min_reps,
                "max_reps": self.max_reps, "l2_flush_factor": self.l2_flush_factor,
                "interpreter_reps": self.interpreter_reps}

    def __post_init__(self):
        if self.compile_pass not in ("auto", "on", "off"):
            raise ValueError(f"compile_pass must be auto, on or off, not {self.compile_pass!r}")

    def resident_on(self, device: str) -> bool:
        if self.resident not in ("auto", "on", "off"):
            raise ValueError(f"resident must be auto, on or off, not {self.resident!r}")
        return self.resident == "on" or (self.resident == "auto" and device == "cuda")

    def to_dict(self) -> dict:
        return asdict(self)

    def trial_schedule(self) -> list[tuple[int, float, float]]:
        """(seed, scale, shift) per trial; the plan repeats when trials > len(plan)."""
        if self.trials < 1:
            raise ValueError("trials must be at least 1")
        plan = self.trial_plan or DEFAULT_TRIAL_PLAN
        return [(self.trial_seed(i), *plan[i % len(plan)]) for i in range(self.trials)]

    def trial_seed(self, index: int) -> int:
        """The seed of trial `index` (the ghost replay's is `trials`): secret unless asked
        otherwise, and never derivable from `seed`."""
        if not self.secret_trials:
            return self.seed + 7919 * index
        import hashlib

        digest = hashlib.blake2b(f"{_TRIAL_KEY}:{self.seed}:{index}".encode(),
                                 digest_size=8).digest()
        return int.from_bytes(digest, "little") >> 33  # 31 bits: any torch.manual_seed takes it

