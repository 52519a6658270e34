"""The query layer: the only code that calls a model.

``loop`` runs the chunked query loop (chunks sized in bytes, halving on out-of-memory, one
progress bar, glibc's heap warmed once), ``games`` turns a design into model inputs and values,
``models`` resolves estimators and callables into one model function, ``backend`` holds array
namespaces and devices, ``frames`` and ``frame_inputs`` keep polars / pandas inputs as the user
gave them, ``chunks`` reads datasets in chunks.
"""
