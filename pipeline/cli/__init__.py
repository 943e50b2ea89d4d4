"""The ``rxcord`` command line and its presentation (reports, progress, timeline plots)."""
