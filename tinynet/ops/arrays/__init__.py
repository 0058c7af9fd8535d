"""The operations on float32 NumPy arrays that the built-in layers and the optimizers
call, one a pass (no recording: :mod:`tinynet.ops` records): each validates and converts
its arrays, allocates the outputs, plans from the shapes, picks the serial or parallel
kernel of :mod:`tinynet.kernels` with a gate of :mod:`tinynet.tuning`, and translates
names into the kernels' integer codes."""
