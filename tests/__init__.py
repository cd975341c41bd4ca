"""kaja's tests, laid out as the code is (README "Layout")."""
