#!/usr/bin/env bash
# One device call for screening throughput (issue 29) and the evaluator's GPU tests (issue 26).
#   bash benchmarks/h200_screening.sh OUTDIR
# 1. with TESTS_S=SECONDS, the evaluator's GPU tests (hostile rounds 1-4, parent boundary, clean
#    kinds), four at a time;
# 2. `optimize` with screening on KernelBench-shaped files at official sizes, each for
#    SEARCH_MIN minutes (default 2); OUTDIR/summary_<problem>.json has what was screened and
#    evaluated, screenings per minute, the first template's and the best's speedups and depth
#    (benchmarks/screening_summary.py; with the search's log lines and every screened
#    configuration's parameters and time), named with $TAG appended; PROBLEMS=none skips them.
# The tests stop at TESTS_S with SIGINT, so pytest still names what failed (-rf).
# Runs with the machine's python3 (torch, triton, numpy, pytest, pytest-xdist); carry .tools
# (bubblewrap unpacked under .tools/bwrap).
set -u
out=${1:?OUTDIR}
mkdir -p "$out"
export PYTHONPATH=$PWD PYTHONUNBUFFERED=1
[ -x .tools/bwrap/usr/bin/bwrap ] && export KERNELHUB_BWRAP=$PWD/.tools/bwrap/usr/bin/bwrap
nvidia-smi --query-gpu=name,clocks.sm,clocks.mem,temperature.gpu --format=csv >> "$out/gpu.txt"
if [ "${TESTS_S:-0}" -gt 0 ]; then
  timeout -s INT "$TESTS_S" python3 -m pytest --noconftest -p no:cacheprovider -q \
    -n "${WORKERS:-4}" -m gpu -k "${TEST_FILTER:-not off}" --durations=10 -rf --tb=line \
    tests/search_engine/evaluation/test_gpu_v3.py \
    tests/search_engine/evaluation/test_gpu_round4.py \
    tests/search_engine/evaluation/test_gpu_parent_boundary.py \
    tests/search_engine/evaluation/test_gpu.py \
    tests/search_engine/synthesis/test_offline_rows_coop.py > "$out/gpu_tests.log" 2>&1
fi
minutes=${SEARCH_MIN:-2}
tag=${TAG:-}
problems=${PROBLEMS:-l1_023_softmax_fp32 l2_076_gemm_bias_relu_fp32 l1_conv2d_3x3_fp32}
[ "$problems" = none ] && problems=""
for problem in $problems; do
  timeout "$(python3 -c "print(int(${minutes}*60+45))")" python3 -m search_engine optimize \
    --problem "benchmarks/suite/$problem.py" --target h200 --screen "${SCREEN:-64}" \
    --finalists 2 --children 2 --parallel 2 --budget 100 --minutes "$minutes" --json \
    --out "/tmp/tree_$problem$tag.json" > "/tmp/search_$problem$tag.json" \
    2> "/tmp/search_$problem$tag.log"
  echo "== $problem$tag rc=$?"
  python3 benchmarks/screening_summary.py "/tmp/tree_$problem$tag.json" \
    "/tmp/search_$problem$tag.json" "/tmp/search_$problem$tag.log" \
    > "$out/summary_$problem$tag.json"
  head -c 1200 "$out/summary_$problem$tag.json"; echo
done
echo "== gpu tests"; grep -E "^(FAILED|ERROR)|[0-9]+ (passed|failed)" "$out/gpu_tests.log" 2>/dev/null
