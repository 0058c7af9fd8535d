"""Tools around the library, which may import any of it (nothing in the library imports
them back): ``calibrate`` (measure the tuning gates on this machine), ``warmup`` (compile
every kernel up front) and ``compile_ahead`` (a cold ``fit``'s helper process)."""
