"""Convolution and pooling (step 57): im2col/col2im, conv2d, deconv2d, max and average pooling.

`dezero.functions` re-exports the public names, so models call them as `F.conv2d` and so on.
Every forward works on raw arrays with the module of its input (`xp`): one code path for NumPy
and for a CuPy-like device module, no device kernels (the one host-only shortcut, in im2col,
builds the same array). Every backward is written with Variables and Functions, so gradients of
gradients work (through the weight gradient too).

Speed: no Python loop runs over output positions, only over the KH*KW kernel offsets, each step
a whole-array operation on a strided slice of the zero-padded image. conv2d and its gradients are
matrix products on contiguous operands: the forward and the input gradient multiply by the
weight matrix batch-wise on the (N, C*KH*KW, OH*OW) view of the 6-D column array (which lands
directly in NCHW); the weight gradient is one GEMM over the whole batch. On NumPy, im2col is a
single copy of a strided view holding every window; device modules fill it offset by offset.
"""
import numpy as np

from dezero import cuda
from dezero.core import Function, as_variable
from dezero.functions import linear, broadcast_to
from dezero.utils import pair, get_conv_outsize, get_deconv_outsize


# =============================================================================
# [simple version] conv2d_simple / pooling_simple (composed from differentiable functions)
# =============================================================================
def conv2d_simple(x, W, b=None, stride=1, pad=0):
    x, W = as_variable(x), as_variable(W)

    Weight = W
    N, C, H, W = x.shape
    OC, C, KH, KW = Weight.shape
    SH, SW = pair(stride)
    PH, PW = pair(pad)
    OH = get_conv_outsize(H, KH, SH, PH)
    OW = get_conv_outsize(W, KW, SW, PW)

    col = im2col(x, (KH, KW), stride, pad, to_matrix=True)  # (N*OH*OW, C*KH*KW)
    Weight = Weight.reshape(OC, -1).transpose()
    t = linear(col, Weight, b)
    y = t.reshape(N, OH, OW, OC).transpose(0, 3, 1, 2)
    return y


def pooling_simple(x, kernel_size, stride=1, pad=0):
    x = as_variable(x)

    N, C, H, W = x.shape
    KH, KW = pair(kernel_size)
    PH, PW = pair(pad)
    SH, SW = pair(stride)
    OH = get_conv_outsize(H, KH, SH, PH)
    OW = get_conv_outsize(W, KW, SW, PW)

    col = im2col(x, kernel_size, stride, pad, to_matrix=True)
    col = col.reshape(-1, KH * KW)
    y = col.max(axis=1)
    y = y.reshape(N, OH, OW, C).transpose(0, 3, 1, 2)
    return y


# =============================================================================
# conv2d / deconv2d
# =============================================================================
class Conv2d(Function):
    def __init__(self, stride=1, pad=0):
        self.stride = pair(stride)
        self.pad = pair(pad)

    def forward(self, x, W, b):
        xp = cuda.get_array_module(x)
        OC, C, KH, KW = W.shape
        col = im2col_array(x, (KH, KW), self.stride, self.pad, to_matrix=False)
        N, _, _, _, OH, OW = col.shape
        # (OC, C*KH*KW) @ (N, C*KH*KW, OH*OW) -> (N, OC, OH*OW): already NCHW, no transpose
        y = xp.matmul(W.reshape(OC, -1), col.reshape(N, C * KH * KW, OH * OW))
        if b is not None:
            y += b.reshape(1, OC, 1)
        return y.reshape(N, OC, OH, OW)

    def backward(self, gy):
        x, W, b = self.inputs
        # ==== gx ====
        gx = deconv2d(gy, W, b=None, stride=self.stride, pad=self.pad,
                      outsize=(x.shape[2], x.shape[3]))
        # ==== gW ====
        gW = Conv2DGradW(self)(x, gy)
        # ==== gb ====
        gb = None
        if b.data is not None:
            gb = gy.sum(axis=(0, 2, 3))
        return gx, gW, gb


def conv2d(x, W, b=None, stride=1, pad=0):
    """x (N, C, H, W), W (OC, C, KH, KW), b (OC,) or None -> (N, OC, OH, OW)."""
    return Conv2d(stride, pad)(x, W, b)


