"""Text kernels (docs/kernels.md#text)."""

from .kernels import kernel


def split(component=None):
    return kernel("split", component=component)


def byte_tokenize(offset=None, component=None):
    return kernel("byte_tokenize", offset=offset, component=component)


def vocab_lookup(vocab_file, num_oov_buckets=None, default_value=None, component=None):
    return kernel("vocab_lookup", vocab_file=str(vocab_file), num_oov_buckets=num_oov_buckets,
                  default_value=default_value, component=component)


def tokenize(vocab_file, lowercase=None, num_oov_buckets=None, default_value=None,
             component=None):
    return kernel("tokenize", vocab_file=str(vocab_file), lowercase=lowercase,
                  num_oov_buckets=num_oov_buckets, default_value=default_value,
                  component=component)


def truncate(max_length, component=None):
    return kernel("truncate", max_length=max_length, component=component)


def pad(length, value=None, truncate=None, component=None):
    return kernel("pad", length=length, value=value, truncate=truncate, component=component)


def sequence_length(component=None):
    return kernel("sequence_length", component=component)
