"""Tensors shared between sandboxes without copies through the host or the disk.

A tensor is exported as a file descriptor that the parent passes along a Unix socket
(`SCM_RIGHTS`); whoever receives the descriptor maps the same memory. Two backends:

- `cuda`: CUDA virtual memory (`cuMemCreate` with POSIX-descriptor handles, through the
  driver API by ctypes). Unlike legacy CUDA IPC (`cudaIpcGetMemHandle`, what
  `torch.multiprocessing` uses) it needs no shared PID namespace, so it works between two
  bubblewrap sandboxes; the memory stays on the GPU.
- `memfd`: an anonymous shared-memory file (`memfd_create`), for CPU targets and for the
  tests of the protocol on machines without a GPU.

The writer of a buffer allocates and exports it; readers import it. Every export and
import is released by `release` (or `release_all`), which unmaps the memory and closes the
descriptor: peak memory is what is alive, not what was ever sent.
"""

from __future__ import annotations

import ctypes
import math
import mmap
import os
from dataclasses import dataclass

_GRANULARITY_FALLBACK = 2 << 20


class ShareError(RuntimeError):
    """A buffer could not be exported or imported."""


@dataclass
class Shared:
    """One exported or imported buffer; `tensor` views its memory."""

    tensor: object
    fd: int
    nbytes: int
    release_fn: object
    created: bool = False  # exported here (new memory), not mapped from another process

    def meta(self) -> dict:
        from search_engine.evaluation.wire import dtype_name

        return {"dtype": dtype_name(self.tensor.dtype), "shape": list(self.tensor.shape),
                "nbytes": self.nbytes}


class Sharer:
    """Exports and imports tensors with one backend; keeps what is alive until released."""

    def __init__(self, backend: str):
        if backend not in ("cuda", "memfd"):
            raise ValueError(f"unknown sharing backend {backend!r}")
        self.backend = backend
        self.alive: dict[int, Shared] = {}
        self._driver = _CudaDriver() if backend == "cuda" else None
        self.created_bytes = self.created_peak_bytes = 0  # memory exported by this process

    # -- writer
    def export(self, tensor) -> Shared:
        """A shared copy of `tensor` (contiguous); its `fd` goes to the readers."""
        import torch

        tensor = tensor.detach()
        nbytes = tensor.numel() * tensor.element_size()
        if self.backend == "cuda":
            ptr, size, handle, fd = self._driver.create(max(nbytes, 1))
            view = _cuda_view(ptr, nbytes, tensor.dtype, tensor.shape)
            release = self._driver.releaser(ptr, size, handle)
        else:
            fd = os.memfd_create("kernelhub-share", os.MFD_CLOEXEC)
            os.ftruncate(fd, max(nbytes, 1))
            view, release = _memfd_view(fd, nbytes, tensor.dtype, tensor.shape)
        if nbytes:
            view.copy_(tensor.reshape(view.shape))
            if self.backend == "cuda":
                torch.cuda.synchronize()
        shared = Shared(view, fd, nbytes, release, created=True)
        self.alive[id(shared)] = shared
        self.created_bytes += nbytes
        self.created_peak_bytes = max(self.created_peak_bytes, self.created_bytes)
        return shared

    def export_all(self, tensors: list) -> tuple[list[Shared], list[int], list[dict]]:
        shared = [self.export(t) for t in tensors]
        return shared, [s.fd for s in shared], [s.meta() for s in shared]

    # -- reader
    def import_(self, fd: int, meta: dict) -> Shared:
        """Map the buffer behind `fd` (received from the writer) as a tensor of `meta`."""
        from search_engine.evaluation.wire import checked_meta

        dtype, shape, nbytes = checked_meta(meta)
        if self.backend == "cuda":
            ptr, size, handle = self._driver.import_fd(fd, max(nbytes, 1))
            view = _cuda_view(ptr, nbytes, dtype, shape)
            release = self._driver.releaser(ptr, size, handle)
        else:
            if os.fstat(fd).st_size < nbytes:
                raise ShareError(f"shared buffer holds {os.fstat(fd).st_size} bytes, "
                                 f"{nbytes} declared")
            view, release = _memfd_view(fd, nbytes, dtype, shape)
        shared = Shared(view, fd, nbytes, release)
        self.alive[id(shared)] = shared
        return shared

    def import_all(self, fds: list[int], metas: list[dict]) -> list[Shared]:
        """Import every buffer; takes ownership of `fds` (closed on failure or release)."""
        got: list[Shared] = []
        try:
            if len(fds) != len(metas):
                raise ShareError(f"{len(fds)} descriptors for {len(metas)} tensors")
            for fd, meta in zip(fds, metas):
                got.append(self.import_(fd, meta))
            return got
        except BaseException:
            self.release_all(got)
            for fd in fds[len(got):]:
                _close(fd)
            raise

    # -- both
    def release(self, shared: Shared) -> None:
        if self.alive.pop(id(shared), None) is None:
            return
        if shared.created:
            self.created_bytes -= shared.nbytes
        shared.tensor = None
        try:
            shared.release_fn()
        finally:
            _close(shared.fd)

    def release_all(self, items=None) -> None:
        for shared in list(self.alive.values() if items is None else items):
            self.release(shared)


