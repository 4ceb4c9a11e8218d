"""The plain-data encoding across the worker boundary: exact round trips, strict refusals."""

import json
import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

from dezero_grader import wire
from dezero_grader.errors import GraderError, WorkerFailure


def through_json(obj):
    """What the other side of the boundary receives: strict JSON, no NaN literals."""
    return json.loads(json.dumps(wire.encode(obj), allow_nan=False))


def round_trip(obj):
    return wire.decode(through_json(obj))


def same_array(a: np.ndarray, b: np.ndarray) -> bool:
    return a.dtype == b.dtype and a.shape == b.shape and a.tobytes() == b.tobytes()


class FakeDeviceArray:
    """Stands in for a device array: lives in a ``cupy`` module and copies to the host with get()."""

    def __init__(self, host):
        self._host = host

    def get(self):
        return self._host.copy() if isinstance(self._host, np.ndarray) else self._host


FakeDeviceArray.__module__ = "cupy._core.core"


def test_plain_values_round_trip():
    value = {"a": [1, -2, 3.25, "ü", None, True, False], "nested": {"deep": [[], {}]}, "big": 2**80}
    assert round_trip(value) == value
    assert round_trip((1, 2)) == [1, 2]  # tuples come back as lists


@pytest.mark.parametrize("x", [math.nan, math.inf, -math.inf])
def test_non_finite_floats_survive_strict_json(x):
    got = round_trip({"x": x})["x"]
    assert isinstance(got, float) and (math.isnan(got) if math.isnan(x) else got == x)


def test_numpy_scalars_keep_their_type():
    for x in [np.float32(1.5), np.float64(-0.0), np.int8(-3), np.uint64(2**63), np.bool_(True), np.complex64(1 - 2j),
              np.float16(np.nan)]:
        got = round_trip(x)
        assert type(got) is type(x) and np.asarray(got).tobytes() == np.asarray(x).tobytes()


@pytest.mark.parametrize("arr", [
    np.arange(12, dtype=np.float64).reshape(3, 4),
    np.array(3.5, dtype=np.float32),                   # 0-d
    np.zeros((0, 3), dtype=np.int64),                  # empty
    np.arange(12, dtype=np.int32).reshape(3, 4).T,     # not C-contiguous
    np.array([True, False]),
    np.array([1 + 2j], dtype=np.complex128),
    np.array(["ab", "c"]),
    np.array([np.nan, np.inf, -np.inf]),
])
def test_arrays_round_trip_exactly_on_the_host(arr):
    got = round_trip(arr)
    assert isinstance(got, wire.Array) and got.device == "cpu"
    assert same_array(got.data, np.array(arr, order="C")) and got.shape == arr.shape
    assert not got.data.flags.writeable


def test_big_endian_arrays_come_back_native_with_the_same_values():
    arr = np.arange(5, dtype=">f8")
    got = round_trip(arr)
    assert got.dtype == np.dtype("float64") and got.dtype.isnative
    np.testing.assert_array_equal(got.data, arr)


def test_device_arrays_are_tagged_gpu_without_importing_cupy():
    host = np.arange(6, dtype=np.float32).reshape(2, 3)
    encoded = wire.encode({"w": FakeDeviceArray(host)})
    assert encoded["w"]["__nd__"]["device"] == "gpu"
    got = wire.decode(encoded)["w"]
    assert got.device == "gpu" and same_array(got.data, host)
    assert wire.encode(got) == encoded["w"]  # a decoded Array re-encodes to the same form


def test_dicts_that_look_like_tags_are_not_mistaken_for_them():
    value = {"__nd__": 1}
    assert round_trip(value) == value
    assert round_trip({"__float__": "nan"}) == {"__float__": "nan"}


@pytest.mark.parametrize("bad, match", [
    (np.array([1, "a"], dtype=object), "dtype object"),
    (np.zeros(2, dtype=[("x", "f4")]), "cannot cross"),
    ({1: "x"}, "keys .* must be str"),
    ({1, 2}, "cannot send a builtins.set"),
    (b"bytes", "cannot send a builtins.bytes"),
    (type("NotCupy", (), {"get": lambda self: np.zeros(2)})(), "cannot send"),
])
def test_encode_refuses_what_is_not_plain_data(bad, match):
    with pytest.raises(GraderError, match=match):
        wire.encode(bad)


def test_encode_refuses_cycles():
    loop = []
    loop.append(loop)
    with pytest.raises(GraderError, match="deeper"):
        wire.encode(loop)


def test_device_array_whose_get_is_not_numpy_is_refused():
    with pytest.raises(GraderError, match="get\\(\\) returned list"):
        wire.encode(FakeDeviceArray([1]))


def _nd(**fields):
    body = {"dtype": "<f8", "shape": [2], "b64": "AAAAAAAA8D8AAAAAAAAAQA==", "device": "cpu"}
    body.update(fields)
    return {"__nd__": body}


def test_decode_accepts_the_reference_form():
    got = wire.decode(_nd())
    np.testing.assert_array_equal(got.data, [1.0, 2.0])


@pytest.mark.parametrize("payload", [
    _nd(b64="not base64!"),
    _nd(shape=[3]),
    _nd(shape=[-2]),
    _nd(shape=[True, 2]),
    _nd(shape="2"),
    _nd(device="tpu"),
    _nd(dtype="no-such-dtype"),
    _nd(dtype="|O"),
    {"__float__": "NaN?"},
    {"__npscalar__": {"dtype": "<f8", "b64": "AAAA"}},
    {"__dict__": [1]},
    {"__nd__": "x"},
])
def test_decode_refuses_malformed_payloads_as_protocol_failures(payload):
    with pytest.raises(WorkerFailure) as info:
        wire.decode({"outer": [payload]})
    assert info.value.reason == "protocol"


def test_decode_refuses_more_array_data_than_its_bound():
    encoded = wire.encode([np.zeros(1000), np.zeros(1000)])
    assert len(wire.decode(encoded, max_bytes=16_000)) == 2
    with pytest.raises(WorkerFailure) as info:
        wire.decode(encoded, max_bytes=12_000)
    assert info.value.reason == "protocol" and "bound" in info.value.message


@settings(max_examples=60, deadline=None)
@given(hnp.arrays(dtype=st.one_of(hnp.scalar_dtypes(), hnp.byte_string_dtypes(), hnp.unicode_string_dtypes()),
                  shape=hnp.array_shapes(min_dims=0, max_dims=3, min_side=0, max_side=4)))
def test_any_plain_array_round_trips_bit_for_bit(arr):
    got = round_trip(arr)
    expected = arr.astype(arr.dtype.newbyteorder("=")) if not arr.dtype.isnative else arr
    assert same_array(got.data, np.array(expected, order="C")) and got.shape == arr.shape
