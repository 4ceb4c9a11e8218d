"""Speed of the reference framework's hot paths, as ratios to PyTorch on the CPU.

Learners compare their own training speed with the reference, so its convolution, pooling and
recurrent paths must stay close to a production framework. This script times forward+backward
of each case in the reference and, when `import torch` works, in PyTorch, within the same run
(median of several repeats after a warm-up, both on one thread), and prints the ratio. For the
convolutions it also prints how close they come to NumPy's own matrix-product speed on the same
GEMM shapes. PyTorch is only ever a yardstick here, never a dependency.

    python bench/bench_reference.py [--repeat N] [--threads N]
"""
import argparse
import os
import sys


def _parse_args():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument('--repeat', type=int, default=15, help='timed repeats per case')
    parser.add_argument('--threads', type=int, default=1, help='BLAS/OpenMP threads')
    return parser.parse_args()


ARGS = _parse_args()
# The thread count must be fixed before NumPy (and its BLAS) is first imported.
for _name in ('OMP_NUM_THREADS', 'OPENBLAS_NUM_THREADS', 'MKL_NUM_THREADS'):
    os.environ[_name] = str(ARGS.threads)

import time  # noqa: E402

import numpy as np  # noqa: E402

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), '..', 'reference'))
import dezero.functions as F  # noqa: E402
from dezero import Variable  # noqa: E402

try:
    import threadpoolctl
    threadpoolctl.threadpool_limits(ARGS.threads)
except ImportError:
    pass

try:
    import torch
    torch.set_num_threads(ARGS.threads)
except ImportError:
    torch = None


def median_times(fns, repeat, warmup=3):
    """Median wall time in seconds of each callable of `fns`, after `warmup` untimed calls each.

    The callables are timed in alternating rounds, so that a change of load on the machine
    (other processes on a shared runner) falls on all of them alike and the ratios hold."""
    for fn in fns:
        for _ in range(warmup):
            fn()
    times = [[] for _ in fns]
    for _ in range(repeat):
        for fn_times, fn in zip(times, fns):
            start = time.perf_counter()
            fn()
            fn_times.append(time.perf_counter() - start)
    return [float(np.median(fn_times)) for fn_times in times]


# =============================================================================
# Convolution and pooling
# =============================================================================
def conv_case(x_shape, W_shape, stride, pad, rng):
    x = rng.standard_normal(x_shape).astype(np.float32)
    W = rng.standard_normal(W_shape).astype(np.float32)
    b = rng.standard_normal(W_shape[0]).astype(np.float32)
    N, C, H, Wd = x_shape
    OC, _, KH, KW = W_shape
    OH = (H + 2 * pad - KH) // stride + 1
    OW = (Wd + 2 * pad - KW) // stride + 1
    gy = rng.standard_normal((N, OC, OH, OW)).astype(np.float32)

    def ref():
        xv, Wv, bv = Variable(x), Variable(W), Variable(b)
        y = F.conv2d(xv, Wv, bv, stride=stride, pad=pad)
        y.grad = Variable(gy)
        y.backward()

    def pt():
        xt = torch.from_numpy(x).requires_grad_()
        Wt = torch.from_numpy(W).requires_grad_()
        bt = torch.from_numpy(b).requires_grad_()
        y = torch.nn.functional.conv2d(xt, Wt, bt, stride=stride, padding=pad)
        y.backward(torch.from_numpy(gy))

    # The three GEMMs of forward+backward alone, as plain 2-D products on contiguous operands,
    # each in the operand order OpenBLAS runs fastest here (so the yardstick is not flattered):
    # forward (M, K) @ (K, OC), input gradient (K, OC) @ (OC, M), weight gradient
    # (K, M) @ (M, OC), with M = N*OH*OW and K = C*KH*KW.
    M, K = N * OH * OW, C * KH * KW
    col_t = rng.standard_normal((M, K)).astype(np.float32)
    col = np.ascontiguousarray(col_t.T)
    W_t = rng.standard_normal((K, OC)).astype(np.float32)
    g = rng.standard_normal((OC, M)).astype(np.float32)
    g_t = np.ascontiguousarray(g.T)

    def gemm():
        col_t @ W_t
        W_t @ g
        col @ g_t

    return ref, (pt if torch is not None else None), (gemm,)


