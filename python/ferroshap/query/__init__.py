"""The query layer: the only code that calls a model.

``loop`` runs the chunked query loop (chunks sized in bytes, halving on out-of-memory, one
progress bar), ``games`` turns a design into model inputs and values, ``models`` resolves
estimators and callables into one model function, ``backend`` holds array namespaces and
devices, ``frames`` keeps polars / pandas inputs as the user gave them, ``heap`` tunes glibc.
"""
