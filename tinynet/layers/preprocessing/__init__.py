"""The NumPy preprocessing layers of Keras 3 (text, lookups, hashing, binning): one layer
per module, loaded lazily through ``tinynet.layers``; ``string_hash`` holds the FarmHash
and SipHash functions TensorFlow buckets strings with, ``text_ops`` the text steps."""
