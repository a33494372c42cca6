"""Test support that users can run too (the local GCS server, copies of a run record)."""
