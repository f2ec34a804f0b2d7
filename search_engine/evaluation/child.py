"""The candidate's side of an evaluation: `python -m search_engine.evaluation.child`.

This process is untrusted: it holds the candidate and, one request at a time, the inputs
the parent chose. It never sees the problem's source, the reference model, the reference
outputs or the trial plan. It answers requests over one socket (see `wire`) and the
parent checks every answer: outputs are compared by the parent, a reply out of order is a
protocol violation, and nothing here decides a status.

With `--resident` (GPU targets) input sets arrive as shared device buffers from the
problem's sandbox (`device_share`) and outputs leave the same way, for the problem's
sandbox to compare: nothing large crosses the host.

Requests: `load` (init inputs + weights, build ModelNew), `stage` (keep an input set),
`call` (one forward on a staged set; outputs back at once, so work cannot be deferred),
`ghost` (the same with every Triton launch a no-op and fresh memory poisoned), `time`,
`sample` (values of kept outputs at indices chosen after they were fixed),
`share_kept` (kept outputs as shared buffers), `unstage`, `profile`, `evidence`, `exit`.
A `--mode ncu` run replays two calls from files for ncu.

The forward calls and their evidence are `candidate_call.CandidateCalls`; the profiler and
the ncu replay are `candidate_profiling`'s.
"""

from __future__ import annotations

import argparse
import os
import socket
import sys
import threading
import traceback
from pathlib import Path

from search_engine.evaluation import wire
from search_engine.evaluation.candidate_call import CandidateCalls, OutputRejected
from search_engine.evaluation.candidate_profiling import (
    _load_weights,
    _profile_device_time,
    _timing_call,
    _warm_profiler,
    replay_for_ncu,
)
from search_engine.evaluation.device_share import device_memory

MAX_REQUEST_BYTES = 1 << 40  # the parent is trusted; its frames are bounded by the problem
LARGE_OUTPUTS = 1 << 30  # shared outputs this large: their torch originals go back to CUDA


