#!/usr/bin/env bash
# One device call: the offline synthesizer's default kernels for KernelBench's wider
# families (depthwise/pointwise/1-D/grouped convs, batched and skinny GEMMs, norms with
# instance/group/batch statistics, scans, a triplet loss, attention, GEMM/conv chains ending
# in a norm) against eager and torch.compile max-autotune, strict fp32, each checked against
# float64, with each GPU kernel's time.
#   bash benchmarks/gpu_families.sh OUTDIR [PROBLEMS]      (comma-separated; default: all)
# Writes OUTDIR/families.json (after every problem: a run cut by FAMILIES_S keeps its rows).
set -u
out=${1:?OUTDIR}
mkdir -p "$out"
export PYTHONUNBUFFERED=1
problems=${2:-conv2d_add_scale_sigmoid_groupnorm,gemm_groupnorm_hardtanh,gemm_scale_batchnorm,conv2d_instancenorm_divide,conv_transpose3d_leakyrelu_max,conv3d_scale_tanh_multiply_sigmoid,conv_depthwise2d,conv1d,conv_transpose1d,conv_transpose3d_grouped,conv3d_rgb,conv_pointwise,conv_depthwise_separable,instance_norm,group_norm,batch_norm_train,bmm,matmul_transposed_a,matmul_tall_skinny,matvec,matmul_large_k,cumprod,triplet,sdpa}
timeout "${FAMILIES_S:-470}" python3 search_engine/synthesis/offline/default_kernels_bench.py \
  time --labels "${LABELS:-default}" --kernel-times --only "$problems" \
  ${BESIDE:+--beside "$BESIDE"} --out "$out/families.json" 2>&1 | grep -v Warning | grep -v '^\s*$'
echo "== families rc=${PIPESTATUS[0]}"
