"""The evaluator's wire format: framed messages of JSON plus raw tensor bytes.

Parent and sandbox child talk over one socket. Each frame is

    8 bytes  big-endian length of the JSON header
    header   {"kind": ..., "id": ..., ..., "tensors": [{"dtype", "shape", "nbytes"}, ...]}
    bytes    the tensors' contiguous little-endian bytes, in order

Nothing is unpickled: the reader checks every dtype against a fixed table, every byte count
against shape × item size and the total against a cap, so a frame written by hostile code
can only be rejected (`ProtocolError`), never run. Inputs that are not tensors (ints,
floats, bools, None, strings) travel in the header as `values`.
"""

from __future__ import annotations

import json
import math
import re
import socket
import struct
from typing import Any

HEADER_LIMIT = 4 << 20  # a header is metadata only
MAX_DEPTH = 64  # nesting of a header's JSON; an honest one is a handful deep
_JSON_STRING = re.compile(rb'"(?:[^"\\]|\\.)*"', re.DOTALL)
_JSON_BRACKET = re.compile(rb"[\[\]{}]")
_LEN = struct.Struct(">Q")

DTYPES = ("float64", "float32", "float16", "bfloat16", "int64", "int32", "int16", "int8",
          "uint8", "bool", "complex64", "complex128")


class ProtocolError(RuntimeError):
    """A frame that breaks the format, the caps, or the request order."""


def _torch_dtype(name: str):
    import torch

    if name not in DTYPES:
        raise ProtocolError(f"dtype {name!r} is not allowed on the wire")
    return getattr(torch, name)


def dtype_name(dtype) -> str:
    return str(dtype).replace("torch.", "")


def encode_values(values: list) -> tuple[list, list]:
    """Split a list of call arguments into JSON slots and the tensors they point to."""
    import torch

    slots, tensors = [], []
    for v in values:
        if isinstance(v, torch.Tensor):
            slots.append({"tensor": len(tensors)})
            tensors.append(v)
        elif v is None or isinstance(v, (bool, int, float, str)):
            slots.append({"value": v})
        elif isinstance(v, (list, tuple)) and all(isinstance(x, (bool, int, float)) for x in v):
            slots.append({"value": list(v), "tuple": isinstance(v, tuple)})
        else:
            raise TypeError(f"cannot send a {type(v).__name__} to the sandbox")
    return slots, tensors


def decode_values(slots: list, tensors: list) -> list:
    out = []
    for slot in slots:
        if not isinstance(slot, dict):
            raise ProtocolError("malformed value slot")
        if "tensor" in slot:
            index = slot["tensor"]
            if not isinstance(index, int) or not 0 <= index < len(tensors):
                raise ProtocolError("value slot points at no tensor")
            out.append(tensors[index])
        else:
            value = slot.get("value")
            out.append(tuple(value) if slot.get("tuple") else value)
    return out


MAX_FDS = 64  # descriptors of shared buffers (`device_share`) in one frame


def send(sock: socket.socket, header: dict, tensors: list | None = None,
         fds: list[int] | None = None) -> None:
    """One frame; `fds` (shared buffers' descriptors) travel as SCM_RIGHTS with its first
    bytes, their count in the header as `fd_count`."""
    tensors = list(tensors or [])
    fds = list(fds or [])
    if len(fds) > MAX_FDS:
        raise ValueError(f"{len(fds)} descriptors in one frame (at most {MAX_FDS})")
    blobs, meta = [], []
    for t in tensors:
        flat = t.detach().contiguous().cpu().reshape(-1)
        if flat.dtype.is_complex:
            flat = flat.view(float_dtype_for_complex(flat.dtype))
        raw = flat.view(_byte_dtype()) if flat.numel() else flat
        blobs.append(memoryview(raw.numpy()) if flat.numel() else memoryview(b""))
        meta.append({"dtype": dtype_name(t.dtype), "shape": list(t.shape),
                     "nbytes": t.numel() * t.element_size()})
    body = json.dumps({**header, "tensors": meta, "fd_count": len(fds)}, default=str).encode()
    frame = _LEN.pack(len(body)) + body
    if fds:
        sent = socket.send_fds(sock, [frame[:_LEN.size]], fds)
        sock.sendall(frame[sent:])
    else:
        sock.sendall(frame)
    for blob in blobs:
        sock.sendall(blob)


def recv(sock: socket.socket, max_tensor_bytes: int, max_fds: int = 0) -> tuple[dict, list]:
    """One frame; raises ProtocolError (bad frame), EOFError (peer gone). Descriptors that
    came with it are in the header as `fds` (at most `max_fds`; more, or any where none were
    asked for, are closed and the frame rejected)."""
    first, fds, flags, _ = socket.recv_fds(sock, _LEN.size, MAX_FDS)
    try:
        if not first:
            raise EOFError("peer closed the socket")
        if flags & getattr(socket, "MSG_CTRUNC", 8) or len(fds) > max_fds:
            raise ProtocolError(f"frame carries {len(fds)} descriptors, {max_fds} allowed")
        size = _LEN.unpack(first + _recv_exact(sock, _LEN.size - len(first)))[0]
        if size > HEADER_LIMIT:
            raise ProtocolError(f"header of {size} bytes exceeds the {HEADER_LIMIT} byte cap")
        header = parse_header(_recv_exact(sock, size))
        if not isinstance(header, dict) or not isinstance(header.get("tensors", []), list):
            raise ProtocolError("header is not a JSON object with a tensor list")
        if header.get("fd_count", 0) != len(fds):
            raise ProtocolError(f"header declares {header.get('fd_count')} descriptors, "
                                f"{len(fds)} arrived")
    except BaseException:
        _close_all(fds)
        raise
    header["fds"] = list(fds)
    metas = header.pop("tensors", [])
    total = 0
    plan = []
    for meta in metas:
        dtype, shape, nbytes = checked_meta(meta)
        total += nbytes
        if total > max_tensor_bytes:
            _close_all(fds)
            raise ProtocolError(f"frame carries over {max_tensor_bytes} bytes of tensors")
        plan.append((dtype, shape, nbytes))
    return header, [_read_tensor(sock, *p) for p in plan]


