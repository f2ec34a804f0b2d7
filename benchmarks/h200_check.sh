#!/usr/bin/env bash
# One device call that checks the evaluator and the honest baselines on the H200 (issues 26, 27).
#   bash benchmarks/h200_check.sh OUTDIR
# 1. old (PyTorch-default TF32) vs new (policy precision) baselines on the convolution and GEMM
#    problems where TF32 matters, plus a memory-bound control (JSON: OUTDIR/baselines.json);
# 2. the GPU tests of the evaluator (round 1-3 hostile candidates, parent boundary, clean kinds),
#    four evaluations at a time, device-resident path (OUTDIR/gpu_tests.log).
# Runs with the machine's python3 (torch, triton, numpy, pytest, pytest-xdist); the sandbox's
# bubblewrap comes unpacked under .tools/bwrap (carry it).
set -u
out=${1:?OUTDIR}
mkdir -p "$out"
export PYTHONPATH=$PWD PYTHONUNBUFFERED=1
[ -x .tools/bwrap/usr/bin/bwrap ] && export KERNELHUB_BWRAP=$PWD/.tools/bwrap/usr/bin/bwrap
kb=benchmarks/kernelbench_like
timeout "${BASELINE_S:-170}" python3 -m benchmarks baselines --policy strict --no-suite \
  --time-limit "$(( ${BASELINE_S:-170} - 20 ))" --out "$out/baselines.json" --files \
  benchmarks/suite/l1_conv2d_3x3_fp32.py benchmarks/suite/l1_001_matmul_fp32.py \
  benchmarks/suite/l2_076_gemm_bias_relu_fp32.py benchmarks/suite/l1_023_softmax_fp32.py \
  $kb/level1/80_conv_standard_2D_square_input_asymmetric_kernel___dilated____padded__.py \
  $kb/level2/17_Conv2d_InstanceNorm_Divide.py \
  $kb/level1/77_conv_transposed_3D_square_input_square_kernel___padded____dilated____strided__.py \
  benchmarks/suite/l1_conv_transpose2d_fp32.py \
  > "$out/baselines.log" 2>&1
timeout "${TESTS_S:-360}" python3 -m pytest --noconftest -p no:cacheprovider -q -n "${WORKERS:-4}" \
  -m gpu -k "${TEST_FILTER:-not off}" --durations=15 \
  tests/search_engine/evaluation/test_gpu_v3.py \
  tests/search_engine/evaluation/test_gpu_parent_boundary.py \
  tests/search_engine/evaluation/test_gpu.py > "$out/gpu_tests.log" 2>&1
echo "== baselines"; tail -14 "$out/baselines.log"
echo "== gpu tests"; tail -45 "$out/gpu_tests.log"
