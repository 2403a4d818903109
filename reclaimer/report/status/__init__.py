"""The reclaimer's status page at `/`: HTML built from the last cycle's report, pure (no I/O)."""
