"""Batch mode: the same tasks run in Batch API rounds (`executor`), journalled in the run
directory (`journal`) so that a resumed run submits nothing twice, and exported to / imported from
an offline runner's files (`offline`)."""
