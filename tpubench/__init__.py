"""tpubench: write a TensorFlow model once, benchmark it anywhere."""

__version__ = "0.1.0"
