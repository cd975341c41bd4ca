"""Every command through the real `kaja` (in-process unless the behaviour is about processes)."""
