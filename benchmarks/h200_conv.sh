#!/usr/bin/env bash
# One device call for the convolution loops (issue 30).
#   bash benchmarks/h200_conv.sh OUTDIR
# 1. the committed conv kernels of default_kernels_h200.json (flat K, taps outer, taps outer
#    over channels-last copies; tf32x3 and ieee; a few tiles) timed against eager and
#    torch.compile max-autotune, strict fp32 (cuDNN's tf32 off), each checked against float64:
#    OUTDIR/conv_kernels.json and conv_kernels.txt; with KERNEL_PRECISION=tf32, the tf32
#    kernels of default_kernels_h200_tf32.json against tf32 baselines (add the GEMMs with
#    CONVS=...,gemm_bias_relu,matmul): OUTDIR/conv_kernels_tf32.*;
# 2. with SUITE="problem ...", the suite runner on those problems under each of PRECISIONS
#    (default "strict tf32"), SUITE_S seconds each (default 400): OUTDIR/suite_<precision>.json;
# 3. then the screening searches of h200_screening.sh on the suite's convolutions
#    (SEARCH_MIN minutes each, default 2), unless SEARCH_MIN=0.
# Runs with the machine's python3 (torch, triton, numpy); carry .tools for the searches.
set -u
out=${1:?OUTDIR}
mkdir -p "$out"
export PYTHONUNBUFFERED=1
[ -x .tools/bwrap/usr/bin/bwrap ] && export KERNELHUB_BWRAP=$PWD/.tools/bwrap/usr/bin/bwrap
if [ "${KERNELS_S:-300}" != "0" ]; then  # KERNELS_S=0 skips step 1
  kp=${KERNEL_PRECISION:-strict}; name=conv_kernels${KERNEL_PRECISION:+_$kp}
  timeout "${KERNELS_S:-300}" python3 search_engine/synthesis/offline/default_kernels_bench.py \
    time --precision "$kp" \
    --only "${CONVS:-conv2d_3x3,conv2d_dilated,conv3d_relu,conv_transpose2d,conv_transpose3d}" \
    --out "$out/$name.json" > "$out/$name.txt" 2>&1
  echo "== conv kernels ($kp) rc=$?"; cat "$out/$name.txt"
fi
for precision in ${SUITE:+${PRECISIONS:-strict tf32}}; do
  PYTHONPATH=$PWD timeout "$(( ${SUITE_S:-400} + 30 ))" python3 -m benchmarks run \
    --problems $SUITE --precision "$precision" --budget 4 --parallel 2 --no-ncu \
    --time-limit "${SUITE_S:-400}" --out "$out/suite_$precision.json" \
    > "$out/suite_$precision.log" 2>&1
  echo "== suite $precision rc=$?"; grep -A30 "^| problem" "$out/suite_$precision.log"
done
if [ "${SEARCH_MIN:-2}" != "0" ]; then
  PROBLEMS="${PROBLEMS:-l1_conv2d_3x3_fp32 l1_conv_transpose2d_fp32}" \
    bash benchmarks/h200_screening.sh "$out"
fi
