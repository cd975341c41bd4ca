"""`kaja demo`: a realistic sample store, for trying kaja and for benchmarks.

Not part of the storage core: it writes only through the core's write API
(`core.record.Recorder`), the way the agent does. `sample` plays the scripted
conversations (`script`) and fills every other table; `generated` scales the
store up (`--sessions`, `--messages`); `png` draws the tiny images it stores;
`legacy` writes the files an older install left (`--legacy`, for `kaja migrate`).
"""

from kaja_cli.demo.sample import DemoOptions, DemoResult, create, existing_store

__all__ = ["DemoOptions", "DemoResult", "create", "existing_store"]
