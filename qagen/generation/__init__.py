"""Building a test set: load, chunk, sample, draft, critique, filter and write (`pipeline.build`)."""