class Deconv2d(Function):
    def __init__(self, stride=1, pad=0, outsize=None):
        self.stride = pair(stride)
        self.pad = pair(pad)
        self.outsize = None if outsize is None else pair(outsize)

    def forward(self, x, W, b):
        xp = cuda.get_array_module(x)
        Weight = W
        SH, SW = self.stride
        PH, PW = self.pad
        C, OC, KH, KW = Weight.shape
        N, C, H, W = x.shape
        if self.outsize is None:
            out_h = get_deconv_outsize(H, KH, SH, PH)
            out_w = get_deconv_outsize(W, KW, SW, PW)
        else:
            out_h, out_w = self.outsize
            # the convolution this one transposes must map (out_h, out_w) back to (H, W)
            if (get_conv_outsize(out_h, KH, SH, PH), get_conv_outsize(out_w, KW, SW, PW)) != (H, W):
                raise ValueError(
                    'deconv2d: outsize {} cannot come from an input of size {} with kernel {}, '
                    'stride {}, pad {} (the default would be {})'.format(
                        (out_h, out_w), (H, W), (KH, KW), self.stride, self.pad,
                        (get_deconv_outsize(H, KH, SH, PH), get_deconv_outsize(W, KW, SW, PW))))
        img_shape = (N, OC, out_h, out_w)

        # (OC*KH*KW, C) @ (N, C, H*W) -> the 6-D column array (N, OC, KH, KW, H, W); the
        # transposed weight is a view that BLAS reads as transposed
        gcol = xp.matmul(Weight.reshape(C, -1).T, x.reshape(N, C, H * W))
        gcol = gcol.reshape(N, OC, KH, KW, H, W)
        y = col2im_array(gcol, img_shape, (KH, KW), self.stride, self.pad, to_matrix=False)
        if b is not None:
            y += b.reshape(1, OC, 1, 1)
        return y

    def backward(self, gy):
        x, W, b = self.inputs
        # ==== gx ====
        gx = conv2d(gy, W, b=None, stride=self.stride, pad=self.pad)
        # ==== gW ====
        gW = Conv2DGradW(self)(gy, x)
        # ==== gb ====
        gb = None
        if b.data is not None:
            gb = gy.sum(axis=(0, 2, 3))
        return gx, gW, gb


def deconv2d(x, W, b=None, stride=1, pad=0, outsize=None):
    """Transposed convolution (the adjoint of conv2d in x): x (N, C, H, W), W (C, OC, KH, KW)
    -> (N, OC, OH, OW) with OH = stride*(H-1) + KH - 2*pad unless `outsize` says otherwise."""
    return Deconv2d(stride, pad, outsize)(x, W, b)


class Conv2DGradW(Function):
    """Weight gradient of a convolution, from the inputs (x, gy) of the convolution `conv2d`
    (a Conv2d, or a Deconv2d whose roles of x and gy are swapped)."""

    def __init__(self, conv2d):
        W = conv2d.inputs[1]
        kh, kw = W.shape[2:]
        self.kernel_size = (kh, kw)
        self.stride = conv2d.stride
        self.pad = conv2d.pad

    def forward(self, x, gy):
        xp = cuda.get_array_module(x)
        # One GEMM over the whole batch: columns laid out kernel-major, (C*KH*KW, N*OH*OW), times
        # gy laid out (N*OH*OW, OC). Batch-wise products summed afterwards are much slower.
        col = _columns(x, self.kernel_size, self.stride, self.pad, axes=(1, 2, 3, 0, 4, 5))
        C, KH, KW, N, OH, OW = col.shape
        OC = gy.shape[1]
        col = col.reshape(C * KH * KW, N * OH * OW)
        gy_t = gy.transpose(0, 2, 3, 1).copy().reshape(N * OH * OW, OC)
        gW = xp.dot(col, gy_t)  # (C*KH*KW, OC)
        return gW.T.reshape(OC, C, KH, KW)

    def backward(self, gys):
        x, gy = self.inputs
        # gW is bilinear in (x, gy): each input's gradient is the other one convolved with the
        # incoming gradient gys, which has the shape of a weight
        xh, xw = x.shape[2:]
        gx = deconv2d(gy, gys, b=None, stride=self.stride, pad=self.pad, outsize=(xh, xw))
        ggy = conv2d(x, gys, b=None, stride=self.stride, pad=self.pad)
        return gx, ggy


