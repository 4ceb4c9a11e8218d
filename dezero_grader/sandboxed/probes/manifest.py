"""The API manifest of steps 40-60: every name of the learner's code that the scenarios of those
steps touch, with the step whose book code introduces it and the book file it lives in.

This is what is graded as contract, and every function a book script of those steps calls is
in it: `tests/unit/test_manifest.py` fails when a name here is exercised by no check of its
step or an earlier one. Anything not listed here is the learner's internals, which
no check may depend on: a scenario reaches the learner only through these names (`ctx.api.get`
for module-level names, the listed attributes and methods on the objects they return). Where a
layer's inner names matter at all, it says why (`note`). `tests/unit/test_manifest.py` keeps
the scenarios and this list in step; `docs/authoring.md` shows it as a table.

Entries: (name, step, book file, note). `Variable.x` is an attribute or method of the object a
name returns; `F.x` is `dezero.functions.x`; `(role)` marks a parameter found by its role.
"""

MANIFEST = (
    # -- step 37-47: tensors, layers, models, optimizers ------------------------------------------
    ('Variable', 1, 'core.py', 'Variable(array); .data, .grad, .creator, .shape, .ndim, .size, '
     '.dtype, len(), .name, .backward(retain_grad=...), .cleargrad()'),
    ('Variable.reshape', 38, 'core.py', 'reshape(2, 3), reshape((6,)), reshape([3, 2])'),
    ('Variable.transpose', 38, 'core.py', 'transpose(); with axes, transpose(1, 2, 0) and '
     'transpose((2, 0, 1)), as an extension (the step-38 text has no axes)'),
    ('Variable.T', 38, 'core.py', ''),
    ('F.sum', 39, 'functions.py', 'sum(x, axis=None, keepdims=False)'),
    ('F.broadcast_to', 40, 'functions.py', ''),
    ('F.sum_to', 40, 'functions.py', ''),
    ('F.matmul', 41, 'functions.py', ''),
    ('F.mean_squared_error', 42, 'functions.py', ''),
    ('F.linear', 43, 'functions.py', 'linear(x, W, b=None)'),
    ('F.sigmoid', 43, 'functions.py', ''),
    ('core.Parameter', 44, 'core.py', 'Parameter(array, name=...): a Variable; the top-level '
     '`dezero.Parameter` where core.Parameter is missing'),
    ('layers.Layer', 44, 'layers.py', 'subclassed by scenarios; attributes that hold a Parameter '
     'or a Layer register it; .params(), .cleargrads(), __call__; the top-level `dezero.Layer` '
     '(which no book script imports) only where layers.Layer is missing'),
    ('Parameter', 44, '__init__.py', 'see core.Parameter'),
    ('Layer', 44, '__init__.py', 'see layers.Layer'),
    ('layers.Linear', 44, 'layers.py', 'Linear(out_size, nobias=False, in_size=None); its '
     'parameters found by role: the 2-D one is the weight (W), the 1-D one the bias (b), '
     'whatever they are called'),
    ('models.MLP', 45, 'models.py', 'MLP(sizes, activation=F.sigmoid); attributes need not be '
     'the book\'s l0, l1: weights are keyed by role and shape'),
    ('optimizers.SGD', 46, 'optimizers.py', 'SGD(lr); .setup(model) returns the optimizer; '
     '.update(); .add_hook(f)'),
    ('optimizers.MomentumSGD', 46, 'optimizers.py', 'MomentumSGD(lr, momentum=0.9)'),
    ('F.get_item', 47, 'functions.py', 'and Variable.__getitem__'),
    ('F.softmax', 47, 'functions.py', ''),
    ('F.softmax_cross_entropy', 47, 'functions.py', ''),
    ('F.softmax_simple', 47, 'functions.py', 'the first softmax the book\'s step-47 script calls'),
    ('F.softmax_cross_entropy_simple', 47, 'functions.py', 'the first cross entropy the '
     'book\'s step-47 script calls (softmax, clip, log, an index)'),
    ('F.clip', 47, 'functions.py', ''),
    ('F.exp', 43, 'functions.py', 'with F.tanh, F.sin of the earlier steps'),
    ('F.log', 47, 'functions.py', ''),
    ('F.relu', 51, 'functions.py', ''),
    # -- steps 48-51: data ----------------------------------------------------------------------------
    ('datasets.get_spiral', 48, 'datasets.py', 'get_spiral(train=True) -> (x, t)'),
    ('datasets.Dataset', 49, 'datasets.py', 'Dataset(train, transform, target_transform); '
     'subclassed with prepare() filling .data and .label; len(), [i] -> (x, t). Only step 49\'s '
     'own check uses it; the top-level `dezero.Dataset` is not needed'),
    ('Dataset', 49, '__init__.py', 'only where datasets.Dataset is missing (step 49\'s check)'),
    ('datasets.Spiral', 49, 'datasets.py', 'Spiral(train=True, transform=None)'),
    ('DataLoader', 50, 'dataloaders.py, __init__.py', 'from dezero import DataLoader (the book\'s '
     'scripts); DataLoader(dataset, batch_size, shuffle=True); fed a plain object with len() '
     'and [i] -> (x, t); iterated'),
    ('F.accuracy', 50, 'functions.py', ''),
    ('utils.get_file', 51, 'utils.py', 'present (api check only)'),
    ('utils.cache_dir', 51, 'utils.py', 'read, never required: where a package caches its '
     'downloads when that is not ~/.dezero (the MNIST check places its files there too)'),
    ('datasets.MNIST', 51, 'datasets.py', 'MNIST(train=True, transform=...); reads the files '
     'get_file caches in ~/.dezero (written by the scenario; never downloaded)'),
    # -- step 52: the device ------------------------------------------------------------------------
    ('cuda', 52, 'cuda.py', 'gpu_enable, get_array_module, as_numpy, as_cupy'),
    ('as_array', 52, 'core.py', 'as_array(device array) stays on the device'),
    ('Variable.to_gpu', 52, 'core.py', 'with Variable.to_cpu'),
    ('layers.Layer.to_gpu', 52, 'layers.py', 'with Layer.to_cpu'),
    ('DataLoader.to_gpu', 52, 'dataloaders.py', 'with DataLoader.to_cpu and DataLoader(..., '
     'gpu=True)'),
    # -- steps 53-56 ----------------------------------------------------------------------------------
    ('layers.Layer.save_weights', 53, 'layers.py', 'the file\'s keys are the book\'s parent/child/name '
     '(block/fc/W): a name matters here because the book\'s files use it'),
    ('layers.Layer.load_weights', 53, 'layers.py', 'reads its own files; reading files the '
     'book\'s framework wrote (W, b) is an extension check'),
    ('test_mode', 54, 'core.py, __init__.py', 'with test_mode(): ...'),
    ('Config.train', 54, 'core.py', 'read and restored around test_mode()'),
    ('using_config', 18, 'core.py', 'using_config(\'train\', False) restores the flag (step 54)'),
    ('F.dropout', 54, 'functions.py', 'dropout(x, dropout_ratio=0.5)'),
    ('utils.get_conv_outsize', 55, 'utils.py', 'the book\'s step-55 script defines it itself; '
     'its package has it in utils.py, where step 57\'s convolution uses it'),

    # -- steps 57-58: convolution -------------------------------------------------------------------
    ('F.im2col', 57, 'functions_conv.py (re-exported by functions.py)', ''),
    ('F.col2im', 57, 'functions_conv.py (re-exported by functions.py)', ''),
    ('F.conv2d', 57, 'functions_conv.py (re-exported by functions.py)', ''),
    ('F.conv2d_simple', 57, 'functions_conv.py (re-exported by functions.py)', ''),
    ('F.pooling', 57, 'functions_conv.py (re-exported by functions.py)', ''),
    ('F.pooling_simple', 57, 'functions_conv.py (re-exported by functions.py)', 'the book\'s '
     'takes its window maxima with Variable.max, i.e. F.max: the only place F.max is graded'),
    ('utils.pair', 57, 'utils.py', 'pair(int) -> (int, int); pair(tuple) -> the tuple'),
    ('layers.Conv2d', 57, 'layers.py', 'Conv2d(out_channels, kernel_size, stride, pad, nobias, '
     'in_channels=None); parameters found by role (4-D weight, 1-D bias)'),
    ('models.VGG16', 58, 'models.py', 'VGG16(); .preprocess, .WEIGHTS_PATH; attributes '
     'conv1_1 ... conv5_3, fc6, fc7, fc8, their W and b by role; load_weights of a file with the '
     'book\'s keys (conv1_1/W, ...): the names matter here because the pretrained file uses them'),
    # -- steps 59-60: recurrent ---------------------------------------------------------------------
    ('layers.RNN', 59, 'layers.py', 'RNN(hidden_size); .reset_state(), .h; the inner names '
     '(x2h, h2h) are not read: the parameters are assigned to their roles by shape and the '
     'book\'s recurrence is computed by the grader'),
    ('optimizers.Adam', 59, 'optimizers.py', 'Adam(alpha); the book defines it with the other '
     'optimizers but its scripts first use it at step 59: graded from there (on the device)'),
    ('Variable.unchain_backward', 59, 'core.py', 'with Variable.unchain'),
    ('datasets.SinCurve', 59, 'datasets.py', 'present (api check only)'),
    ('layers.LSTM', 60, 'layers.py', 'LSTM(hidden_size); .reset_state(), .h, .c; the gates\' '
     'projections (x2f ... h2u, or fused 4H ones) assigned to their roles by shape, as for the '
     'RNN'),
    ('SeqDataLoader', 60, 'dataloaders.py, __init__.py', 'from dezero import SeqDataLoader; '
     'SeqDataLoader(dataset, batch_size, gpu=False); fed a plain object'),
)


def names():
    """The module-level names, as `ctx.api.get` spells them (`F.x` → `functions.x`)."""
    return {('functions.' + n[2:]) if n.startswith('F.') else n for n, *_ in MANIFEST}
