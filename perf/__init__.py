"""Performance harness: graph breaks and latency before/after graphmend-lint fixes."""