# =============================================================================
# max pooling / average pooling
# =============================================================================
class Pooling(Function):
    def __init__(self, kernel_size, stride=1, pad=0):
        self.kernel_size = kernel_size
        self.stride = stride
        self.pad = pad

    def forward(self, x):
        xp = cuda.get_array_module(x)
        KH, KW = pair(self.kernel_size)
        views = _offset_views(x, self.kernel_size, self.stride, self.pad)

        # Running max over the kernel offsets, in offset order k = kh*KW + kw. A strict `>` marks
        # a new max, so ties keep the first one; k is larger than every index recorded so far,
        # so a max with (new_max * k) records it without a (slow, branchy) masked assignment.
        _, y = next(views)
        y = y.copy()
        indexes = xp.zeros(y.shape, dtype=_index_dtype(KH * KW))
        for k, view in views:
            new_max = view > y
            xp.maximum(y, view, out=y)
            xp.maximum(indexes, new_max * indexes.dtype.type(k), out=indexes)
        self.indexes = indexes
        return y

    def backward(self, gy):
        return Pooling2DGrad(self)(gy)


class Pooling2DGrad(Function):
    """Sends each window's gradient to the position of its max (recorded by `Pooling`)."""

    def __init__(self, mpool2d):
        self.mpool2d = mpool2d
        self.kernel_size = mpool2d.kernel_size
        self.stride = mpool2d.stride
        self.pad = mpool2d.pad
        self.input_shape = mpool2d.inputs[0].shape
        self.dtype = mpool2d.inputs[0].dtype
        self.indexes = mpool2d.indexes

    def forward(self, gy):
        xp = cuda.get_array_module(gy)
        N, C, OH, OW = gy.shape
        KH, KW = pair(self.kernel_size)
        offsets = xp.arange(KH * KW, dtype=self.indexes.dtype).reshape(1, 1, KH * KW, 1, 1)
        # one-hot over the kernel offsets times gy: (N, C, KH*KW, OH, OW)
        gcol = (self.indexes[:, :, None] == offsets) * gy[:, :, None]
        gcol = gcol.astype(self.dtype, copy=False).reshape(N, C, KH, KW, OH, OW)
        return col2im_array(gcol, (N, C) + tuple(self.input_shape[2:]), self.kernel_size,
                            self.stride, self.pad, to_matrix=False)

    def backward(self, ggx):
        return Pooling2DWithIndexes(self.mpool2d)(ggx)


class Pooling2DWithIndexes(Function):
    """Takes, in each window, the element at the position where `Pooling` found the max."""

    def __init__(self, mpool2d):
        self.mpool2d = mpool2d
        self.kernel_size = mpool2d.kernel_size
        self.stride = mpool2d.stride
        self.pad = mpool2d.pad
        self.input_shape = mpool2d.inputs[0].shape
        self.dtype = mpool2d.inputs[0].dtype
        self.indexes = mpool2d.indexes

    def forward(self, x):
        xp = cuda.get_array_module(x)
        views = _offset_views(x, self.kernel_size, self.stride, self.pad)
        _, y = next(views)
        y = y.copy()
        for k, view in views:
            y = xp.where(self.indexes == k, view, y)
        return y

    def backward(self, gy):
        return Pooling2DGrad(self.mpool2d)(gy)


def pooling(x, kernel_size, stride=1, pad=0):
    """Max pooling of x (N, C, H, W) over KH x KW windows; padding zeros take part in the max."""
    return Pooling(kernel_size, stride, pad)(x)


class AveragePooling(Function):
    def __init__(self, kernel_size, stride=1, pad=0):
        self.kernel_size = kernel_size
        self.stride = stride
        self.pad = pad
        self.input_shape = None

    def forward(self, x):
        self.input_shape = x.shape
        KH, KW = pair(self.kernel_size)
        views = _offset_views(x, self.kernel_size, self.stride, self.pad)
        _, y = next(views)
        y = y.copy()
        for _, view in views:
            y += view
        y /= KH * KW
        return y

    def backward(self, gy):
        xp = cuda.get_array_module(gy)
        N, C, OH, OW = gy.shape
        KH, KW = pair(self.kernel_size)
        # The scale is an array of gy's dtype and device: a Python number would become a
        # float64 array and promote a float32 gradient under NumPy 2.
        gy = gy * xp.array(1.0 / (KH * KW), dtype=gy.dtype)
        # Every element of a window gets gy / (KH*KW): broadcast over the kernel axes (a view,
        # nothing is materialised) and let col2im sum the overlapping windows.
        gcol = broadcast_to(gy.reshape(N, C, 1, 1, OH, OW), (N, C, KH, KW, OH, OW))
        gx = col2im(gcol, self.input_shape, self.kernel_size, self.stride, self.pad,
                    to_matrix=False)
        return gx


