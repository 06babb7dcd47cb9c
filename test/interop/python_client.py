"""A Python service driving an agent session through the wire protocol alone (docs/protocol.md).

Uses only the `temporalio` Python SDK and plain JSON: starts an `agentSession` workflow, sends `followup`, `inject`
and `steer` by signal, delivers once through the `deliver` update (twice with the same id, to see the duplicate
receipt), reads the log with the `events` query (paging with afterSeq) and the `state` query, then disposes the
session. Prints one JSON object with what it saw; the TypeScript test checks it.

Usage: python_client.py --address HOST:PORT --task-queue QUEUE --session ID [--namespace NS]
"""

import argparse
import asyncio
import json
import sys

from temporalio.client import Client


async def all_events(handle):
    """The whole log, paged with afterSeq until lastSeq is reached."""
    events = []
    while True:
        after = events[-1]["seq"] if events else -1
        page = await handle.query("events", {"afterSeq": after})
        events.extend(page["events"])
        if not page["events"] or events[-1]["seq"] >= page["lastSeq"]:
            return events


async def wait_for(handle, done, what, attempts=400):
    """Polls the log until done(events) holds (bounded attempts, no fixed sleeps in the checks)."""
    events = []
    for _ in range(attempts):
        events = await all_events(handle)
        if done(events):
            return events
        await asyncio.sleep(0.05)
    raise TimeoutError(f"timed out waiting for {what}; last types: {[e['type'] for e in events]}")


def turns_ended(n):
    return lambda events: sum(1 for e in events if e["type"] == "turn/end") >= n


async def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--address", required=True)
    parser.add_argument("--task-queue", required=True)
    parser.add_argument("--session", required=True)
    parser.add_argument("--namespace", default="default")
    args = parser.parse_args()

    client = await Client.connect(args.address, namespace=args.namespace)
    config = {"model": {"provider": "scripted", "steps": []}}
    handle = await client.start_workflow("agentSession", config, id=args.session, task_queue=args.task_queue)

    await handle.signal("followup", {"message": {"id": "py-1", "content": "hello from python"}})
    await wait_for(handle, turns_ended(1), "turn 1")

    # An idle inject waits; the steer wakes the session and its first batch carries the context.
    context = {"id": "py-ctx", "content": "context from python", "source": {"kind": "plugin", "plugin": "python"}}
    await handle.signal("inject", {"message": context})
    await handle.signal("steer", {"message": {"id": "py-2", "content": "steer from python"}})
    await wait_for(handle, turns_ended(2), "turn 2")

    delivery = {"lane": "followup", "message": {"id": "py-3", "content": "acknowledged from python"}}
    receipts = [await handle.execute_update("deliver", delivery) for _ in range(2)]
    await wait_for(handle, turns_ended(3), "turn 3")
    state_before = await handle.query("state")

    await handle.signal("dispose", {})
    events = await wait_for(handle, lambda ev: ev and ev[-1]["type"] == "session/disposed", "session/disposed")
    state_after = await handle.query("state")
    transcript = await handle.query("transcript")

    json.dump(
        {
            "events": events,
            "receipts": receipts,
            "stateBefore": state_before,
            "stateAfter": state_after,
            "transcript": transcript,
        },
        sys.stdout,
    )
    sys.stdout.write("\n")


if __name__ == "__main__":
    asyncio.run(main())
