"""The moderation plan's activities, as `agentctx run` and `agentctx worker`
run them: the resolved call as JSON on stdin, the result as JSON on stdout,
a failure as a non-zero exit (its stderr is the failure's text).

    python3 examples/moderation/activity.py TOOL

The same rules as the built-in activities of `agentctx demo`.
"""

import json
import sys

tool = sys.argv[1]
call = json.load(sys.stdin)
if tool == "classify":
    text = str(call.get("text", "")).lower()
    label = "spam" if "buy" in text or "cheap" in text else "attack" if "idiot" in text else "ok"
    print(json.dumps(label))
elif tool == "score":
    print(json.dumps({"spam": 0.9, "attack": 0.8}.get(call.get("label"), 0.1)))
elif tool == "decide":
    if call.get("label") == "attack":
        # A handled failure: the call's second outcome, †state.escalation.
        sys.exit("personal attack: a human moderator decides")
    remove = call.get("score", 0) >= call.get("threshold", 0.5)
    print(json.dumps("remove" if remove else "keep"))
elif tool == "notify":
    print("null")
else:
    sys.exit(f"unknown tool {tool!r}")