def average_pooling(x, kernel_size, stride=1, pad=0):
    """Mean over KH x KW windows of x (N, C, H, W); padding zeros count in the mean."""
    return AveragePooling(kernel_size, stride, pad)(x)


# =============================================================================
# im2col / col2im (differentiable: each is the other's backward)
# =============================================================================
class Im2col(Function):
    def __init__(self, kernel_size, stride, pad, to_matrix):
        self.input_shape = None
        self.kernel_size = kernel_size
        self.stride = stride
        self.pad = pad
        self.to_matrix = to_matrix

    def forward(self, x):
        self.input_shape = x.shape
        y = im2col_array(x, self.kernel_size, self.stride, self.pad, self.to_matrix)
        return y

    def backward(self, gy):
        gx = col2im(gy, self.input_shape, self.kernel_size, self.stride, self.pad,
                    self.to_matrix)
        return gx


def im2col(x, kernel_size, stride=1, pad=0, to_matrix=True):
    """Patches of a convolution. x (N, C, H, W) -> (N, C, KH, KW, OH, OW), or with `to_matrix`
    the matrix (N*OH*OW, C*KH*KW): rows run over n, oh, ow and columns over c, kh, kw."""
    y = Im2col(kernel_size, stride, pad, to_matrix)(x)
    return y


class Col2im(Function):
    def __init__(self, input_shape, kernel_size, stride, pad, to_matrix):
        self.input_shape = input_shape
        self.kernel_size = kernel_size
        self.stride = stride
        self.pad = pad
        self.to_matrix = to_matrix

    def forward(self, x):
        y = col2im_array(x, self.input_shape, self.kernel_size, self.stride, self.pad,
                         self.to_matrix)
        return y

    def backward(self, gy):
        gx = im2col(gy, self.kernel_size, self.stride, self.pad, self.to_matrix)
        return gx


def col2im(x, input_shape, kernel_size, stride=1, pad=0, to_matrix=True):
    """The adjoint of `im2col`: the patches are summed back into an image of `input_shape`
    (overlapping windows add up; it is not an inverse)."""
    return Col2im(input_shape, kernel_size, stride, pad, to_matrix)(x)


# =============================================================================
# numpy / cupy arrays: im2col_array / col2im_array
# =============================================================================
def im2col_array(img, kernel_size, stride, pad, to_matrix=True):
    col = _columns(img, kernel_size, stride, pad)
    if to_matrix:
        N, C, KH, KW, OH, OW = col.shape
        col = col.transpose((0, 4, 5, 1, 2, 3)).reshape(N * OH * OW, -1)
    return col


def col2im_array(col, img_shape, kernel_size, stride, pad, to_matrix=True):
    xp = cuda.get_array_module(col)
    N, C, H, W = img_shape
    KH, KW = pair(kernel_size)
    SH, SW = pair(stride)
    PH, PW = pair(pad)
    OH, OW = _out_size(img_shape, (KH, KW), (SH, SW), (PH, PW))

    if to_matrix:
        expected = (N * OH * OW, C * KH * KW)
    else:
        expected = (N, C, KH, KW, OH, OW)
    if tuple(col.shape) != expected:
        raise ValueError(
            'col2im: for an image {} with kernel {}, stride {}, pad {} the columns must have '
            'shape {} ({} layout); got {}'.format(
                tuple(img_shape), (KH, KW), (SH, SW), (PH, PW), expected,
                'matrix' if to_matrix else '6-D', tuple(col.shape)))
    if to_matrix:
        col = col.reshape(N, OH, OW, C, KH, KW).transpose(0, 3, 4, 5, 1, 2)

    img = xp.zeros((N, C, H + 2 * PH, W + 2 * PW), dtype=col.dtype)
    overlap = SH < KH or SW < KW
    for i in range(KH):
        i_lim = i + SH * (OH - 1) + 1
        for j in range(KW):
            j_lim = j + SW * (OW - 1) + 1
            if overlap:
                img[:, :, i:i_lim:SH, j:j_lim:SW] += col[:, :, i, j]
            else:  # each pixel is in one window at most: nothing to add to
                img[:, :, i:i_lim:SH, j:j_lim:SW] = col[:, :, i, j]
    if PH == 0 and PW == 0:
        return img
    return img[:, :, PH:H + PH, PW:W + PW].copy()


