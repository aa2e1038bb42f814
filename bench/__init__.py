"""Benchmarks: run each as `python -m bench.<name>`; they print Markdown tables, they are not tests."""
