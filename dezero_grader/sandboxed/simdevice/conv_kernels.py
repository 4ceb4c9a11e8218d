"""Host emulations of the two ElementwiseKernels of the book's convolution code.

DeZero's ``functions_conv.py`` (after Chainer) defines ``im2col`` and ``col2im`` as CuPy
``ElementwiseKernel``s. They are emulated here from their documented semantics, keyed by the
kernel signature (``kernels.register_emulation``); the bodies are never executed.

* ``im2col``: for every element of ``col`` (logical shape ``(N, C, KH, KW, OH, OW)``), the
  pixel ``img[n, c, oy*sy - ph + ky*dy, ox*sx - pw + kx*dx]`` of the raw image
  ``(N, C, H, W)``, or 0 outside it.
* ``col2im``: for every pixel of ``img``, the sum of the ``col`` entries that ``im2col`` read
  from it. Contributions are added in ascending ``(ky, kx)`` order starting from zero, the order
  of the host implementation, so host and simulated device agree bit for bit (a real GPU sums in
  another order and may differ in the last bits).

Raw parameters are indexed in logical C order, as CuPy's ``CArray::operator[]`` does. A call
whose sizes would make the kernel read past the end of a raw array (undefined behaviour on a
GPU) raises ``ValueError``.
"""

from __future__ import annotations

import numpy

from .kernels import register_emulation

_SCALARS = ("h", "w", "out_h", "out_w", "kh", "kw", "sy", "sx", "ph", "pw", "dy", "dx")

IM2COL_IN = ("raw T img, int32 h, int32 w, int32 out_h, int32 out_w, int32 kh, int32 kw, "
             "int32 sy, int32 sx, int32 ph, int32 pw, int32 dy, int32 dx")
IM2COL_OUT = "T col"
COL2IM_IN = ("raw T col, int32 h, int32 w, int32 out_h, int32 out_w, int32 kh, int32 kw, "
             "int32 sy, int32 sx, int32 ph, int32 pw, int32 dx, int32 dy")
COL2IM_OUT = "T img"


def _scalars(args):
    return tuple(int(args[k]) for k in _SCALARS)


def _raw_prefix(a, need: int, kernel: str, param: str):
    flat = a.reshape(-1)  # logical C order (copies a non-contiguous view)
    if need > flat.size:
        raise ValueError(
            f"{kernel}: the sizes passed would make the kernel read {need} elements of the raw "
            f"parameter '{param}', which has {flat.size} (shape {a.shape}); on a GPU this reads "
            f"out of bounds")
    return flat[:need]


def _padded_extent(n: int, pad: int, k: int, dil: int, stride: int, out: int) -> int:
    return max(pad + n, (k - 1) * dil + stride * (out - 1) + 1)


def _im2col(args, outs):
    h, w, oh, ow, kh, kw, sy, sx, ph, pw, dy, dx = _scalars(args)
    col = outs["col"]
    per = kh * kw * oh * ow
    n_c = -(-col.size // per)
    src = _raw_prefix(args["img"], n_c * h * w, "im2col", "img").reshape(n_c, h, w)
    hp = _padded_extent(h, ph, kh, dy, sy, oh)
    wp = _padded_extent(w, pw, kw, dx, sx, ow)
    padded = numpy.zeros((n_c, hp, wp), dtype=col.dtype)
    padded[:, ph:ph + h, pw:pw + w] = src
    res = numpy.empty((n_c, kh, kw, oh, ow), dtype=col.dtype)
    for ky in range(kh):
        y0 = ky * dy
        for kx in range(kw):
            x0 = kx * dx
            res[:, ky, kx] = padded[:, y0:y0 + sy * (oh - 1) + 1:sy, x0:x0 + sx * (ow - 1) + 1:sx]
    col[...] = res.reshape(-1)[:col.size].reshape(col.shape)


def _col2im(args, outs):
    h, w, oh, ow, kh, kw, sy, sx, ph, pw, dy, dx = _scalars(args)
    img = outs["img"]
    n_c = -(-img.size // (h * w))
    per = kh * kw * oh * ow
    col = _raw_prefix(args["col"], n_c * per, "col2im", "col").reshape(n_c, kh, kw, oh, ow)
    hp = _padded_extent(h, ph, kh, dy, sy, oh)
    wp = _padded_extent(w, pw, kw, dx, sx, ow)
    acc = numpy.zeros((n_c, hp, wp), dtype=img.dtype)
    for ky in range(kh):
        y0 = ky * dy
        for kx in range(kw):
            x0 = kx * dx
            acc[:, y0:y0 + sy * (oh - 1) + 1:sy, x0:x0 + sx * (ow - 1) + 1:sx] += col[:, ky, kx]
    res = acc[:, ph:ph + h, pw:pw + w]
    img[...] = res.reshape(-1)[:img.size].reshape(img.shape)


IM2COL_FINGERPRINT = register_emulation(IM2COL_IN, IM2COL_OUT, "im2col", _im2col,
                                        label="im2col (DeZero/Chainer)")
COL2IM_FINGERPRINT = register_emulation(COL2IM_IN, COL2IM_OUT, "col2im", _col2im,
                                        label="col2im (DeZero/Chainer)")
