"""Tests of the core's parts in one process: layering, registry, schema, the opener, rendering."""
