"""The Python side of the tests is one package rooted here: run it from the repository root,
e.g. `python3 -m unittest tests.integration.test_daemon` or `python3 -m tests.bench.e2e_bench`."""
