"""The audit views (SPEC §11, seed `andromeda-database.txt`): what the agent
did, read from the shared file's run tables.

A floor beside `ledger/` and `side/`: it imports only the engine, the store
and the small shared modules. One module per question:

- `runs`: the top-level runs with the seed's figures and their subtree's
  totals, and one run as a tree (subagents, model calls, tool calls,
  events, feedback, review);
- `reviews`: the review queue, and marking a review done (a write, through
  ordinary SQL so the agent's sync triggers see it);
- `services`: background tasks, schedules (`due`: the seed's scheduler
  query) and triggers (a trigger's `secret` is never selected; its
  `config` is masked);
- `learning`: recipes with the run each was learned from, tool fixes;
- `artifacts`: saved pages and files, and whether each file is still there.

Every query is built from the columns the file really has (`common`): a
store from before these tables, or one an older agent wrote, answers
"none recorded" (`Listing.recorded` false), never a traceback.
"""