class CandidateServer(CandidateCalls):
    def __init__(self, sock: socket.socket, device: str, resident: bool = False):
        self.sock, self.device = sock, device
        self.gpu = device == "cuda"
        self.model = None
        self.sets: dict[int, list] = {}
        self.staged_shared: dict[int, list] = {}  # set -> its imported shared buffers
        self.sent_shared: list = []               # our last exported outputs
        self.sharer = None
        if resident:
            from search_engine.evaluation.device_share import Sharer, backend_for

            self.sharer = Sharer(backend_for(device))
        self.kept: dict[str, list] = {}  # outputs kept on the device until the parent samples
        self.max_outputs = 16
        self.max_output_bytes = 1 << 30
        import torch
        import triton  # noqa: F401  (after TRITON_INTERPRET was set by the parent)

        from search_engine.evaluation import timing  # noqa: F401  (bound before the candidate)
        from search_engine.evaluation.hooks import (
            InterpreterWork, LaunchRecorder, make_aten_work_recorder, snapshot_timers,
        )

        self.torch = torch
        self.work = None
        if not self.gpu:
            _install_interpreter_compat()
            self.work = InterpreterWork()
            self.work.install()
        self.recorder = LaunchRecorder(work=self.work)
        self._noop = self.recorder.install()
        # every target: torch compute outside the kernels is a violation on the GPU too
        self.aten = make_aten_work_recorder(self.recorder, interpreter=not self.gpu)
        self.timers = snapshot_timers()
        # CUPTI takes seconds to start: it starts beside the first requests (the compile
        # pass waits for it, timing and profiling too), so a sandbox is ready sooner.
        self.profiler_ready = threading.Event()
        if self.gpu:
            threading.Thread(target=self._start_profiler, daemon=True,
                             name="kernelhub-cupti-warm").start()
        else:
            self.profiler_ready.set()
        self.host_reads: dict[str, int] = {}
        self.scalar_reads: dict[str, int] = {}
        self.escapes: dict[str, int] = {}
        self.threads: dict[str, int] = {}
        # The candidate's code runs watched from its import on: `in_forward` is set around
        # the import, construction and weight loading as well as around every call.
        self.in_forward = False
        self.output_shapes: list[list[int]] = []
        from search_engine.evaluation.call_watch import (
            snapshot_harness, watch_dispatch_escapes, watch_tensor_reads, watch_threads,
        )

        watch_tensor_reads(self.recorder, self.host_reads, self.scalar_reads,
                           lambda: self.in_forward)
        watch_dispatch_escapes(lambda: self.in_forward and not self.recorder.in_launch,
                               self.escapes)
        watch_threads(lambda: self.recorder.own_filename, self.threads)
        self.harness = snapshot_harness(self)

    def _start_profiler(self) -> None:
        try:
            _warm_profiler()
        finally:
            self.profiler_ready.set()

    # -- the loop
    def serve(self) -> None:
        stream = self.torch.cuda.current_stream().cuda_stream if self.gpu else None
        wire.send(self.sock, {"kind": "ready", "pid": os.getpid(), "default_stream": stream})
        while True:
            header, tensors = wire.recv(self.sock, MAX_REQUEST_BYTES, max_fds=wire.MAX_FDS)
            kind = header.get("kind")
            handler = getattr(self, f"on_{kind}", None) if kind in REQUESTS else None
            if kind == "exit":
                wire.send(self.sock, {"kind": "bye", "re": header.get("id")})
                return
            if handler is None:
                reply, out = {"ok": False, "error": "protocol", "message": f"unknown {kind!r}"}, []
            else:
                try:
                    reply, out = handler(header, tensors)
                except BaseException as exc:  # noqa: BLE001 - report anything the candidate raises
                    reply, out = self._failure(exc), []
            wire.close_fds(header.pop("fds", []))  # those no handler took
            fds = reply.pop("send_fds", [])
            wire.send(self.sock, {"kind": "reply", "re": header.get("id"), **reply}, out, fds)

    def _failure(self, exc: BaseException) -> dict:
        error = "compile" if _is_triton_compile_error(exc) else "runtime"
        if isinstance(exc, OutputRejected):
            error = "output"
        return {"ok": False, "error": error, "message": f"{type(exc).__name__}: {exc}"[:2000],
                "traceback": traceback.format_exc(limit=8)[-4000:]}

    # -- requests
    def on_load(self, header: dict, tensors: list) -> tuple[dict, list]:
        self.recorder.own_filename = header["candidate_file"]
        init_inputs = wire.decode_values(header["init"], tensors)
        state = dict(zip(header["state_keys"], tensors[header["state_offset"]:]))
        self.max_outputs = int(header.get("max_outputs", 16))
        self.output_shapes = header.get("output_shapes", [])
        self.max_output_bytes = int(header.get("max_output_bytes", 1 << 30))
        self.build = (header["candidate_file"], init_inputs, state, int(header["seed"]))
        before = self._watched_counts()
        try:
            self.model = self._build_model()
        except BaseException as exc:  # noqa: BLE001 - every failure here is a build failure
            return self._build_failure(exc), []
        from search_engine.evaluation.candidate_call import _grown

        after = self._watched_counts()
        return {"ok": True, "evidence": {k: _grown(before[k], after[k]) for k in before}}, []

    def _watched_counts(self) -> dict:
        return {"host_reads": dict(self.host_reads), "scalar_reads": dict(self.scalar_reads),
                "dispatch_escapes": dict(self.escapes), "threads": dict(self.threads)}

    def _build_model(self):
        """A fresh module and ModelNew: nothing of an earlier instance's state survives."""
        from search_engine.problems import exec_module

        candidate_file, init_inputs, state, seed = self.build
        self.in_forward = True  # import, construction and weight loading run watched
        try:
            module = exec_module(Path(candidate_file).read_text(), "kernelhub_candidate",
                                 candidate_file)
            if not hasattr(module, "ModelNew"):
                raise AttributeError("the candidate defines no ModelNew")
            self.torch.manual_seed(seed)
            model = module.ModelNew(*init_inputs)
            _load_weights(model, state)
            model = model.to(self.device).eval()
        finally:
            self.in_forward = False
        # The build seed is public (the reference's weights); what the RNG says after it
        # must not hint at anything, so it is reseeded from the OS (trial seeds are the
        # parent's secret anyway and never reach this process).
        self.torch.manual_seed(int.from_bytes(os.urandom(8), "little") >> 1)
        return model

    @staticmethod
    def _build_failure(exc: BaseException) -> dict:
        return {"ok": False, "error": "compile", "message": f"{type(exc).__name__}: {exc}"[:2000],
                "traceback": traceback.format_exc(limit=8)[-4000:]}

    def on_stage(self, header: dict, tensors: list) -> tuple[dict, list]:
        which = int(header["set"])
        if header.get("shared") is not None:
            shared = self.sharer.import_all(header.pop("fds", []), header["shared"])
            self.staged_shared[which] = shared
            tensors = [s.tensor for s in shared]
        values = wire.decode_values(header["inputs"], tensors)
        self.sets[which] = [x.to(self.device) if isinstance(x, self.torch.Tensor)
                            else x for x in values]
        return {"ok": True}, []

    def on_unstage(self, header: dict, tensors: list) -> tuple[dict, list]:
        which = int(header["set"])
        self.sets.pop(which, None)
        self.sharer.release_all(self.staged_shared.pop(which, []))
        return {"ok": True}, []

    def on_share_kept(self, header: dict, tensors: list) -> tuple[dict, list]:
        """The kept outputs as shared buffers (the problem's sandbox compares them)."""
        layout, tensors_out = [], []
        for name in sorted(self.kept):
            layout.append({"name": name, "count": len(self.kept[name])})
            tensors_out += self.kept[name]
        self.kept.clear()
        reply = {"ok": True, "layout": layout, **self._export(tensors_out)}
        del tensors_out
        self._return_large_outputs()
        return reply, []

    def _export(self, tensors: list) -> dict:
        """Shared copies of `tensors`; the previous ones are released (one set in flight)."""
        self.sharer.release_all(self.sent_shared)
        self.sent_shared, fds, metas = self.sharer.export_all(tensors)
        return {"shared": metas, "send_fds": fds}

    def on_warm(self, header: dict, tensors: list) -> tuple[dict, list]:
        """Run forward once with every Triton launch turned into a compile (nothing of
        Triton's runs on the GPU), so the correctness calls that follow, which must not
        overlap another candidate's timing, do not spend their time in the compiler. An
        autotuned kernel ends the pass: its configurations must be timed for real. The
        model is then built afresh: whatever the pass left in it (a cache, a counter, a
        weight prepared by a kernel that did not run) is gone; the kernels come back from
        Triton's on-disk cache in this sandbox."""
        from triton.runtime.autotuner import Autotuner

        original = Autotuner.run

        def refuse(*args, **kwargs):
            raise _AutotuneNotWarmed()

        Autotuner.run = refuse
        self.recorder.compile_only = True
        try:
            with self.torch.no_grad():
                self.model(*self.sets[int(header["set"])])
            warmed = "all"
        except _AutotuneNotWarmed:
            warmed = "up to an autotuned kernel"
        finally:
            self.recorder.compile_only = False
            Autotuner.run = original
        if self.gpu:
            self.torch.cuda.synchronize()
        self.profiler_ready.wait()  # before the correctness calls: off the GPU locks
        try:
            self.model = self._build_model()
        except BaseException as exc:  # noqa: BLE001 - built once already: report it as built
            return self._build_failure(exc), []
        return {"ok": True, "warmed": warmed}, []

    def _return_large_outputs(self) -> None:
        """Once GB-sized outputs have their shared copies, their torch originals go back to
        CUDA instead of waiting in the caching allocator beside them."""
        if self.gpu and self.sharer is not None and self.sharer.created_bytes >= LARGE_OUTPUTS:
            self.torch.cuda.empty_cache()

    def on_sample(self, header: dict, tensors: list) -> tuple[dict, list]:
        """Values of the kept outputs at indices the parent chose after they were fixed."""
        by_numel = {int(n): tensors[i] for n, i in header["index_for_numel"].items()}
        layout, out = [], []
        for name in sorted(self.kept):
            kept = self.kept[name]
            layout.append({"name": name, "count": len(kept)})
            for t in kept:
                idx = by_numel.get(t.numel())
                flat = t.reshape(-1)
                out.append(flat[idx.to(flat.device)].to("cpu") if idx is not None
                           else flat[:0].to("cpu"))
        self.kept.clear()
        return {"ok": True, "layout": layout}, out

    def on_time(self, header: dict, tensors: list) -> tuple[dict, list]:
        from search_engine.evaluation.timing import time_gpu, time_interpreter

        self.profiler_ready.wait()  # its start-up must not overlap the timed loop

        sets = [int(s) for s in header["sets"]]
        input_sets = [self.sets[s] for s in sets]
        t = header["timing"]
        call = _timing_call(self.model)
        if self.gpu:
            m = time_gpu(call, input_sets, l2_bytes=t["l2_bytes"], warmup_ms=t["warmup_ms"],
                         min_timing_ms=t["min_timing_ms"], min_reps=t["min_reps"],
                         max_reps=t["max_reps"], l2_flush_factor=t["l2_flush_factor"],
                         pad=bool(header.get("pad", True)))
        else:
            m = time_interpreter(call, input_sets, reps=t["interpreter_reps"])
        layout = []
        for index, out in m.last_outputs:  # kept on the device; the parent samples them
            tensors_out = wire.plain_tensors(out, self.max_outputs)
            self.kept[f"time:{sets[index]:04d}"] = tensors_out
            layout.append({"set": sets[index], "count": len(tensors_out)})
        return {"ok": True, "stats": m.stats(), "host_median_ms": m.host_median_ms,
                "measured_s": m.measured_s, "floor_ms": m.floor_ms,
                "raw_median_ms": m.raw_median_ms, "pad_ms": m.pad_ms, "last": layout}, []

    def on_profile(self, header: dict, tensors: list) -> tuple[dict, list]:
        self.profiler_ready.wait()
        sets = [self.sets[int(s)] for s in header["sets"]]
        return {"ok": True, "profile_us": _profile_device_time(
            _timing_call(self.model), sets, int(header["iterations"]))}, []

    def on_evidence(self, header: dict, tensors: list) -> tuple[dict, list]:
        from search_engine.evaluation.hooks import tampered_timers

        torch = self.torch
        from search_engine.evaluation.call_watch import tampered_harness

        return {"ok": True, "tampered_timers": tampered_timers(self.timers),
                "tampered_harness": tampered_harness(self.harness),
                "own_kernels": self.recorder.own_names(),
                "own_kernel_symbols": self.recorder.own_symbols(),
                "threads_total": dict(self.threads),
                "default_stream": torch.cuda.current_stream().cuda_stream if self.gpu else None,
                "kernel_metadata": self.recorder.kernel_metadata() if self.gpu else [],
                "aten_bytes": self.aten.bytes if self.aten else 0,
                "aten_ops": dict(sorted(self.aten.ops.items(), key=lambda kv: -kv[1])[:10])
                if self.aten else {},
                "device_memory": device_memory(self.gpu, self.sharer)}, []


