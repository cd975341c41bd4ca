"""`kaja demo`: a realistic sample store, for trying kaja and for benchmarks.

Not part of the storage core: it writes only through the core's write API
(`core.conversations.record.Recorder`), the way the agent does. `sample`
plays the scripted conversations (`script`) and `tables` fills every other
table; `generated` scales the store up (`--sessions`, `--messages`) with the
words of `topics`; `png` draws the tiny images it stores; `legacy` writes the
files an older install left (`--legacy`, for `kaja migrate`); `model` holds
the options and the result. What the store's engine keeps, and what is
there already, the demo asks its engine part (`store.part`: `local` or
`server`). A demo cut short is told by its marker (core/store/markers.py).
"""

from kaja_cli.demo.model import DemoOptions, DemoResult
from kaja_cli.demo.sample import create, existing_store

__all__ = ["DemoOptions", "DemoResult", "create", "existing_store"]
