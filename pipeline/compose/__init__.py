"""Composition: the named-stage pipeline, the one chain, the stream runner and the turn runner."""
