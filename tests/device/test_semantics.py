"""Semantics of the simulated CUDA device, one test per row of the CuPy semantics table (B1).

Each ``test_rowNN_*`` checks the exception type and key message substrings, or the result's
type, dtype and shape, that real CuPy gives for that row; rows the simulated device does not
reproduce are skipped with the table's reason. Further tests cover installation and shadowing
of a real ``cupy`` package, the two eras, transfer statistics, the ElementwiseKernel contract
and the im2col/col2im emulation, the random streams, and a DeZero-like training loop.
"""

from __future__ import annotations

import os
import pickle
import sys
import textwrap
import threading
import warnings

import numpy as np
import pytest

import dezero_grader.sandboxed.simdevice as sd

IMPLICIT = "Implicit conversion to a NumPy array is not allowed"
UNSUPPORTED_NDARRAY = "Unsupported type <class 'numpy.ndarray'>"
HERE = __file__


def _notes(exc) -> str:
    return "\n".join(getattr(exc, "__notes__", []))


@pytest.fixture
def cp():
    """The simulated `cupy` module, current era; the previous state is restored afterwards.
    With DEZERO_TEST_DEVICE=cuda, real CuPy on the real GPU instead: the rows then show where
    the simulation and the device it stands for differ (run `-k row`; the other tests inspect
    the simulation itself)."""
    if os.environ.get("DEZERO_TEST_DEVICE") == "cuda":
        import cupy
        yield cupy
        return
    with sd.simulated("current") as mod:
        sd.reset_stats()
        sd.clear_findings()
        yield mod
        sd.reset_stats()
        sd.clear_findings()


@pytest.fixture
def book_cp():
    with sd.simulated("book") as mod:
        sd.reset_stats()
        sd.clear_findings()
        yield mod
        sd.clear_findings()


@pytest.fixture
def two_devices(monkeypatch):
    monkeypatch.setenv("DEZERO_SIMDEVICE_NUM_DEVICES", "2")
    with sd.simulated("current") as mod:
        yield mod


# ============================================================================ table B1
def test_row01_implicit_conversion(cp):
    x = cp.arange(6, dtype=np.float32).reshape(2, 3)
    for convert in (np.asarray, np.array, lambda a: np.ones((3, 2)).dot(a),
                    lambda a: np.dot(np.ones((4, 2)), a)):
        with pytest.raises(TypeError) as ei:
            convert(x)
        assert str(ei.value) == (
            "Implicit conversion to a NumPy array is not allowed. "
            "Please use `.get()` to construct a NumPy array explicitly.")
        note = _notes(ei.value)
        assert "shape=(2, 3)" in note and "float32" in note and "<CUDA Device 0>" in note
        assert f"{HERE}:" in note  # where the array was created
    with pytest.raises(TypeError):
        np.nditer(x)


def test_row02_device_plus_host(cp):
    x = cp.ones(3, dtype=np.float32)
    with pytest.raises(TypeError) as ei:
        x + np.ones(3)
    assert str(ei.value) == UNSUPPORTED_NDARRAY
    note = _notes(ei.value)
    assert "numpy.ndarray shape=(3,) dtype=float64" in note
    assert "cupy.ndarray shape=(3,) dtype=float32" in note and f"{HERE}:" in note


def test_row03_host_plus_device(cp):
    x = cp.ones(3)
    with pytest.raises(TypeError, match=r"Unsupported type <class 'numpy\.ndarray'>"):
        np.ones(3) + x


def test_row04_kernels_refuse_host_arrays_and_lists(cp):
    x = cp.ones(3)
    calls = [lambda: cp.add(x, np.ones(3)), lambda: cp.where(x > 0, x, np.zeros(3)),
             lambda: cp.clip(x, np.zeros(3), 1.0), lambda: cp.exp(np.ones(3))]
    for call in calls:
        with pytest.raises(TypeError, match="Unsupported type <class 'numpy.ndarray'>"):
            call()
    with pytest.raises(TypeError, match="Unsupported type <class 'list'>"):
        cp.add(x, [1.0, 2.0, 3.0])


def test_row05_zero_d_host_array_is_not_a_scalar(cp):
    with pytest.raises(TypeError, match="Unsupported type <class 'numpy.ndarray'>"):
        cp.ones(3) + np.array(2.0)


