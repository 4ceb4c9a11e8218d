"""``cupy.cuda`` of the simulated device: devices, the runtime, streams, events, memory pools.

Devices are ids ``0 … N-1`` (``DEZERO_SIMDEVICE_NUM_DEVICES``, default 1) with a per-thread
current device, exactly the state CuPy keeps; an invalid id raises the runtime error CuPy
raises. Streams, events and memory pools are stubs that keep code written for a GPU running;
explicit synchronisations are counted in ``stats()['sync']``. The loader turns the names listed
in ``CUDA_NAMES``/``RUNTIME_NAMES``/``MEMORY_NAMES`` into the ``cupy.cuda*`` modules.
"""

from __future__ import annotations

from . import state

_STATUS = {
    101: ("cudaErrorInvalidDevice", "invalid device ordinal"),
    2: ("cudaErrorMemoryAllocation", "out of memory"),
}

_TOTAL_MEMORY = 16 * 1024 ** 3


class CUDARuntimeError(RuntimeError):
    """CuPy's ``cupy.cuda.runtime.CUDARuntimeError`` (message ``<name>: <description>``)."""

    def __init__(self, status: int, detail: str = ""):
        self.status = status
        name, text = _STATUS.get(status, ("cudaErrorUnknown", "unknown error"))
        msg = f"{name}: {text}"
        super().__init__(msg + (f" ({detail})" if detail else ""))

    def __reduce__(self):
        return (type(self), (self.status,))


def _validate(dev_id: int) -> None:
    n = state.CONF.num_devices
    if not 0 <= dev_id < n:
        raise CUDARuntimeError(
            101, f"simulated device: device {dev_id} requested, {n} device(s) exist; set "
                 f"DEZERO_SIMDEVICE_NUM_DEVICES to simulate more")


class Device:
    """A CUDA device by id; ``use()`` or ``with`` makes it the current device of the thread."""

    def __init__(self, device=None):
        self.id = state.current_device() if device is None else int(device)
        self._prev: list = []

    def __int__(self):
        return self.id

    def __index__(self):
        return self.id

    def use(self):
        _validate(self.id)
        state.set_current_device(self.id)

    def __enter__(self):
        _validate(self.id)
        self._prev.append(state.current_device())
        state.set_current_device(self.id)
        return self

    def __exit__(self, *exc):
        state.set_current_device(self._prev.pop())

    def synchronize(self):
        _validate(self.id)
        state.count_sync()

    @property
    def compute_capability(self) -> str:
        _validate(self.id)
        return "90"

    @property
    def mem_info(self):
        _validate(self.id)
        return (_TOTAL_MEMORY, _TOTAL_MEMORY)

    def __repr__(self):
        return f"<CUDA Device {self.id}>"

    def __eq__(self, other):
        if not isinstance(other, Device):
            return NotImplemented
        return self.id == other.id

    def __hash__(self):
        return hash(("cuda-device", self.id))


def is_available() -> bool:
    return True


def get_device_id() -> int:
    return state.current_device()


# ---------------------------------------------------------------------------- runtime
def getDeviceCount() -> int:
    return state.CONF.num_devices


def getDevice() -> int:
    return state.current_device()


def setDevice(device: int) -> None:
    _validate(int(device))
    state.set_current_device(int(device))


def deviceSynchronize() -> None:
    state.count_sync()


def runtimeGetVersion() -> int:
    return 13000


def driverGetVersion() -> int:
    return 13000


def memGetInfo():
    return (_TOTAL_MEMORY, _TOTAL_MEMORY)


def getDeviceProperties(device: int) -> dict:
    _validate(int(device))
    return {"name": b"Simulated CUDA device (dezero-grader)", "totalGlobalMem": _TOTAL_MEMORY,
            "major": 9, "minor": 0, "multiProcessorCount": 1, "warpSize": 32}


# ---------------------------------------------------------------------------- streams, events
class Event:
    def __init__(self, block=False, disable_timing=False, interprocess=False):
        self.done = True

    def record(self, stream=None):
        return None

    def synchronize(self):
        state.count_sync()


class Stream:
    null = None  # set below

    def __init__(self, null=False, non_blocking=False, ptr=0):
        self.ptr = 0 if null else id(self)
        self.done = True

    def synchronize(self):
        state.count_sync()

    def use(self):
        return self

    def record(self, event=None):
        return event if event is not None else Event()

    def wait_event(self, event):
        return None

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        return None


Stream.null = Stream(null=True)


def get_current_stream(device_id=None):
    return Stream.null


def get_elapsed_time(start_event, end_event) -> float:
    return 0.0


# ---------------------------------------------------------------------------- memory
class OutOfMemoryError(MemoryError):
    pass


class MemoryPointer:
    """What ``x.data`` gives: the address of the (host-backed) buffer and its device."""

    def __init__(self, arr):
        a = arr._a
        self.ptr = a.__array_interface__["data"][0] if a.size else 0
        self.device_id = arr._dev
        self.device = Device(arr._dev)
        self.mem = None


class MemoryPool:
    """Stub of CuPy's memory pool: nothing is pooled on the simulated device."""

    def __init__(self, allocator=None):
        self._limit = 0

    def used_bytes(self) -> int:
        return 0

    def free_bytes(self) -> int:
        return 0

    def total_bytes(self) -> int:
        return 0

    def n_free_blocks(self) -> int:
        return 0

    def free_all_blocks(self, stream=None) -> None:
        return None

    def set_limit(self, size=None, fraction=None) -> None:
        self._limit = int(size or 0)

    def get_limit(self) -> int:
        return self._limit


class PinnedMemoryPool(MemoryPool):
    pass


DEFAULT_MEMORY_POOL = MemoryPool()
DEFAULT_PINNED_MEMORY_POOL = PinnedMemoryPool()


def set_allocator(allocator=None) -> None:
    return None


def set_pinned_memory_allocator(allocator=None) -> None:
    return None


CUDA_NAMES = ("Device", "is_available", "get_device_id", "Stream", "Event",
              "get_current_stream", "get_elapsed_time", "MemoryPointer", "MemoryPool",
              "PinnedMemoryPool", "OutOfMemoryError", "set_allocator",
              "set_pinned_memory_allocator")
RUNTIME_NAMES = ("CUDARuntimeError", "getDeviceCount", "getDevice", "setDevice",
                 "deviceSynchronize", "runtimeGetVersion", "driverGetVersion", "memGetInfo",
                 "getDeviceProperties")
MEMORY_NAMES = ("MemoryPointer", "MemoryPool", "PinnedMemoryPool", "OutOfMemoryError",
                "set_allocator", "set_pinned_memory_allocator")
