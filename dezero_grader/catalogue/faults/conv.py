"""Faults of the convolution (steps 55-58): the output-size arithmetic (`get_conv_outsize`,
`pair`), im2col/col2im, conv2d, pooling, the Conv2d layer and VGG16.

Each patch replaces or wraps one name of the book's API (`utils.get_conv_outsize`,
`functions_conv.im2col_array`, `functions_conv.col2im_array`, `functions.conv2d`,
`functions.pooling`, `layers.Conv2d.forward`, `models.VGG16`) and imports what it needs inside
its body: its source is copied verbatim into single-fault variants. `pair_tuple` serves step 57
too.
"""
from dezero_grader.catalogue.faults import patch


# -- step 55: convolution arithmetic -------------------------------------------------------------
@patch('conv_outsize_off_by_one')
def conv_outsize_off_by_one(dz):
    def get_conv_outsize(input_size, kernel_size, stride, pad):
        return (input_size + pad * 2 - kernel_size) // stride
    dz.utils.get_conv_outsize = get_conv_outsize


@patch('conv_outsize_true_div')
def conv_outsize_true_div(dz):
    def get_conv_outsize(input_size, kernel_size, stride, pad):
        return (input_size + pad * 2 - kernel_size) / stride + 1
    dz.utils.get_conv_outsize = get_conv_outsize


@patch('conv_outsize_pad_once')
def conv_outsize_pad_once(dz):
    def get_conv_outsize(input_size, kernel_size, stride, pad):
        return (input_size + pad - kernel_size) // stride + 1
    dz.utils.get_conv_outsize = get_conv_outsize


@patch('pair_tuple')
def pair_tuple(dz):
    def pair(x):
        if isinstance(x, tuple):
            return x
        return (x, 1)
    dz.utils.pair = pair


@patch('conv_outsize_missing')
def conv_outsize_missing(dz):
    del dz.utils.get_conv_outsize


# -- step 57: convolution and pooling ------------------------------------------------------------
@patch('im2col_axis_order')
def im2col_axis_order(dz):
    # The column matrix ordered (kh, kw, c) instead of (c, kh, kw): conv2d_simple's reshaped
    # weights, pooling_simple's windows and col2im no longer line up with it.
    original = dz.functions_conv.im2col_array

    def im2col_array(img, kernel_size, stride, pad, to_matrix=True):
        col = original(img, kernel_size, stride, pad, to_matrix=False)
        if to_matrix:
            N, C, KH, KW, OH, OW = col.shape
            col = col.transpose((0, 4, 5, 2, 3, 1)).reshape(N * OH * OW, -1)
        return col
    dz.functions_conv.im2col_array = im2col_array


@patch('col2im_overwrites')
def col2im_overwrites(dz):
    # Overlapping windows overwrite each other instead of adding up.
    def col2im_array(col, img_shape, kernel_size, stride, pad, to_matrix=True):
        xp = dz.cuda.get_array_module(col)
        N, C, H, W = img_shape
        KH, KW = dz.utils.pair(kernel_size)
        SH, SW = dz.utils.pair(stride)
        PH, PW = dz.utils.pair(pad)
        OH = (H + 2 * PH - KH) // SH + 1
        OW = (W + 2 * PW - KW) // SW + 1
        if to_matrix:
            col = col.reshape(N, OH, OW, C, KH, KW).transpose(0, 3, 4, 5, 1, 2)
        img = xp.zeros((N, C, H + 2 * PH + SH - 1, W + 2 * PW + SW - 1), dtype=col.dtype)
        for j in range(KH):
            j_lim = j + SH * OH
            for i in range(KW):
                i_lim = i + SW * OW
                img[:, :, j:j_lim:SH, i:i_lim:SW] = col[:, :, j, i, :, :]
        return img[:, :, PH:H + PH, PW:W + PW]
    dz.functions_conv.col2im_array = col2im_array


@patch('conv_bias_axis')
def conv_bias_axis(dz):
    # The bias added along the last axis (width) instead of the channel axis.
    original = dz.functions.conv2d

    def conv2d(x, W, b=None, stride=1, pad=0):
        y = original(x, W, None, stride, pad)
        if b is None:
            return y
        b = dz.as_variable(b)
        return y + dz.functions.reshape(b, (1, 1, 1, b.shape[0]))
    dz.functions.conv2d = conv2d
    dz.functions_conv.conv2d = conv2d


@patch('conv_pad_one_side')
def conv_pad_one_side(dz):
    # All the padding before the image (top and left), none after it.
    original = dz.functions_conv.im2col_array

    def im2col_array(img, kernel_size, stride, pad, to_matrix=True):
        PH, PW = dz.utils.pair(pad)
        if PH or PW:
            xp = dz.cuda.get_array_module(img)
            N, C, H, W = img.shape
            padded = xp.zeros((N, C, H + 2 * PH, W + 2 * PW), dtype=img.dtype)
            padded[:, :, 2 * PH:, 2 * PW:] = img
            img = padded
        return original(img, kernel_size, stride, 0, to_matrix)
    dz.functions_conv.im2col_array = im2col_array


@patch('conv2d_layer_lazy_in_channels')
def conv2d_layer_lazy_in_channels(dz):
    # in_channels=None is not inferred from the input: the layer assumes out_channels.
    original = dz.layers.Conv2d.forward

    def forward(self, x):
        if self.W.data is None:
            self.in_channels = self.out_channels
            self._init_W(dz.cuda.get_array_module(x))
        return original(self, x)
    dz.layers.Conv2d.forward = forward