def test_row06_comparisons(cp):
    x = cp.arange(4, dtype=np.float64)
    r = x > np.array(1.5)  # 0-d host operands of comparisons are unwrapped
    assert type(r) is cp.ndarray and r.dtype == np.bool_
    assert r.get().tolist() == [False, False, True, True]
    eq_none, ne_none = x == None, x != None  # noqa: E711
    assert type(eq_none) is cp.ndarray and not eq_none.get().any()
    assert ne_none.get().all()
    assert not (x == object()).get().any()
    with pytest.raises(TypeError, match="Unsupported type <class 'numpy.ndarray'>"):
        x > np.ones(4)


def test_row07_numpy_scalars_are_accepted(cp):
    x = cp.arange(4, dtype=np.float32)
    h = np.arange(4, dtype=np.float32)
    for dev, host in [(x + np.float32(2), h + np.float32(2)),
                      (x * np.sqrt(1 / 4), h * np.sqrt(1 / 4)),
                      (x / np.float32(4), h / np.float32(4)),
                      (np.float32(3) * x, np.float32(3) * h)]:
        assert type(dev) is cp.ndarray and dev.dtype == host.dtype
        np.testing.assert_array_equal(dev.get(), host)


def test_row08_list_operand(cp):
    with pytest.raises(TypeError, match="operand type.*all returned NotImplemented"):
        cp.ones(3) + [1, 2, 3]


def test_row09_higher_priority_operand_gets_reflected_op(cp):
    class Var:
        __array_priority__ = 200

        def __radd__(self, other):
            return ("radd", other)

    x = cp.ones(2)
    res = x + Var()
    assert res[0] == "radd" and res[1] is x


def test_row10_inplace_refuses_host_and_foreign_operands(cp):
    class Var:
        __array_priority__ = 200

    x = cp.ones(3)
    with pytest.raises(TypeError, match="Unsupported type <class 'numpy.ndarray'>"):
        x += np.ones(3)
    with pytest.raises(TypeError, match="Unsupported type .*Var"):
        x += Var()
    before = x
    x -= cp.full(3, 0.5)
    assert x is before
    np.testing.assert_array_equal(x.get(), np.full(3, 0.5))


def test_row11_numpy_ufuncs_dispatch_to_the_device(cp):
    x = cp.linspace(-1, 1, 5)
    for dev, host in [(np.exp(x), np.exp(np.linspace(-1, 1, 5))),
                      (np.maximum(x, 0), np.maximum(np.linspace(-1, 1, 5), 0))]:
        assert type(dev) is cp.ndarray
        np.testing.assert_array_equal(dev.get(), host)


def test_row12_array_function_dispatch(cp):
    x = cp.arange(6, dtype=np.float32).reshape(2, 3)
    s = np.sum(x)
    assert type(s) is cp.ndarray and s.shape == () and float(s) == 15.0
    z = np.zeros_like(x)
    assert type(z) is cp.ndarray and z.shape == (2, 3) and z.dtype == np.float32
    assert np.concatenate([x, x]).shape == (4, 3)
    with pytest.raises(TypeError, match="no implementation found for 'numpy.polyfit'"):
        np.polyfit(x[0], x[1], 1)


def test_row13_concatenate_host_array(cp):
    x = cp.ones((2, 3))
    for call in (lambda: np.concatenate([x, np.ones((2, 3))]),
                 lambda: cp.concatenate([x, np.ones((2, 3))]),
                 lambda: cp.stack([x, np.ones((2, 3))])):
        with pytest.raises(TypeError, match="Only cupy arrays can be concatenated"):
            call()


def test_row14_reductions_return_zero_d_device_arrays(cp):
    x = cp.arange(6, dtype=np.float32).reshape(2, 3)
    for r in (x.sum(), cp.sum(x), x.max(), x.min(), x.argmax(), x.mean(), x.var(),
              cp.mean(x), cp.max(x), np.sum(x)):
        assert type(r) is cp.ndarray and r.shape == ()
    assert x.sum(axis=0).shape == (3,)


def test_row15_isscalar(cp):
    s = cp.ones(3).sum()
    assert not np.isscalar(s)
    assert not cp.isscalar(s)
    assert cp.isscalar(1.0) and cp.isscalar(np.float32(1))


def test_row16_integer_index_is_a_zero_d_view(cp):
    x = cp.zeros((2, 2))
    t = x[0, 0]
    assert type(t) is cp.ndarray and t.shape == ()
    x[0, 0] = 99
    assert float(t) == 99.0  # a view, as in CuPy (NumPy gives a detached scalar)
    copied = x[1, 1].copy()
    x[1, 1] = 5
    assert float(copied) == 0.0