def device_memory(gpu: bool, sharer: Sharer | None) -> dict:
    """Peak device bytes this process held: torch's caching allocator and the buffers it
    exported (shared buffers are outside the allocator). A diagnostic, for the benchmarks."""
    import torch

    return {"allocator_peak_bytes": int(torch.cuda.max_memory_reserved()) if gpu else 0,
            "shared_peak_bytes": int(sharer.created_peak_bytes) if sharer else 0}


def _close(fd: int) -> None:
    try:
        os.close(fd)
    except OSError:
        pass


def _memfd_view(fd: int, nbytes: int, dtype, shape):
    import torch

    if not nbytes:
        return torch.empty(shape, dtype=dtype), (lambda: None)
    mem = mmap.mmap(fd, nbytes, prot=mmap.PROT_READ | mmap.PROT_WRITE)
    raw = torch.frombuffer(mem, dtype=torch.uint8, count=nbytes)
    view = raw.view(dtype).reshape(shape)

    def release():
        nonlocal raw
        raw = None
        try:
            mem.close()
        except BufferError:  # a tensor still views it: the mapping goes with the process
            pass
    return view, release


class _CudaArray:
    """The `__cuda_array_interface__` torch reads to wrap a raw device pointer."""

    def __init__(self, ptr: int, nbytes: int):
        self.__cuda_array_interface__ = {"shape": (nbytes,), "typestr": "|u1",
                                         "data": (ptr, False), "version": 3, "strides": None}


def _cuda_view(ptr: int, nbytes: int, dtype, shape):
    import torch

    if not nbytes:
        return torch.empty(shape, dtype=dtype, device="cuda")
    raw = torch.as_tensor(_CudaArray(ptr, nbytes), device="cuda")
    return raw.view(dtype).reshape(shape)


# -- the CUDA driver's virtual memory API, by ctypes (torch exposes no export of its own)
_POSIX_FD = 1          # CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR
_PINNED = 1            # CU_MEM_ALLOCATION_TYPE_PINNED
_LOCATION_DEVICE = 1   # CU_MEM_LOCATION_TYPE_DEVICE
_READWRITE = 3         # CU_MEM_ACCESS_FLAGS_PROT_READWRITE


class _Location(ctypes.Structure):
    _fields_ = [("type", ctypes.c_int), ("id", ctypes.c_int)]


class _AllocFlags(ctypes.Structure):
    _fields_ = [("compressionType", ctypes.c_ubyte), ("gpuDirectRDMACapable", ctypes.c_ubyte),
                ("usage", ctypes.c_ushort), ("reserved", ctypes.c_ubyte * 4)]


class _AllocProp(ctypes.Structure):
    _fields_ = [("type", ctypes.c_int), ("requestedHandleTypes", ctypes.c_int),
                ("location", _Location), ("win32HandleMetaData", ctypes.c_void_p),
                ("allocFlags", _AllocFlags)]


class _AccessDesc(ctypes.Structure):
    _fields_ = [("location", _Location), ("flags", ctypes.c_int)]