@patch('pooling_grad_route')
def pooling_grad_route(dz):
    # Backward sends each window's gradient to its first element, not to its maximum.
    F = dz.functions
    original = F.pooling

    class RoutedPooling(dz.Function):
        def __init__(self, kernel_size, stride, pad):
            self.kernel_size, self.stride, self.pad = kernel_size, stride, pad

        def forward(self, x):
            self.x_shape = x.shape
            return original(dz.Variable(x), self.kernel_size, self.stride, self.pad).data

        def backward(self, gy):
            xp = dz.cuda.get_array_module(gy)
            KH, KW = dz.utils.pair(self.kernel_size)
            N, C, OH, OW = gy.shape
            gcol = xp.zeros((N, C, KH, KW, OH, OW), dtype=gy.dtype)
            gcol[:, :, 0, 0] = gy.data
            return F.col2im(gcol, self.x_shape, self.kernel_size, self.stride, self.pad,
                            to_matrix=False)

    def pooling(x, kernel_size, stride=1, pad=0):
        return RoutedPooling(kernel_size, stride, pad)(x)
    dz.functions.pooling = pooling
    dz.functions_conv.pooling = pooling


@patch('conv_init_scale')
def conv_init_scale(dz):
    # Standard normal initial weights: the sqrt(1 / (C * KH * KW)) fan-in scale is missing.
    import numpy as np
    original = dz.layers.Conv2d.forward

    def forward(self, x):
        if self.W.data is None:
            xp = dz.cuda.get_array_module(x)
            KH, KW = dz.utils.pair(self.kernel_size)
            self.in_channels = x.shape[1]
            self.W.data = xp.random.randn(self.out_channels, x.shape[1], KH, KW).astype(
                np.float32)
        return original(self, x)
    dz.layers.Conv2d.forward = forward


@patch('conv_functions_not_exported')
def conv_functions_not_exported(dz):
    # functions_conv's names are not re-exported by dezero.functions.
    for name in ('conv2d', 'conv2d_simple', 'pooling', 'pooling_simple', 'im2col', 'col2im'):
        if hasattr(dz.functions, name):
            delattr(dz.functions, name)


# -- step 58: VGG16 ------------------------------------------------------------------------------
@patch('vgg_architecture')
def vgg_architecture(dz):
    # conv4_3 with 256 filters instead of 512.
    original = dz.models.VGG16.__init__

    def __init__(self, pretrained=False):
        original(self, pretrained)
        self.conv4_3 = dz.layers.Conv2d(256, kernel_size=3, stride=1, pad=1)
    dz.models.VGG16.__init__ = __init__


@patch('vgg_flatten_order')
def vgg_flatten_order(dz):
    # The feature map is flattened channels-last (N, H, W, C) before fc6.
    def forward(self, x):
        F = dz.functions
        blocks = (('conv1_1', 'conv1_2'), ('conv2_1', 'conv2_2'),
                  ('conv3_1', 'conv3_2', 'conv3_3'), ('conv4_1', 'conv4_2', 'conv4_3'),
                  ('conv5_1', 'conv5_2', 'conv5_3'))
        for block in blocks:
            for name in block:
                x = F.relu(getattr(self, name)(x))
            x = F.pooling(x, 2, 2)
        x = F.transpose(x, (0, 2, 3, 1))
        x = F.reshape(x, (x.shape[0], -1))
        x = F.dropout(F.relu(self.fc6(x)))
        x = F.dropout(F.relu(self.fc7(x)))
        return self.fc8(x)
    dz.models.VGG16.forward = forward


@patch('vgg_dropout_mode')
def vgg_dropout_mode(dz):
    # The classifier's dropout forced on: it stays active in test mode.
    def forward(self, x):
        F = dz.functions
        blocks = (('conv1_1', 'conv1_2'), ('conv2_1', 'conv2_2'),
                  ('conv3_1', 'conv3_2', 'conv3_3'), ('conv4_1', 'conv4_2', 'conv4_3'),
                  ('conv5_1', 'conv5_2', 'conv5_3'))
        for block in blocks:
            for name in block:
                x = F.relu(getattr(self, name)(x))
            x = F.pooling(x, 2, 2)
        x = F.reshape(x, (x.shape[0], -1))
        with dz.using_config('train', True):
            x = F.dropout(F.relu(self.fc6(x)))
            x = F.dropout(F.relu(self.fc7(x)))
        return self.fc8(x)
    dz.models.VGG16.forward = forward


@patch('vgg_preprocess_channels')
def vgg_preprocess_channels(dz):
    # Channels kept in RGB order (the network was trained on BGR).
    import numpy as np

    def preprocess(image, size=(224, 224), dtype=np.float32):
        image = image.convert('RGB')
        if size:
            image = image.resize(size)
        image = np.asarray(image, dtype=dtype)
        image = image - np.array([103.939, 116.779, 123.68], dtype=dtype)
        return image.transpose((2, 0, 1))
    dz.models.VGG16.preprocess = staticmethod(preprocess)


@patch('vgg_pretrained_missing')
def vgg_pretrained_missing(dz):
    # No pretrained weights: VGG16.WEIGHTS_PATH is missing.
    del dz.models.VGG16.WEIGHTS_PATH