def test_row17_host_scalar_conversions_sync(cp):
    s = cp.arange(4, dtype=np.float64).sum()
    sd.reset_stats()
    assert float(s) == 6.0 and int(s) == 6 and complex(s) == 6 + 0j and bool(s) is True
    assert repr(cp.ones(2)) == repr(np.ones(2)) and str(cp.ones(2)) == str(np.ones(2))
    assert format(s, ".1f") == "6.0"
    st = sd.stats()
    assert st["d2h"] == 7 and st["sync"] == 7
    with pytest.raises(ValueError, match="truth value of an array with more than one element"):
        bool(cp.ones(2))
    with pytest.warns(DeprecationWarning, match="empty array"):
        assert bool(cp.ones(0)) is False


def test_row18_item(cp):
    assert cp.full((1, 1), 2.5).item() == 2.5
    with pytest.raises(ValueError, match="can only convert an array of size 1 to a Python scalar"):
        cp.ones(2).item()


def test_row19_no_implicit_index(cp):
    with pytest.raises(TypeError, match="'ndarray' object cannot be interpreted as an integer"):
        range(cp.array(3))


def test_row20_host_index_arrays_are_copied(cp):
    x = cp.arange(12, dtype=np.float32).reshape(3, 4)
    t = cp.array([1, 0, 3])
    sd.reset_stats()
    picked = x[np.arange(3), t]
    assert type(picked) is cp.ndarray
    np.testing.assert_array_equal(picked.get(), np.array([1, 4, 11], dtype=np.float32))
    assert sd.stats()["h2d"] == 1
    x[[0, 1]]
    assert sd.stats()["h2d"] == 2
    with pytest.raises(IndexError, match="arrays used as indices must be of integer or boolean"):
        x[np.array([0.5])]


def test_row21_basic_assignment_refuses_host_arrays(cp):
    x = cp.zeros((2, 3))
    with pytest.raises(ValueError, match="non-scalar numpy.ndarray cannot be used for fill") as ei:
        x[0] = np.ones(3)
    assert "numpy.ndarray shape=(3,)" in _notes(ei.value)
    with pytest.raises(TypeError, match="Unsupported type <class 'list'>"):
        x[0] = [1.0, 2.0, 3.0]
    x[0] = np.float64(3.0)
    x[1] = np.array(4.0)  # 0-d host arrays fill
    x[:, 0] = cp.full(2, 7.0)
    np.testing.assert_array_equal(x.get(), [[7, 3, 3], [7, 4, 4]])


def test_row22_advanced_assignment_accepts_host_values(cp):
    x = cp.zeros(4)
    sd.reset_stats()
    x[np.array([0, 2])] = np.array([1.0, 2.0])
    np.testing.assert_array_equal(x.get(), [1, 0, 2, 0])
    assert sd.stats()["h2d"] == 2  # the index and the values


def test_row23_typed_routines_name_the_argument(cp):
    x = cp.ones((2, 3))
    with pytest.raises(TypeError, match=r"Argument 'b' has incorrect type \(expected "
                                        r"cupy._core.core._ndarray_base, got numpy.ndarray\)"):
        x.dot(np.ones((3, 2)))
    with pytest.raises(TypeError, match="Argument 'b' has incorrect type"):
        cp.tensordot(x, np.ones((3, 2)), axes=1)
    with pytest.raises(TypeError, match=IMPLICIT):
        cp.dot(np.ones((4, 2)), x)
    r = cp.tensordot(x, cp.ones((3, 2)), axes=1)
    assert type(r) is cp.ndarray and r.shape == (2, 2)


def test_row24_asnumpy_and_get_copy_to_the_host(cp):
    x = cp.arange(3, dtype=np.int32)
    sd.reset_stats()
    h = cp.asnumpy(x)
    g = x.get()
    assert type(h) is np.ndarray and type(g) is np.ndarray and h.dtype == np.int32
    h[0] = 100
    assert int(x[0]) == 0  # a copy, not a view
    assert sd.stats()["d2h"] == 3
    assert type(cp.asnumpy([1, 2])) is np.ndarray


def test_row25_asarray_and_array(cp):
    host = np.arange(3.0)
    sd.reset_stats()
    x = cp.asarray(host)
    host[0] = 50
    assert type(x) is cp.ndarray and float(x[0]) == 0.0
    assert cp.asarray(x) is x
    stacked = cp.array([x, x])  # nested device arrays: concatenated on the device
    assert stacked.shape == (2, 3)
    batch = cp.array([np.ones(2), np.zeros(2)])  # DataLoader.to_gpu pattern
    assert batch.shape == (2, 2)
    assert sd.stats()["h2d"] == 2
    with pytest.raises(TypeError, match=IMPLICIT):
        cp.array([x, np.ones(3)])


