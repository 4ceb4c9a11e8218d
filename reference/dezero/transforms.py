"""Preprocessing (step 49): small callables a `Dataset` applies to each sample as it is read.

Image transforms take and return PIL images (`Convert`, `Resize`, `CenterCrop`), `ToArray` and
`ToPIL` cross between PIL and CHW arrays, and the array transforms (`Normalize`, `Flatten`,
`AsType`) work on NumPy arrays. `Compose` chains them. Pillow is imported inside the transforms
that need it, so `import dezero` does not load it.
"""
import sys

import numpy as np

from dezero.utils import pair

# The value of PIL's `Image.BILINEAR` (`Image.Resampling.BILINEAR`), spelt out so that the default
# of `Resize` does not import Pillow when this module is imported.
BILINEAR = 2


def _pil_image():
    from PIL import Image
    return Image


class Compose:
    """Apply `transforms` in order; an empty list is the identity."""

    def __init__(self, transforms=[]):
        self.transforms = transforms

    def __call__(self, img):
        if not self.transforms:
            return img
        for t in self.transforms:
            img = t(img)
        return img


# =============================================================================
# Transforms for PIL images
# =============================================================================
class Convert:
    """Convert a PIL image to `mode`; 'BGR' gives an RGB image with red and blue swapped."""

    def __init__(self, mode='RGB'):
        self.mode = mode

    def __call__(self, img):
        if self.mode == 'BGR':
            Image = _pil_image()
            img = img.convert('RGB')
            r, g, b = img.split()
            return Image.merge('RGB', (b, g, r))
        return img.convert(self.mode)


class Resize:
    """Resize a PIL image to `size` (an int or a (width, height) pair)."""

    def __init__(self, size, mode=BILINEAR):
        self.size = pair(size)
        self.mode = mode

    def __call__(self, img):
        return img.resize(self.size, self.mode)


class CenterCrop:
    """Cut the central `size` (an int or a (width, height) pair) out of a PIL image; an odd
    margin leaves the extra pixel on the right/bottom side."""

    def __init__(self, size):
        self.size = pair(size)

    def __call__(self, img):
        W, H = img.size
        OW, OH = self.size
        left = (W - OW) // 2
        up = (H - OH) // 2
        return img.crop((left, up, left + OW, up + OH))


class ToArray:
    """PIL image (H, W, C) to an array (C, H, W) of `dtype`; arrays pass through unchanged."""

    def __init__(self, dtype=np.float32):
        self.dtype = dtype

    def __call__(self, img):
        if isinstance(img, np.ndarray):
            return img
        # A PIL image implies PIL is loaded already; other inputs need no import to be rejected.
        Image = sys.modules.get('PIL.Image')
        if Image is not None and isinstance(img, Image.Image):
            img = np.asarray(img)
            if img.ndim == 2:  # single-band images ('L', 'F') have no channel axis
                img = img[:, :, np.newaxis]
            return img.transpose(2, 0, 1).astype(self.dtype)
        raise TypeError('ToArray expects a PIL image or a NumPy array, got {}'.format(
            type(img).__name__))


class ToPIL:
    """Array (C, H, W) to a PIL image."""

    def __call__(self, array):
        Image = _pil_image()
        data = array.transpose(1, 2, 0)
        if data.shape[2] == 1:
            data = data[:, :, 0]
        return Image.fromarray(data)


class RandomHorizontalFlip:
    """Mirror a PIL image or a (..., W) array left-right with probability `p`, drawing from the
    global NumPy RNG (so `np.random.seed` replays it). The book leaves this class empty."""

    def __init__(self, p=0.5):
        self.p = p

    def __call__(self, img):
        if np.random.rand() >= self.p:
            return img
        if isinstance(img, np.ndarray):
            return img[..., ::-1].copy()
        Image = _pil_image()
        # `Image.Transpose` arrived in Pillow 9.1; older releases have only the module constant.
        return img.transpose(getattr(Image, 'Transpose', Image).FLIP_LEFT_RIGHT)


# =============================================================================
# Transforms for NumPy arrays
# =============================================================================
class Normalize:
    """`(array - mean) / std`. Each of `mean` and `std` is a scalar or a per-channel sequence,
    which is laid along axis 0 (the channel axis of a CHW image)."""

    def __init__(self, mean=0, std=1):
        self.mean = mean
        self.std = std

    def __call__(self, array):
        mean, std = self.mean, self.std
        # Casting a sequence to the array's float dtype keeps float32 data float32.
        dtype = array.dtype if np.issubdtype(array.dtype, np.floating) else np.float64
        if not np.isscalar(mean):
            mean = self._per_channel(mean, array, dtype)
        if not np.isscalar(std):
            std = self._per_channel(std, array, dtype)
        return (array - mean) / std

    @staticmethod
    def _per_channel(value, array, dtype):
        value = np.asarray(value, dtype=dtype)
        shape = [1] * array.ndim
        shape[0] = value.size
        return value.reshape(shape)


class Flatten:
    """Flatten an array to 1-D (a copy)."""

    def __call__(self, array):
        return array.flatten()


class AsType:
    """Cast an array to `dtype`."""

    def __init__(self, dtype=np.float32):
        self.dtype = dtype

    def __call__(self, array):
        return array.astype(self.dtype)


ToFloat = AsType


class ToInt(AsType):
    """Cast an array to an integer `dtype` (Python `int`, i.e. the platform's default integer)."""

    def __init__(self, dtype=int):
        self.dtype = dtype