def pooling_case(x_shape, kernel, stride, rng):
    x = rng.standard_normal(x_shape).astype(np.float32)
    N, C, H, W = x_shape
    OH, OW = (H - kernel) // stride + 1, (W - kernel) // stride + 1
    gy = rng.standard_normal((N, C, OH, OW)).astype(np.float32)

    def ref():
        xv = Variable(x)
        y = F.pooling(xv, kernel, stride)
        y.grad = Variable(gy)
        y.backward()

    def pt():
        xt = torch.from_numpy(x).requires_grad_()
        y = torch.nn.functional.max_pool2d(xt, kernel, stride)
        y.backward(torch.from_numpy(gy))

    return ref, (pt if torch is not None else None), None


# =============================================================================
# Training steps (need dezero.layers / models / optimizers: skipped until they exist)
# =============================================================================
class Skip(Exception):
    """A case that cannot run yet; the message says why."""


def _first_call(ref, what):
    """Run a training step once: a layer or optimizer that exists but is still a stub shows here."""
    try:
        ref()
    except (NotImplementedError, AttributeError, TypeError) as e:
        raise Skip('{} not built yet ({}: {})'.format(what, type(e).__name__, e))


def _need(module_name, *names):
    import importlib
    try:
        module = importlib.import_module(module_name)
        objs = [getattr(module, name) for name in names]
    except (ImportError, AttributeError) as e:
        raise Skip('{} not built yet ({}: {})'.format(module_name, type(e).__name__, e))
    return objs


def mlp_case(rng, batch=100):
    MLP, = _need('dezero.models', 'MLP')
    SGD, = _need('dezero.optimizers', 'SGD')
    x = rng.standard_normal((batch, 784)).astype(np.float32)
    t = rng.integers(0, 10, batch)
    try:
        model = MLP((1000, 10))
        optimizer = SGD(lr=0.01).setup(model)
    except (NotImplementedError, AttributeError, TypeError) as e:
        raise Skip('MLP/SGD not built yet ({}: {})'.format(type(e).__name__, e))

    def ref():
        loss = F.softmax_cross_entropy(model(x), t)
        model.cleargrads()
        loss.backward()
        optimizer.update()

    _first_call(ref, 'MLP/SGD')
    if torch is None:
        return ref, None, None
    net = torch.nn.Sequential(torch.nn.Linear(784, 1000), torch.nn.Sigmoid(),
                              torch.nn.Linear(1000, 10))
    opt = torch.optim.SGD(net.parameters(), lr=0.01)
    xt, tt = torch.from_numpy(x), torch.from_numpy(t)

    def pt():
        loss = torch.nn.functional.cross_entropy(net(xt), tt)
        opt.zero_grad()
        loss.backward()
        opt.step()

    return ref, pt, None


