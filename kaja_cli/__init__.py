"""kaja: administer the local storage of Kaja, a personal AI agent."""

__version__ = "0.1.0"