REQUESTS = {"load", "stage", "unstage", "warm", "call", "ghost", "sample", "share_kept", "time",
            "profile", "evidence", "exit"}


class _AutotuneNotWarmed(Exception):
    pass


def _install_interpreter_compat() -> None:
    from search_engine.evaluation import interpreter_compat

    interpreter_compat.install()


def _is_triton_compile_error(exc: BaseException) -> bool:
    """Kernels compile at their first launch: their failures are compile errors. The
    interpreter has no compile step; a missing name in a kernel is its equivalent."""
    for e in (exc, exc.__cause__, exc.__context__):
        if e is None:
            continue
        if type(e).__module__.startswith("triton.compiler"):
            return True
        if type(e).__name__ == "InterpreterError" and str(e).startswith(
                ("AttributeError", "NameError", "CompilationError")):
            return True
    return False


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--sock", type=int)
    parser.add_argument("--device", default="cpu", choices=["cpu", "cuda"])
    parser.add_argument("--mode", default="serve", choices=["serve", "ncu"])
    parser.add_argument("--inputs")
    parser.add_argument("--candidate")
    parser.add_argument("--resident", action="store_true",
                        help="input sets and outputs as shared buffers (see device_share)")
    args = parser.parse_args(argv)
    if args.mode == "ncu":
        replay_for_ncu(args.inputs, args.candidate)
        os._exit(0)
    wire.run_server(args.sock, lambda sock: CandidateServer(sock, args.device, args.resident))
    return 0


if __name__ == "__main__":
    sys.exit(main())
