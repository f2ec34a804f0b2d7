import os
import signal
import socket
import struct

import torch
import triton
import triton.language as tl
from torch import nn

MODE = "deep"  # the test swaps in: deep | huge | garbage


@triton.jit
def copy_kernel(src_ptr, dst_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    tl.store(dst_ptr + offs, tl.load(src_ptr + offs, mask=mask), mask=mask)


def _header() -> bytes:
    if MODE == "deep":  # past any recursion limit of a JSON parser
        return b"[" * 200_000 + b"]" * 200_000
    if MODE == "huge":  # declares a header far beyond the cap
        return b"{" + b" " * 64 + b"}"
    return b"\xff\xfe not json at all"


def _reply_badly():
    """Find the harness's socket and send the parent a reply it must survive, then die."""
    header = _header()
    declared = (1 << 40) if MODE == "huge" else len(header)
    for name in os.listdir("/proc/self/fd"):
        try:
            s = socket.socket(fileno=os.dup(int(name)))
        except OSError:
            continue
        try:
            if s.type == socket.SOCK_STREAM:
                s.sendall(struct.pack(">Q", declared) + header)
        except OSError:
            pass
    os.kill(os.getpid(), signal.SIGKILL)


class ModelNew(nn.Module):
    def forward(self, x):
        y = torch.empty_like(x)
        copy_kernel[(triton.cdiv(x.numel(), 1024),)](x, y, x.numel(), BLOCK=1024)
        _reply_badly()
        return y
