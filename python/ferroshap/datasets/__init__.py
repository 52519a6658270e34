"""Datasets: Parquet files explained in resumable chunks, and the chunk iterator."""
