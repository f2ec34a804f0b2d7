"""The sandbox's default host-memory limit follows the host: 16 GiB, or a quarter of the
host's memory where that is more (a KernelBench MLP's 8.6 GB of weights is built, sent and
loaded in a sandbox; 16 GiB refused it on a 128 GB GPU host)."""

from search_engine.evaluation.config import SandboxLimits, default_sandbox_memory

GiB = 1 << 30


def test_small_hosts_keep_16_gib():
    assert default_sandbox_memory(24 * GiB) == 16 * GiB
    assert default_sandbox_memory(0) == 16 * GiB


def test_large_hosts_give_a_quarter_of_their_memory():
    assert default_sandbox_memory(128 * GiB) == 32 * GiB
    assert default_sandbox_memory(512 * GiB) == 128 * GiB


def test_the_default_limits_use_this_host():
    assert SandboxLimits().memory_bytes == default_sandbox_memory()
    assert SandboxLimits(memory_bytes=2 * GiB).memory_bytes == 2 * GiB