def test_row26_get_array_module(cp):
    assert cp.get_array_module(cp.ones(1)) is cp
    assert cp.get_array_module(np.ones(1), cp.ones(1)) is cp
    assert cp.get_array_module(np.ones(1), 1.0) is np
    assert cp.get_array_module() is np


def test_row27_scatter_add_current_era(cp):
    with pytest.raises(AttributeError, match="module 'cupy' has no attribute 'scatter_add'") as e:
        cp.scatter_add  # noqa: B018
    # the error explains the drift in the words of the book era's finding
    assert "removed in CuPy 8" in str(e.value) and "cupyx.scatter_add" in str(e.value)
    with pytest.raises(AttributeError, match="has no attribute 'no_such_routine'$"):
        cp.no_such_routine  # noqa: B018
    import cupyx
    a = cp.zeros(3)
    with pytest.warns(DeprecationWarning, match="Please use `cupy.add.at` instead"):
        cupyx.scatter_add(a, cp.array([0, 0, 2]), 1.0)
    np.testing.assert_array_equal(a.get(), [2, 0, 1])
    cp.add.at(a, np.array([1, 1]), cp.array([0.5, 0.25]))
    np.testing.assert_array_equal(a.get(), [2, 0.75, 1])
    # CuPy keeps `cupyx` as the private `cupy._cupyx` (`import cupyx as _cupyx`); code reaches it so
    assert cp._cupyx is cupyx
    with pytest.warns(DeprecationWarning):
        cp._cupyx.scatter_add(a, cp.array([2]), 1.0)
    np.testing.assert_array_equal(a.get(), [2, 0.75, 2])
    assert sd.findings() == []


def test_row28_elementwise_kernel_contract(cp):
    k = cp.ElementwiseKernel("T x, T y", "T z", "z = x + y", "my_add")  # defining never fails
    with pytest.raises(TypeError, match=r"Wrong number of arguments for 'my_add'. It must be "
                                        r"either 2 or 3 \(with outputs\), but given 1."):
        k(cp.ones(2))
    with pytest.raises(TypeError, match="Unsupported type <class 'numpy.ndarray'>"):
        k(cp.ones(2), np.ones(2))
    with pytest.raises(TypeError, match="Type is mismatched"):
        k(cp.ones(2, dtype=np.float32), cp.ones(2, dtype=np.float64))
    with pytest.raises(sd.NeedsRealGPU, match="needs a real GPU"):
        k(cp.ones(2), cp.ones(2))


def test_row29_devices(two_devices):
    cp = two_devices
    assert cp.cuda.runtime.getDeviceCount() == 2
    x0 = cp.ones(3)
    assert repr(x0.device) == "<CUDA Device 0>" and x0.device.id == 0
    with cp.cuda.Device(1):
        x1 = cp.ones(3)
        assert x1.device.id == 1
        with pytest.raises(ValueError, match=r"The device where the array resides \(0\) is "
                                             r"different from the current device \(1\)\. Peer "
                                             r"access is unavailable between these devices\."):
            x0 + 1
    assert cp.cuda.Device().id == 0
    with pytest.raises(ValueError, match="different from the current device"):
        cp.exp(x1)
    seen = []
    cp.cuda.Device(1).use()
    t = threading.Thread(target=lambda: seen.append(cp.cuda.Device().id))
    t.start()
    t.join()
    assert seen == [0]  # the current device is per thread
    cp.cuda.Device(0).use()
    with pytest.raises(cp.cuda.runtime.CUDARuntimeError,
                       match="cudaErrorInvalidDevice: invalid device ordinal"):
        cp.cuda.Device(2).use()


def test_row30_random(cp):
    r = cp.random.randn()
    assert type(r) is cp.ndarray and r.shape == ()
    a = cp.random.rand(2, 3, dtype=np.float32)
    assert a.dtype == np.float32 and a.shape == (2, 3)
    assert cp.random.randn(4, dtype=np.float32).dtype == np.float32


def test_row31_dtype_promotion_follows_host_numpy(cp):
    host = np.ones(3, dtype=np.float32) + np.float64(3.0)
    dev = cp.ones(3, dtype=np.float32) + np.float64(3.0)
    # NumPy 2 (as CuPy 14): float64; NumPy 1.x (as CuPy <= 13): float32.
    assert dev.dtype == host.dtype
    assert (cp.ones(3, dtype=np.float32) + 3.0).dtype == np.float32


