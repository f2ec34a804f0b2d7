"""Clean reference Triton solutions (`ModelNew`) for the library problems."""
