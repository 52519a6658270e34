"""The query layer: the only code that calls a model.

``loop`` runs the chunked query loop (chunks sized in bytes, halving on out-of-memory, one
progress bar, glibc's heap warmed once) and builds the masked inputs of each chunk, ``games``
resolves estimators and callables into one model function and turns a design into model inputs
and values, ``backend`` holds array namespaces, devices and the engines' thread pool, ``frames``
and ``frame_inputs`` keep polars / pandas inputs as the user gave them, ``chunks`` reads datasets
in chunks.
"""
