"""An agent-like writer: records what Kaja records, through kaja's write API.

    python tests/support/agents/kaja_agent.py --owner telegram:999 --seconds 5 [--long-every 25]

Until the time is up (or SIGTERM: the test has seen what it needed; the
turn under way is finished, never cut) it starts sessions and appends turns (user message,
with an image every `--image-every` turns, assistant reply, sometimes a tool
call with its result, the ledger rows of the run), a few milliseconds apart,
each turn one transaction; every `--long-every` turns it holds a write
transaction open for 300 ms. Busy answers are retried, as the agent does.
It prints "ready" once its first turn is committed, and at the end one JSON
line with what it committed.
"""

from __future__ import annotations

import argparse
import json
import random
import signal
import sys
import time

from kaja_cli.core.conversations.record import Recorder
from kaja_cli.core.store import Store
from kaja_cli.errors import Busy


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--owner", default="telegram:999")
    ap.add_argument("--seconds", type=float, default=5)
    ap.add_argument("--long-every", type=int, default=25)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--word", default="zanzibarite", help="a rare word put in every user message")
    ap.add_argument(
        "--image-every", type=int, default=0, help="every N turns the user sends an image"
    )
    args = ap.parse_args()
    rng = random.Random(args.seed)
    committed = {"sessions": 0, "messages": 0, "tool_calls": 0, "turns": 0, "busy_retries": 0}
    session_ids: list[str] = []
    deadline = time.monotonic() + args.seconds
    told: list[int] = []
    signal.signal(signal.SIGTERM, lambda signum, frame: told.append(signum))
    store = Store.locate()
    with Recorder(store) as rec:
        sid = None
        turn = 0
        while time.monotonic() < deadline and not told:
            turn += 1
            try:
                with rec.transaction():
                    if sid is None or rng.random() < 0.1:
                        sid = rec.start_session(
                            owner=args.owner, model="gpt-5-mini", title=f"Load test {turn}"
                        )
                        new_session = sid
                    else:
                        new_session = None
                    parts = None
                    if args.image_every and turn % args.image_every == 0:
                        # The file first, then the message that refers to it, as the agent does.
                        parts = [rec.add_image(sid, f"image of turn {turn}".encode(), "image/png")]
                    rec.add_message(
                        sid, "user", f"turn {turn}: {args.word} question number {turn}", parts=parts
                    )
                    reply = rec.add_message(
                        sid, "assistant", f"answer {turn} about {args.word}", model="gpt-5-mini",
                        prompt_tokens=100 + turn, completion_tokens=20,
                    )  # fmt: skip
                    messages = 2
                    tools = 0
                    if rng.random() < 0.3:
                        tid = rec.add_tool_call(
                            reply.id, "web_search", {"q": f"{args.word} {turn}"}
                        )
                        result = rec.add_message(
                            sid, "tool", f"results for {args.word} {turn}", tool_call_id="c"
                        )
                        rec.finish_tool_call(
                            tid, status="ok", result_message_id=result.id, duration_ms=12
                        )
                        messages += 1
                        tools += 1
                    run = rec.start_run(thread_id=sid, prompt=f"turn {turn}")
                    rec.add_call(run, model="gpt-5-mini", prompt_tokens=100, completion_tokens=20)
                    rec.end_run(run, "completed")
                    if args.long_every and turn % args.long_every == 0:
                        time.sleep(0.3)  # a long write transaction, as when the agent compacts
            except Busy:
                committed["busy_retries"] += 1
                time.sleep(0.01)
                continue
            if new_session:
                committed["sessions"] += 1
                session_ids.append(new_session)
            committed["messages"] += messages
            committed["tool_calls"] += tools
            committed["turns"] += 1
            if committed["turns"] == 1:
                print("ready", flush=True)
            time.sleep(rng.uniform(0.002, 0.008))
    print(json.dumps({**committed, "session_ids": session_ids}), flush=True)


if __name__ == "__main__":
    sys.exit(main())