class _CudaDriver:
    def __init__(self):
        import torch

        torch.cuda.init()
        torch.empty(1, device="cuda")  # the primary context is current on this thread
        try:
            self.lib = ctypes.CDLL("libcuda.so.1")
        except OSError as exc:
            raise ShareError(f"the CUDA driver library is not loadable: {exc}") from None
        self.device = torch.cuda.current_device()
        self.prop = _AllocProp()
        self.prop.type = _PINNED
        self.prop.requestedHandleTypes = _POSIX_FD
        self.prop.location = _Location(_LOCATION_DEVICE, self.device)
        granularity = ctypes.c_size_t()
        if self.lib.cuMemGetAllocationGranularity(ctypes.byref(granularity),
                                                   ctypes.byref(self.prop), 0):
            granularity.value = _GRANULARITY_FALLBACK
        self.granularity = granularity.value or _GRANULARITY_FALLBACK

    def _check(self, code: int, what: str) -> None:
        if code:
            name = ctypes.c_char_p()
            self.lib.cuGetErrorName(code, ctypes.byref(name))
            raise ShareError(f"{what} failed: {(name.value or b'?').decode()} ({code})")

    def _size(self, nbytes: int) -> int:
        return math.ceil(nbytes / self.granularity) * self.granularity

    def create(self, nbytes: int) -> tuple[int, int, int, int]:
        size = self._size(nbytes)
        handle = ctypes.c_ulonglong()
        self._check(self.lib.cuMemCreate(ctypes.byref(handle), ctypes.c_size_t(size),
                                         ctypes.byref(self.prop), ctypes.c_ulonglong(0)),
                    f"cuMemCreate({size} bytes)")
        fd = ctypes.c_int(-1)
        try:
            self._check(self.lib.cuMemExportToShareableHandle(
                ctypes.byref(fd), handle, _POSIX_FD, ctypes.c_ulonglong(0)),
                "cuMemExportToShareableHandle")
            ptr = self._map(handle, size)
        except ShareError:
            self.lib.cuMemRelease(handle)
            if fd.value >= 0:
                os.close(fd.value)
            raise
        return ptr, size, handle.value, fd.value

    def import_fd(self, fd: int, nbytes: int) -> tuple[int, int, int]:
        size = self._size(nbytes)
        handle = ctypes.c_ulonglong()
        self._check(self.lib.cuMemImportFromShareableHandle(
            ctypes.byref(handle), ctypes.c_void_p(fd), _POSIX_FD),
            "cuMemImportFromShareableHandle")
        try:
            ptr = self._map(handle, size)
        except ShareError:
            self.lib.cuMemRelease(handle)
            raise
        return ptr, size, handle.value

    def _map(self, handle: ctypes.c_ulonglong, size: int) -> int:
        ptr = ctypes.c_ulonglong()
        self._check(self.lib.cuMemAddressReserve(ctypes.byref(ptr), ctypes.c_size_t(size),
                                                 ctypes.c_size_t(0), ctypes.c_ulonglong(0),
                                                 ctypes.c_ulonglong(0)), "cuMemAddressReserve")
        try:
            self._check(self.lib.cuMemMap(ptr, ctypes.c_size_t(size), ctypes.c_size_t(0), handle,
                                          ctypes.c_ulonglong(0)), "cuMemMap")
            access = _AccessDesc(_Location(_LOCATION_DEVICE, self.device), _READWRITE)
            self._check(self.lib.cuMemSetAccess(ptr, ctypes.c_size_t(size),
                                                ctypes.byref(access), ctypes.c_size_t(1)),
                        "cuMemSetAccess")
        except ShareError:
            self.lib.cuMemUnmap(ptr, ctypes.c_size_t(size))
            self.lib.cuMemAddressFree(ptr, ctypes.c_size_t(size))
            raise
        return ptr.value

    def releaser(self, ptr: int, size: int, handle: int):
        def release():
            import torch

            torch.cuda.synchronize()  # no kernel may still use the memory
            self.lib.cuMemUnmap(ctypes.c_ulonglong(ptr), ctypes.c_size_t(size))
            self.lib.cuMemAddressFree(ctypes.c_ulonglong(ptr), ctypes.c_size_t(size))
            self.lib.cuMemRelease(ctypes.c_ulonglong(handle))
        return release


def backend_for(device: str) -> str:
    return "cuda" if device == "cuda" else "memfd"
