// Benchmark entry point: see README "Benchmarks".
print("pushspool-bench: not yet implemented")
