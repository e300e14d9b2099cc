"""End-to-end suites and their harness (test server, denormd processes, the sample shop)."""