# =============================================================================
# helpers of the array code
# =============================================================================
def _columns(img, kernel_size, stride, pad, axes=(0, 1, 2, 3, 4, 5)):
    """Every window of the zero-padded image, as a fresh C-ordered array whose axes are those of
    (N, C, KH, KW, OH, OW) taken in the order `axes`. Element [n, c, kh, kw, oh, ow] is the
    pixel that kernel offset (kh, kw) meets in window (oh, ow)."""
    if cuda.get_array_module(img) is not np:
        return _columns_by_offset(img, kernel_size, stride, pad, axes)

    # On the host: one copy of a read-only view that holds every window, about twice as fast
    # as filling the columns offset by offset.
    N, C, H, W = img.shape
    KH, KW = pair(kernel_size)
    SH, SW = pair(stride)
    PH, PW = pair(pad)
    OH, OW = _out_size(img.shape, (KH, KW), (SH, SW), (PH, PW))
    img = _pad(img, (PH, PW))
    sN, sC, sH, sW = img.strides
    windows = np.lib.stride_tricks.as_strided(
        img, (N, C, KH, KW, OH, OW), (sN, sC, sH, sW, sH * SH, sW * SW), writeable=False)
    return windows.transpose(axes).copy()


def _columns_by_offset(img, kernel_size, stride, pad, axes=(0, 1, 2, 3, 4, 5)):
    """`_columns` built with slicing only, one kernel offset at a time: the portable path, the
    one device modules (the simulated device, a GPU) run."""
    xp = cuda.get_array_module(img)
    N, C, H, W = img.shape
    KH, KW = pair(kernel_size)
    OH, OW = _out_size(img.shape, (KH, KW), pair(stride), pair(pad))
    shape = (N, C, KH, KW, OH, OW)

    col = xp.empty(tuple(shape[a] for a in axes), dtype=img.dtype)
    col_6d = col.transpose(tuple(int(a) for a in np.argsort(axes)))  # (N, C, KH, KW, OH, OW)
    for k, view in _offset_views(img, kernel_size, stride, pad):
        col_6d[:, :, k // KW, k % KW] = view
    return col


def _offset_views(img, kernel_size, stride, pad):
    """Yield (k, view) for each kernel offset k = kh*KW + kw, in that order: `view` is the
    (N, C, OH, OW) strided slice of the zero-padded image whose [n, c, oh, ow] is the pixel that
    offset meets in window (oh, ow)."""
    KH, KW = pair(kernel_size)
    SH, SW = pair(stride)
    PH, PW = pair(pad)
    OH, OW = _out_size(img.shape, (KH, KW), (SH, SW), (PH, PW))
    img = _pad(img, (PH, PW))
    for i in range(KH):
        i_lim = i + SH * (OH - 1) + 1
        for j in range(KW):
            j_lim = j + SW * (OW - 1) + 1
            yield i * KW + j, img[:, :, i:i_lim:SH, j:j_lim:SW]


def _pad(img, pad):
    PH, PW = pad
    if PH == 0 and PW == 0:
        return img
    xp = cuda.get_array_module(img)
    N, C, H, W = img.shape
    padded = xp.zeros((N, C, H + 2 * PH, W + 2 * PW), dtype=img.dtype)
    padded[:, :, PH:PH + H, PW:PW + W] = img
    return padded


def _out_size(img_shape, kernel_size, stride, pad):
    N, C, H, W = img_shape
    OH = get_conv_outsize(H, kernel_size[0], stride[0], pad[0])
    OW = get_conv_outsize(W, kernel_size[1], stride[1], pad[1])
    if OH < 1 or OW < 1:
        raise ValueError('kernel {} does not fit in an image {} padded by {}: the output size '
                         'would be {}'.format(tuple(kernel_size), tuple(img_shape), tuple(pad),
                                              (OH, OW)))
    return OH, OW


def _index_dtype(kernel_area):
    # The table of max positions is read once per kernel offset in backward: the narrowest
    # integer type that holds every offset is the fastest.
    return 'uint8' if kernel_area <= 256 else 'int32'
