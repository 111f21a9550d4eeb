"""cukit.benchmark: the host and device time of a function, call by call (the shape of
CuPy's cupyx.profiler.benchmark), timed with cukit Events on each device's current stream."""
import math
import time

import numpy as np

from ._cukit import Device, Event, get_current_stream


class BenchmarkResult:
    """What benchmark() measured: `cpu_times` (n_repeat,) and `gpu_times`
    (len(devices), n_repeat), in seconds; str() gives their mean, standard deviation,
    minimum and maximum in microseconds."""

    def __init__(self, name, cpu_times, gpu_times, devices):
        self.name = name
        self.cpu_times = cpu_times
        self.gpu_times = gpu_times
        self.devices = tuple(devices)

    @staticmethod
    def _stats(label, seconds):
        us = seconds * 1e6
        return (f"{label}: {us.mean():9.3f} us +/- {us.std():7.3f} "
                f"(min: {us.min():9.3f} / max: {us.max():9.3f}) us")

    def to_str(self, show_gpu=True):
        """One line: the name, the CPU times, and (show_gpu) each device's GPU times."""
        if len(self.cpu_times) == 0:
            return f"{self.name:<20s}: no call timed"
        parts = [self._stats("CPU", self.cpu_times)]
        if show_gpu:
            parts += [self._stats(f"GPU-{d}", t) for d, t in zip(self.devices, self.gpu_times)]
        return f"{self.name:<20s}:  " + "   ".join(parts)

    def __str__(self):
        return self.to_str()

    def __repr__(self):
        return (f"<cukit.BenchmarkResult {self.name!r}: {len(self.cpu_times)} calls on "
                f"device(s) {list(self.devices)}>")


def benchmark(fn, args=(), kwargs={}, n_repeat=10000, *, name=None, n_warmup=10,  # noqa: B006
              max_duration=math.inf, devices=None):
    """Call fn(*args, **kwargs) n_warmup times untimed, then up to n_repeat times, each
    timed on the host (time.perf_counter around the call: the time to queue the work)
    and on each device of `devices` (ordinals or Devices; default the current device)
    by two Events recorded on that device's current stream (`with stream:`, else its
    default stream) before and after the call, waited for after it. Stops early once
    max_duration seconds have passed. Returns a BenchmarkResult (its str is a one-line
    summary)."""
    if not callable(fn):
        raise TypeError(f"benchmark: fn must be callable, got {type(fn).__name__}")
    n_repeat, n_warmup = int(n_repeat), int(n_warmup)
    if n_repeat < 1 or n_warmup < 0:
        raise ValueError(f"benchmark: n_repeat must be at least 1 and n_warmup at least 0 "
                         f"(got n_repeat={n_repeat}, n_warmup={n_warmup})")
    if not max_duration > 0:
        raise ValueError(f"benchmark: max_duration must be a positive number of seconds, "
                         f"got {max_duration!r}")
    devs = [Device()] if devices is None else [d if isinstance(d, Device) else Device(d)
                                               for d in devices]
    if not devs:
        raise ValueError("benchmark: devices must name at least one device")
    name = name if name is not None else getattr(fn, "__name__", type(fn).__name__)
    kwargs = dict(kwargs)
    for _ in range(n_warmup):
        fn(*args, **kwargs)
    streams = [get_current_stream(d) for d in devs]
    starts = [Event(device=d) for d in devs]
    ends = [Event(device=d) for d in devs]
    cpu = np.empty(n_repeat)
    gpu = np.empty((len(devs), n_repeat))
    began = time.perf_counter()
    done = 0
    while done < n_repeat:
        for ev, s in zip(starts, streams):
            ev.record(s)
        t0 = time.perf_counter()
        fn(*args, **kwargs)
        t1 = time.perf_counter()
        for ev, s in zip(ends, streams):
            ev.record(s)
        for k, (a, b) in enumerate(zip(starts, ends)):
            b.synchronize()
            gpu[k, done] = a.elapsed_time(b) * 1e-3
        cpu[done] = t1 - t0
        done += 1
        if time.perf_counter() - began >= max_duration:
            break
    return BenchmarkResult(name, cpu[:done].copy(), gpu[:, :done].copy(), [d.id for d in devs])
