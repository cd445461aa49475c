"""Replay a planned journey against the shop's discovered model (state graph + inventory).

A stand-in for a browser driver, so that the example's candidate cases run anywhere: each
step must be possible in the model (the control visible and enabled in the current state, a
navigation step a real transition), or the replay stops with exit 1. On success it prints the
final state and writes receipt.json for the cases' read-back.
"""

import json
import sys
from pathlib import Path

HERE = Path(__file__).parent


def main(steps_file: str) -> int:
    graph = json.loads((HERE / "state-graph.json").read_text())
    inventory = json.loads((HERE / "discovery-inventory.json").read_text())
    usable = {(entry["state"], control["qid"])
              for entry in inventory["inventory"] for control in entry["interactives"]
              if control["visible"] and control["enabled"]}
    moves = {(t["from"], t["qid"], t["action"]): t["to"] for t in graph["transitions"]}
    state = graph["initial_state"]
    acted = []
    for number, step in enumerate(json.loads(Path(steps_file).read_text())["steps"], 1):
        if step["kind"] == "command":
            continue  # commands are the fixture's business, not the driver's
        if step["kind"] == "navigate" and step["from"] != state:
            print(f"step {number}: expected to be in {step['from']}, in {state}", file=sys.stderr)
            return 1
        if (state, step["qid"]) not in usable:
            print(f"step {number}: {step['qid']} cannot be acted on in {state}", file=sys.stderr)
            return 1
        acted.append(step["qid"])
        state = moves.get((state, step["qid"], step["action"]), state)
        print(f"step {number}: {step['action']} {step['qid']} -> {state}")
    print(f"final state: {state}")
    (Path.cwd() / "receipt.json").write_text(json.dumps({"final_state": state, "acted": acted}))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1]))