def test_row32_unsupported_dtypes(cp):
    with pytest.raises(ValueError, match="Unsupported dtype object"):
        cp.zeros(2, dtype=object)
    with pytest.raises(ValueError, match="Unsupported dtype <U1"):
        cp.array(["a", "b"])
    with pytest.raises(ValueError, match="Unsupported dtype"):
        cp.ones(2).astype(object)


def test_row33_out_of_bounds_integer_index():
    pytest.skip("not simulated: CuPy wraps out-of-bounds integer-array indices; the simulated "
                "device raises IndexError (stricter)")


def test_row34_duplicate_indices_in_assignment():
    pytest.skip("not simulated: which duplicate wins is undefined in CuPy; the simulated device "
                "follows NumPy (last one)")


def test_row35_no_floating_point_warnings(cp):
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        r = cp.log(cp.zeros(2))
        q = cp.zeros(2) / cp.zeros(2)
    assert np.isneginf(r.get()).all() and np.isnan(q.get()).all()
    with pytest.warns(RuntimeWarning):
        np.log(np.zeros(2))  # the host keeps NumPy's own error state


def test_row36_allclose_returns_zero_d_device_bool(cp):
    for r in (cp.allclose(cp.ones(2), cp.ones(2)), cp.array_equal(cp.ones(2), cp.zeros(2))):
        assert type(r) is cp.ndarray and r.shape == () and r.dtype == np.bool_
    assert bool(cp.allclose(cp.ones(2), cp.ones(2)))


def test_row37_import_and_availability(cp):
    import cupy
    import cupy.cuda
    from cupy import random

    assert cupy is cp and cupy.cuda.is_available() is True and cp.is_available() is True
    assert random is cp.random
    assert cupy.__simulated__ is True


# ============================================================================ installation
def _drop_cupy_modules():
    for k in [k for k in sys.modules if k.partition(".")[0] in ("cupy", "cupyx")]:
        del sys.modules[k]


@pytest.fixture
def fake_real_cupy(tmp_path, monkeypatch):
    """A package named `cupy` on sys.path, standing for a real CuPy on a GPU-less machine."""
    pkg = tmp_path / "cupy"
    (pkg / "cuda").mkdir(parents=True)
    (pkg / "__init__.py").write_text("FAKE_REAL_CUPY = True\n")
    (pkg / "cuda" / "__init__.py").write_text("FAKE_REAL_CUDA = True\n")
    (pkg / "testing.py").write_text("FAKE_TESTING = True\n")
    with sd.simulated():  # restores the session's installation afterwards
        sd.uninstall()
        _drop_cupy_modules()
        monkeypatch.syspath_prepend(str(tmp_path))
        yield
        sd.uninstall()
        _drop_cupy_modules()


def test_install_shadows_an_installed_cupy(fake_real_cupy):
    import cupy as real
    assert getattr(real, "FAKE_REAL_CUPY", False)
    mod = sd.install()
    assert sd.installed()
    import cupy
    import cupy.cuda
    assert cupy is mod and not hasattr(cupy, "FAKE_REAL_CUPY")
    assert not hasattr(cupy.cuda, "FAKE_REAL_CUDA")
    with pytest.raises(ModuleNotFoundError):
        import cupy.testing  # noqa: F401  (the real package's files are never reached)
    assert sd.install() is mod and sys.meta_path.count(sys.meta_path[0]) == 1  # idempotent
    sd.uninstall()
    assert not sd.installed() and "cupy" not in sys.modules
    import cupy as again
    assert getattr(again, "FAKE_REAL_CUPY", False)


def test_simulated_block_restores_the_previous_state():
    before = sd.installed()
    with sd.simulated("book") as mod:
        assert sd.installed() and hasattr(mod, "scatter_add")
        sd.uninstall()
    assert sd.installed() == before and not hasattr(mod, "scatter_add")
    if before:
        import cupy
        assert cupy is mod


def test_book_era_scatter_add_is_a_finding(book_cp):
    cp = book_cp
    assert cp.__version__.startswith("7.")
    a = cp.zeros(3)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        cp.scatter_add(a, np.array([0, 0, 1]), cp.ones(3))
        cp.scatter_add(a, cp.array([2]), 1.0)
    np.testing.assert_array_equal(a.get(), [2, 1, 1])
    found = sd.findings()
    assert len(found) == 2 and all(f["api"] == "cupy.scatter_add" for f in found)
    assert "gone from CuPy" in found[0]["message"] and found[0]["since"] == "removed in CuPy 8"
    assert "cupyx.scatter_add" in found[0]["fix"] and "add.at" in found[0]["fix"]
    assert found[0]["where"].startswith(f"{HERE}:")
    sd.clear_findings()
    assert sd.findings() == []


