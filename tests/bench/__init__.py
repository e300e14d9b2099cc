"""The end-to-end benchmark, its naive baseline and its profiler."""