def parse_header(raw: bytes) -> Any:
    """JSON of at most MAX_DEPTH levels, or ProtocolError (never RecursionError: the
    depth is counted before the parser recurses)."""
    if raw.count(b"[") + raw.count(b"{") > MAX_DEPTH:
        depth = deepest = 0
        for bracket in _JSON_BRACKET.findall(_JSON_STRING.sub(b'""', raw)):
            depth += 1 if bracket in (b"[", b"{") else -1
            deepest = max(deepest, depth)
            if deepest > MAX_DEPTH:
                raise ProtocolError(f"header nests deeper than {MAX_DEPTH} levels")
    try:
        return json.loads(raw)
    except (ValueError, RecursionError) as exc:
        raise ProtocolError(f"header is not JSON: {type(exc).__name__}: {exc}"[:300]) from None


def checked_meta(meta) -> tuple:
    """(dtype, shape, nbytes) of a tensor description, or ProtocolError."""
    import torch

    if not isinstance(meta, dict):
        raise ProtocolError("malformed tensor entry")
    dtype = _torch_dtype(meta.get("dtype"))
    shape = meta.get("shape")
    if not isinstance(shape, list) or not all(isinstance(d, int) and d >= 0 for d in shape):
        raise ProtocolError(f"bad tensor shape {shape!r}")
    nbytes = math.prod(shape) * torch.empty((), dtype=dtype).element_size()
    if meta.get("nbytes") != nbytes:
        raise ProtocolError(f"tensor of shape {shape} {meta.get('dtype')} declares "
                            f"{meta.get('nbytes')} bytes, expected {nbytes}")
    return dtype, shape, nbytes


def close_fds(fds) -> None:
    """Close descriptors that arrived with a frame (after their buffers were imported)."""
    _close_all(fds)


def _close_all(fds) -> None:
    import os

    for fd in fds:
        try:
            os.close(fd)
        except OSError:
            pass


def _read_tensor(sock: socket.socket, dtype, shape: list, nbytes: int):
    import torch

    buffer = bytearray(nbytes)
    view = memoryview(buffer)
    got = 0
    while got < nbytes:
        n = sock.recv_into(view[got:], min(nbytes - got, 16 << 20))
        if not n:
            raise EOFError("peer closed the socket inside a tensor")
        got += n
    if not nbytes:
        return torch.empty(shape, dtype=dtype)
    flat = torch.frombuffer(buffer, dtype=torch.uint8)
    if dtype.is_complex:
        return flat.view(float_dtype_for_complex(dtype)).view(dtype).reshape(shape)
    return flat.view(dtype).reshape(shape)


def _recv_exact(sock: socket.socket, n: int) -> bytes:
    chunks, got = [], 0
    while got < n:
        chunk = sock.recv(min(n - got, 1 << 20))
        if not chunk:
            raise EOFError("peer closed the socket")
        chunks.append(chunk)
        got += len(chunk)
    return b"".join(chunks)


def _byte_dtype():
    import torch

    return torch.uint8


def float_dtype_for_complex(dtype):
    import torch

    return torch.float32 if dtype == torch.complex64 else torch.float64


def run_server(fd: int, make_server) -> None:
    """A sandbox's main: serve requests on the inherited socket `fd` until the parent says
    exit or goes away, then leave without interpreter teardown (a candidate's leftover
    threads must not keep the process alive)."""
    import os
    import sys

    sock = socket.socket(fileno=fd)
    try:
        make_server(sock).serve()
    except (EOFError, BrokenPipeError, ConnectionError):
        pass
    sys.stdout.flush()
    os._exit(0)


def plain_tensors(out: Any, limit: int) -> list:
    """A forward's return value as a list of plain tensors, or TypeError saying why not."""
    import torch

    items = [out] if isinstance(out, torch.Tensor) else out
    if not isinstance(items, (list, tuple)):
        raise TypeError(f"forward returned a {type(out).__name__}, expected a tensor or a "
                        "tuple of tensors")
    if len(items) > limit:
        raise TypeError(f"forward returned {len(items)} values; the reference returns at most "
                        f"{limit}")
    for i, o in enumerate(items):
        if type(o) is not torch.Tensor:  # subclasses can compute when read: refuse them
            raise TypeError(f"output {i} is a {type(o).__module__}.{type(o).__name__}, not a "
                            "plain torch.Tensor")
        if o.layout != torch.strided:
            raise TypeError(f"output {i} has layout {o.layout}; only dense tensors are accepted")
        if dtype_name(o.dtype) not in DTYPES:
            raise TypeError(f"output {i} has dtype {o.dtype}, which is not accepted")
    return list(items)