def test_switching_era_adds_and_removes_scatter_add():
    with sd.simulated("book") as mod:
        assert hasattr(mod, "scatter_add") and mod.__version__.startswith("7.")
        assert sd.install("current") is mod and not hasattr(mod, "scatter_add")
        with pytest.raises(ValueError, match="unknown simulated-device era"):
            sd.install("future")


def test_stats_count_transfers_and_syncs(cp):
    x = cp.asarray(np.ones(3))
    y = x * 2 + 1
    assert sd.stats() == {"h2d": 1, "d2h": 0, "sync": 0}
    y.get()
    cp.cuda.Device().synchronize()
    cp.cuda.Stream.null.synchronize()
    assert sd.stats() == {"h2d": 1, "d2h": 1, "sync": 3}
    sd.reset_stats()
    assert sd.stats() == {"h2d": 0, "d2h": 0, "sync": 0}


def test_errors_name_the_operation_the_arrays_and_their_origin(cp):
    x = cp.ones((2, 3), dtype=np.float32)
    line = sys._getframe().f_lineno - 1
    for call, op in [(lambda: x + cp.ones(4), "`+` (cupy.add)"),
                     (lambda: x.reshape(7), "x.reshape(7,)"),
                     (lambda: x[5], "x[index]"),
                     (lambda: cp.zeros_like(x, order="Q"), "cupy.zeros_like")]:
        with pytest.raises((ValueError, IndexError)) as ei:
            call()
        note = _notes(ei.value)
        assert op in note, note
        assert f"cupy.ndarray shape=(2, 3) dtype=float32 on <CUDA Device 0>, created at " \
               f"{HERE}:{line}" in note


def test_pickle_and_copy_round_trip(cp):
    import copy
    x = cp.arange(4.0)
    y = pickle.loads(pickle.dumps(x))
    assert type(y) is cp.ndarray
    np.testing.assert_array_equal(y.get(), x.get())
    z = copy.deepcopy(x)
    z[0] = 9
    assert float(x[0]) == 0.0


# ============================================================================ kernels
IM2COL_OP = textwrap.dedent("""
    int per = kh * kw * out_h * out_w;
    int c0 = i / per;
    int rest = i % per;
    int ky = rest / (kw * out_h * out_w);
    int kx = rest / (out_h * out_w) % kw;
    int oy = rest / out_w % out_h;
    int ox = rest % out_w;
    int iy = ky * dy + oy * sy - ph;
    int ix = kx * dx + ox * sx - pw;
    col = (0 <= iy && iy < h && 0 <= ix && ix < w) ? img[(c0 * h + iy) * w + ix] : (T)0;
""")
COL2IM_OP = textwrap.dedent("""
    int c0 = i / (h * w);
    int y = i / w % h;
    int x = i % w;
    T acc = 0;
    for (int ky = 0; ky < kh; ++ky) {
      for (int kx = 0; kx < kw; ++kx) {
        int ty = y + ph - ky * dy;
        int tx = x + pw - kx * dx;
        if (ty >= 0 && tx >= 0 && ty % sy == 0 && tx % sx == 0) {
          int oy = ty / sy;
          int ox = tx / sx;
          if (oy < out_h && ox < out_w)
            acc += col[(((c0 * kh + ky) * kw + kx) * out_h + oy) * out_w + ox];
        }
      }
    }
    img = acc;
""")
IM2COL_IN = ("raw T img, int32 h, int32 w, int32 out_h, int32 out_w, int32 kh, int32 kw, "
             "int32 sy, int32 sx, int32 ph, int32 pw, int32 dy, int32 dx")
COL2IM_IN = ("raw T col, int32 h, int32 w, int32 out_h, int32 out_w, int32 kh, int32 kw, "
             "int32 sy, int32 sx, int32 ph, int32 pw, int32 dx, int32 dy")


def _outsize(size, k, s, p, d=1):
    return (size + 2 * p - (k - 1) * d - 1) // s + 1


def _naive_im2col(img, kh, kw, sy, sx, ph, pw, dy, dx):
    n, c, h, w = img.shape
    oh, ow = _outsize(h, kh, sy, ph, dy), _outsize(w, kw, sx, pw, dx)
    col = np.zeros((n, c, kh, kw, oh, ow), dtype=img.dtype)
    for ky in range(kh):
        for kx in range(kw):
            for oy in range(oh):
                for ox in range(ow):
                    iy, ix = oy * sy - ph + ky * dy, ox * sx - pw + kx * dx
                    if 0 <= iy < h and 0 <= ix < w:
                        col[:, :, ky, kx, oy, ox] = img[:, :, iy, ix]
    return col