def lstm_case(rng, hidden=100, steps=30, batch=30):
    LSTM, Linear = _need('dezero.layers', 'LSTM', 'Linear')
    Model, = _need('dezero.models', 'Model')
    SGD, = _need('dezero.optimizers', 'SGD')
    xs = rng.standard_normal((steps, batch, 1)).astype(np.float32)
    ts = rng.standard_normal((steps, batch, 1)).astype(np.float32)

    class LSTMNet(Model):
        def __init__(self):
            super().__init__()
            self.rnn = LSTM(hidden)
            self.fc = Linear(1)

        def forward(self, x):
            return self.fc(self.rnn(x))

    try:
        model = LSTMNet()
        optimizer = SGD(lr=0.01).setup(model)
    except (NotImplementedError, AttributeError, TypeError) as e:
        raise Skip('LSTM/Model/SGD not built yet ({}: {})'.format(type(e).__name__, e))

    def ref():
        model.rnn.reset_state()
        loss = 0
        for x, t in zip(xs, ts):
            loss += F.mean_squared_error(model(x), t)
        model.cleargrads()
        loss.backward()
        loss.unchain_backward()
        optimizer.update()

    _first_call(ref, 'LSTM/Model/SGD')
    if torch is None:
        return ref, None, None
    # the same model step by step (LSTMCell), with the book's loss: squared error summed over
    # the batch and divided by the batch size, accumulated over the 30 steps
    cell, fc = torch.nn.LSTMCell(1, hidden), torch.nn.Linear(hidden, 1)
    opt = torch.optim.SGD(list(cell.parameters()) + list(fc.parameters()), lr=0.01)
    xts, tts = torch.from_numpy(xs), torch.from_numpy(ts)

    def pt():
        state, loss = None, 0
        for x, t in zip(xts, tts):
            state = cell(x, state)
            loss = loss + torch.nn.functional.mse_loss(fc(state[0]), t, reduction='sum') / batch
        opt.zero_grad()
        loss.backward()
        opt.step()

    return ref, pt, None


# =============================================================================
# Report
# =============================================================================
def main():
    rng = np.random.default_rng(0)
    cases = [
        ('conv2d x(32,3,32,32) W(16,3,3,3) s1 p1',
         lambda: conv_case((32, 3, 32, 32), (16, 3, 3, 3), 1, 1, rng)),
        ('conv2d x(32,16,28,28) W(32,16,3,3) s1 p1',
         lambda: conv_case((32, 16, 28, 28), (32, 16, 3, 3), 1, 1, rng)),
        ('max pooling 2x2 s2 x(32,16,28,28)',
         lambda: pooling_case((32, 16, 28, 28), 2, 2, rng)),
        ('MLP 784-1000-10 SGD step (batch 100)', lambda: mlp_case(rng)),
        ('LSTM hidden 100, 30 steps (batch 30)', lambda: lstm_case(rng)),
    ]
    print('numpy {}, torch {}, {} thread(s); forward+backward, median of {} alternating rounds '
          'after warm-up'.format(np.__version__, torch.__version__ if torch is not None else
                                 'absent', ARGS.threads, ARGS.repeat))
    print('matmul ms: the same GEMMs alone (NumPy, contiguous operands); of peak: reference '
          'GFLOP/s over those GEMMs\' GFLOP/s')
    header = '{:<42} {:>9} {:>9} {:>7} {:>10} {:>8}'.format(
        'case', 'ref ms', 'torch ms', 'ratio', 'matmul ms', 'of peak')
    print(header)
    print('-' * len(header))
    for name, build in cases:
        try:
            ref, pt, gemm = build()
            fns = [ref]
        except Skip as e:
            print('{:<42} skipped: {}'.format(name, e))
            continue
        if pt is not None:
            fns.append(pt)
        if gemm is not None:
            fns.append(gemm[0])
        times = median_times(fns, ARGS.repeat)
        t_ref = times.pop(0)
        cols = ['{:<42}'.format(name), '{:>9.3f}'.format(t_ref * 1e3)]
        if pt is None:
            cols += ['{:>9}'.format('-'), '{:>7}'.format('-')]
        else:
            t_pt = times.pop(0)
            cols += ['{:>9.3f}'.format(t_pt * 1e3), '{:>6.2f}x'.format(t_ref / t_pt)]
        if gemm is not None:
            t_gemm = times.pop(0)
            cols += ['{:>10.3f}'.format(t_gemm * 1e3), '{:>7.1f}%'.format(100 * t_gemm / t_ref)]
        print(' '.join(cols))


if __name__ == '__main__':
    main()
