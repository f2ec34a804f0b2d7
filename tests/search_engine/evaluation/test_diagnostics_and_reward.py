"""Roofline, occupancy, bottleneck classification, ncu parsing, and the reward."""

import pytest

from search_engine.evaluation import diagnostics as d
from search_engine.evaluation.config import RewardConfig
from search_engine.evaluation.reward import compute_reward, reward_speedup
from search_engine.hardware import TARGETS

H200 = TARGETS["h200"]


def test_occupancy_estimate_names_the_limit():
    occ = d.occupancy_estimate(n_regs=128, num_warps=8, shared_bytes=1024)
    assert occ["blocks_per_sm"] == 2 and occ["limited_by"] == "registers"
    assert occ["occupancy"] == 0.25


def test_roofline_and_memory_bound_classification():
    nbytes = 2 * 4096 * 8192 * 4
    roof = d.roofline(H200, nbytes, 0, "fp32", candidate_ms=0.08)
    assert roof["memory_floor_ms"] == pytest.approx(nbytes / 4.3e12 * 1e3)
    assert 70 < roof["pct_peak_bandwidth"] < 80
    b = d.classify_bottleneck(roof, [])
    assert b["class"] == "memory-bound" and "% of peak bandwidth" in b["reason"]


def test_compute_and_latency_bound():
    flops, nbytes = 2 * 4096 ** 3, 3 * 4096 * 4096 * 4
    fast = d.roofline(H200, nbytes, flops, "tf32", candidate_ms=0.45)
    assert d.classify_bottleneck(fast, [])["class"] == "compute-bound"
    slow = d.roofline(H200, nbytes, flops, "tf32", candidate_ms=5.0)
    b = d.classify_bottleneck(slow, [{"occupancy": 0.25, "n_spills": 3}])
    assert b["class"] == "latency/occupancy-bound"
    assert "occupancy 25%" in b["reason"] and "3 register spills" in b["reason"]


def test_interpreter_has_no_roofline():
    roof = d.roofline(TARGETS["interpreter"], 100, 0, "fp32", None)
    assert roof["available"] is False
    assert d.classify_bottleneck(roof, [])["class"] == "unknown"


def test_parse_ncu_csv():
    text = ('==PROF== Connected\n"ID","Process ID","Process Name","Host Name","Kernel Name",'
            '"Context","Stream","Block Size","Grid Size","Device","CC","Section Name",'
            '"Metric Name","Metric Unit","Metric Value"\n'
            '"0","1","python","h","softmax_kernel","1","7","(256,1,1)","(4096,1,1)","0","9.0",'
            '"Command line profiler metrics","dram__throughput.avg.pct_of_peak_sustained_elapsed",'
            '"%","79.81"\n'
            '"0","1","python","h","softmax_kernel","1","7","(256,1,1)","(4096,1,1)","0","9.0",'
            '"Command line profiler metrics","launch__registers_per_thread","register/thread","55"\n')
    parsed = d.parse_ncu_csv(text)
    assert parsed["dram_throughput_pct"] == 79.81 and parsed["registers_per_thread"] == 55
    assert parsed["kernels"] == ["softmax_kernel"]
    assert d.parse_ncu_csv("no csv here") == {}


def test_ncu_command_leaves_clocks_alone():
    cmd = d.ncu_command(["k1", "k2"], "/tmp/x.csv")
    assert cmd[cmd.index("--clock-control") + 1] == "none"
    assert "regex:^(k1|k2)" in cmd


def test_reward_formula_and_clipping():
    cfg = RewardConfig()
    assert compute_reward("correct", 2.0, 0.8, cfg) == pytest.approx(0.5 + 1.0 + 0.4)
    assert compute_reward("correct", 10.0, 1.0, cfg) == pytest.approx(0.5 + 1.5 + 0.5)
    for status in ("incorrect", "hack_suspected", "rejected_lazy", "timeout", "compile_error"):
        assert compute_reward(status, 3.0, 1.0, cfg) == 0.0


def test_reward_speedup_baselines_and_interpreter():
    cfg = RewardConfig()
    assert reward_speedup(2.0, 1.5, cfg, interpreter=False) == 2.0
    assert reward_speedup(2.0, 1.5, RewardConfig(speedup_baseline="best"), False) == 1.5
    assert reward_speedup(None, None, cfg, interpreter=True) == cfg.interpreter_speedup == 1.0