def _naive_col2im(col, h, w, sy, sx, ph, pw, dy, dx):
    n, c, kh, kw, oh, ow = col.shape
    img = np.zeros((n, c, h, w), dtype=col.dtype)
    for ky in range(kh):  # every pixel sums its contributions in ascending (ky, kx) order
        for kx in range(kw):
            for oy in range(oh):
                for ox in range(ow):
                    iy, ix = oy * sy - ph + ky * dy, ox * sx - pw + kx * dx
                    if 0 <= iy < h and 0 <= ix < w:
                        img[:, :, iy, ix] += col[:, :, ky, kx, oy, ox]
    return img


CONV_CASES = [  # (h, w, kh, kw, sy, sx, ph, pw, dy, dx)
    (5, 6, 3, 3, 1, 1, 1, 1, 1, 1),
    (7, 5, 3, 2, 2, 1, 1, 0, 1, 1),
    (6, 6, 2, 3, 1, 2, 0, 2, 2, 1),
]


@pytest.mark.parametrize("case", CONV_CASES, ids=lambda c: "h{}w{}k{}{}s{}{}p{}{}d{}{}".format(*c))
def test_im2col_col2im_emulation_matches_a_plain_loop(cp, case):
    h, w, kh, kw, sy, sx, ph, pw, dy, dx = case
    rng = np.random.default_rng(7)
    img_h = rng.standard_normal((2, 3, h, w)).astype(np.float32)
    oh, ow = _outsize(h, kh, sy, ph, dy), _outsize(w, kw, sx, pw, dx)
    im2col = cp.ElementwiseKernel(IM2COL_IN, "T col", IM2COL_OP, "im2col")
    col2im = cp.ElementwiseKernel(COL2IM_IN, "T img", COL2IM_OP, "col2im")

    img = cp.asarray(img_h)
    col = cp.empty((2, 3, kh, kw, oh, ow), dtype=img.dtype)
    out = im2col(img.reduced_view(), h, w, oh, ow, kh, kw, sy, sx, ph, pw, dy, dx, col)
    assert out is col
    np.testing.assert_array_equal(col.get(), _naive_im2col(img_h, kh, kw, sy, sx, ph, pw, dy, dx))

    col_h = rng.standard_normal(col.shape).astype(np.float32)
    back = cp.empty((2, 3, h, w), dtype=np.float32)
    col2im(cp.asarray(col_h).reduced_view(), h, w, oh, ow, kh, kw, sy, sx, ph, pw, dx, dy, back)
    np.testing.assert_array_equal(back.get(),
                                  _naive_col2im(col_h, h, w, sy, sx, ph, pw, dy, dx))


def test_emulated_kernel_contract_errors(cp):
    # Whitespace in the signature does not matter.
    im2col = cp.ElementwiseKernel(IM2COL_IN.replace(", ", ",\n   "), "T  col", IM2COL_OP,
                                  "im2col")
    img = cp.ones((1, 1, 4, 4), dtype=np.float32)
    col = cp.empty((1, 1, 3, 3, 2, 2), dtype=np.float32)
    args = (4, 4, 2, 2, 3, 3, 1, 1, 0, 0, 1, 1)
    im2col(img.reduced_view(), *args, col)
    assert float(col.sum()) == 36.0
    with pytest.raises(TypeError, match=r"Wrong number of arguments for 'im2col'. It must be "
                                        r"either 13 or 14 \(with outputs\), but given 12."):
        im2col(img, *args[:-1])
    with pytest.raises(TypeError, match="Unsupported type <class 'numpy.ndarray'>"):
        im2col(img.get(), *args, col)
    with pytest.raises(TypeError, match="Unsupported type <class 'numpy.ndarray'>"):
        im2col(img, *args, col.get())
    with pytest.raises(TypeError, match="Type is mismatched"):
        im2col(img, *args, cp.empty(col.shape, dtype=np.float64))
    with pytest.raises(ValueError, match="Loop size is undecided"):
        im2col(img, *args)
    with pytest.raises(ValueError, match="out of bounds"):
        im2col(cp.ones(5, dtype=np.float32), *args, col)


