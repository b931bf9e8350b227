"""Image kernels (docs/kernels.md#images). Images are uint8 [height, width, channels].
Each returns a kernel function for ``Dataset.map``; ``component`` picks the component it
works on (default 0), the others pass through."""

from .kernels import kernel, _pair, _floats


def decode_jpeg(channels=3, dct_method=None, component=None):
    return kernel("decode_jpeg", channels=channels, dct_method=dct_method, component=component)


def decode_png(channels=3, component=None):
    return kernel("decode_png", channels=channels, component=component)


def decode_image(channels=3, dct_method=None, component=None):
    return kernel("decode_image", channels=channels, dct_method=dct_method, component=component)


def decode_and_random_crop(size, scale=None, ratio=None, channels=None, antialias=None,
                           dct_method=None, dct_scaling=None, component=None):
    return kernel("decode_and_random_crop", size=_pair(size), scale=_floats(scale),
                  ratio=_floats(ratio), channels=channels, antialias=antialias,
                  dct_method=dct_method, dct_scaling=dct_scaling, component=component)


def random_resized_crop(size, scale=None, ratio=None, antialias=None, component=None):
    return kernel("random_resized_crop", size=_pair(size), scale=_floats(scale),
                  ratio=_floats(ratio), antialias=antialias, component=component)


def resize(size, antialias=None, component=None):
    return kernel("resize", size=_pair(size), antialias=antialias, component=component)


def center_crop(size, component=None):
    return kernel("center_crop", size=_pair(size), component=component)


def flip_left_right(component=None):
    return kernel("flip_left_right", component=component)


def random_flip_left_right(probability=None, component=None):
    return kernel("random_flip_left_right", probability=probability, component=component)


def normalize(mean, std, layout=None, scale=None, component=None):
    """float32 (x * scale - mean) / std; layout "CHW" (default, torchvision's
    ToTensor + Normalize) or "HWC"."""
    return kernel("normalize", mean=_floats(mean), std=_floats(std), layout=layout,
                  scale=None if scale is None else float(scale), component=component)


def to_float(scale=None, component=None):
    return kernel("to_float", scale=None if scale is None else float(scale), component=component)