def test_unknown_or_edited_kernels_need_a_real_gpu(cp):
    edited = cp.ElementwiseKernel(IM2COL_IN, "T col", "col = 0;", "im2col")
    col = cp.empty((1, 1, 1, 1, 1, 1), dtype=np.float32)
    with pytest.raises(sd.NeedsRealGPU, match="body differs") as ei:
        edited(cp.ones(1, dtype=np.float32), 1, 1, 1, 1, 1, 1, 1, 1, 0, 0, 1, 1, col)
    assert isinstance(ei.value, NotImplementedError)
    raw = cp.RawKernel("extern \"C\" __global__ void f(float* x) {}", "f")
    with pytest.raises(sd.NeedsRealGPU, match="needs a real GPU"):
        raw((1,), (1,), (cp.ones(1, dtype=np.float32),))
    with pytest.raises(TypeError, match="Unsupported type <class 'numpy.ndarray'>"):
        raw((1,), (1,), (np.ones(1),))


# ============================================================================ random
def test_random_streams_are_reproducible_and_not_numpys(cp):
    cp.random.seed(0)
    a = cp.random.rand(5)
    cp.random.seed(0)
    b = cp.random.rand(5)
    np.testing.assert_array_equal(a.get(), b.get())
    np.random.seed(0)
    assert not np.array_equal(a.get(), np.random.rand(5))
    assert not np.array_equal(a.get(), np.random.default_rng(0).random(5))
    rs = cp.random.RandomState(3)
    assert not np.array_equal(rs.randn(4).get(), np.random.RandomState(3).randn(4))
    ints = cp.random.randint(0, 10, size=100)
    assert type(ints) is cp.ndarray and 0 <= int(ints.min()) and int(ints.max()) < 10
    perm = cp.random.permutation(10)
    assert sorted(perm.get().tolist()) == list(range(10))
    x = cp.arange(6)
    cp.random.shuffle(x)
    assert sorted(x.get().tolist()) == list(range(6))
    with pytest.raises(TypeError, match="The array must be cupy.ndarray"):
        cp.random.shuffle(np.arange(3))
    with pytest.raises(TypeError, match="float32 and float64"):
        cp.random.rand(2, dtype=np.int32)
    u = cp.random.uniform(-1, 1, size=(3,), dtype=np.float32)
    assert u.dtype == np.float32 and bool((u >= -1).all()) and bool((u < 1).all())


# ============================================================================ training loop
def _train(cp, on_device, x_h, t_h, leak_weights_on_host=False):
    """Softmax regression by hand, DeZero-style: `xp` is chosen from the data."""
    x = cp.asarray(x_h) if on_device else x_h
    t = cp.asarray(t_h) if on_device else t_h
    xp = cp.get_array_module(x)
    W_h = (np.random.RandomState(0).randn(4, 3) * 0.1).astype(np.float32)
    W = cp.asarray(W_h) if on_device and not leak_weights_on_host else W_h
    b = xp.zeros(3, dtype=np.float32)
    lr, n = 0.5, len(t_h)
    losses = []
    for _ in range(5):
        y = x.dot(W) + b
        y = y - y.max(axis=1, keepdims=True)
        p = xp.exp(y)
        p /= p.sum(axis=1, keepdims=True)
        loss = -xp.log(p[np.arange(n), t]).sum() / np.float32(n)
        losses.append(float(loss))
        gy = p.copy()
        gy[np.arange(n), t] -= 1
        gy /= n
        W -= lr * x.T.dot(gy)
        b -= lr * gy.sum(axis=0)
    return losses


def test_dezero_like_training_loop_matches_the_host(cp):
    rng = np.random.RandomState(1)
    x_h = rng.randn(8, 4).astype(np.float32)
    t_h = rng.randint(0, 3, size=8)
    host = _train(cp, False, x_h, t_h)
    sd.reset_stats()
    dev = _train(cp, True, x_h, t_h)
    assert dev == host  # bit-identical: the device is NumPy underneath
    st = sd.stats()
    assert st["d2h"] == 5  # only float(loss)
    # x, t, W, then per step the host index np.arange(n) of `p[...]` and of `gy[...] -= 1`
    # (read and write: two copies, as in CuPy).
    assert st["h2d"] == 3 + 3 * 5


def test_training_loop_with_weights_left_on_the_host_fails(cp):
    rng = np.random.RandomState(1)
    x_h = rng.randn(8, 4).astype(np.float32)
    t_h = rng.randint(0, 3, size=8)
    with pytest.raises(TypeError, match="Argument 'b' has incorrect type") as ei:
        _train(cp, True, x_h, t_h, leak_weights_on_host=True)
    assert "numpy.ndarray shape=(4, 3) dtype=float32" in _notes(ei.value)
