"""`python -m tpubench_launch.k8s.wait`: waits for a Job or JobSet to finish, keeps its logs.

The task of a `--executor=gke` sweep run (executors/gke.py): it polls
`kubectl get KIND NAME -o json` until the object has a Complete (Job),
Completed (JobSet) or Failed condition, then saves `kubectl logs` of every
pod of the run (label tpubench/run=NAME) to --logs.  Exit 0 when it
completed; 1 with one `error:` line (the condition's reason and message)
when it failed or the API stopped answering.  A separate process, so the
sweep's dry run prints a command a user can run by hand, and the launcher
stops it as it stops an ssh task (its process group, on Ctrl-C).
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time

from tpubench.core import bounds, errors, safe_files

DONE = ("Complete", "Completed")
GIVE_UP_AFTER = 6  # consecutive failed `kubectl get` calls (the API may blink)


def condition(obj: dict) -> tuple[str, str] | None:
    """('ok' | 'failed', reason: message) from a Job/JobSet's true conditions, else None."""
    for c in (obj.get("status") or {}).get("conditions") or []:
        if str(c.get("status")) != "True":
            continue
        said = ": ".join(x for x in (c.get("reason"), c.get("message")) if x)
        if c.get("type") in DONE:
            return "ok", said
        if c.get("type") == "Failed":
            return "failed", said or "no reason given"
    return None


def _kubectl(namespace: str | None) -> list[str]:
    return ["kubectl", *([f"--namespace={namespace}"] if namespace else [])]


def _get(args) -> tuple[dict | None, str]:
    argv = [*_kubectl(args.namespace), "get", args.kind, args.name, "-o", "json"]
    try:
        p = subprocess.run(argv, capture_output=True, text=True, timeout=120)
    except (OSError, subprocess.TimeoutExpired) as e:
        return None, str(e)
    if p.returncode:
        lines = [x for x in p.stderr.splitlines() if x.strip()]
        return None, lines[-1] if lines else f"exit code {p.returncode}"
    try:
        obj = json.loads(p.stdout)
    except ValueError:
        return None, "kubectl printed no JSON"
    return (obj, "") if isinstance(obj, dict) else (None, "kubectl printed no JSON object")


def save_logs(args) -> None:
    """Every container's log of the run's pods, prefixed by pod, into --logs (best effort)."""
    argv = [
        *_kubectl(args.namespace),
        "logs",
        "-l",
        f"tpubench/run={args.name}",
        "--all-containers=true",
        "--prefix=true",
        "--tail=-1",
    ]
    os.makedirs(os.path.dirname(os.path.abspath(args.logs)), exist_ok=True)
    with open(args.logs, "w") as f:
        try:
            code = subprocess.run(argv, stdout=f, stderr=subprocess.STDOUT, timeout=600).returncode
        except (OSError, subprocess.TimeoutExpired) as e:
            f.write(f"kubectl logs failed: {e}\n")
            code = 1
    try:
        saved = safe_files.read_tail(args.logs, "--logs", 1 << 20, "the pod logs just saved")
    except errors.UsageError:
        saved = b""
    tail = saved.decode("utf-8", errors="replace").splitlines()[-20:]
    print(f"pod logs ({'kubectl logs exit ' + str(code) if code else 'saved'}): {args.logs}")
    for line in tail:
        print(f"  {line}")


def wait(args) -> int:
    what = f"{args.kind} {args.name}"
    print(f"waiting for {what} (kubectl get every {args.poll:g} s)", flush=True)
    misses, last, started = 0, None, time.monotonic()
    while True:
        obj, why = _get(args)
        if obj is None:
            misses += 1
            if misses >= GIVE_UP_AFTER:
                print(f"error: kubectl get {what} failed {misses} times in a row: {why}")
                return 1
        else:
            misses = 0
            seen = condition(obj)
            if seen:
                break
            state = json.dumps((obj.get("status") or {}), sort_keys=True)[:200]
            if state != last:
                print(f"{what}: {state}", flush=True)
                last = state
        if args.timeout and time.monotonic() - started > args.timeout:
            print(f"error: {what} did not finish within {args.timeout:g} s")
            return 1
        time.sleep(args.poll)
    outcome, said = seen
    save_logs(args)
    if outcome == "ok":
        print(f"{what} completed" + (f" ({said})" if said else ""), flush=True)
        return 0
    print(f"error: {what} failed: {said}", flush=True)
    return 1


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m tpubench_launch.k8s.wait", description=__doc__)
    p.add_argument("--kind", required=True, choices=("job", "jobset"))
    p.add_argument("--name", required=True, help="the Job or JobSet")
    p.add_argument("--namespace", help="default: kubectl's current namespace")
    p.add_argument("--logs", required=True, help="file for the pods' logs")
    p.add_argument("--poll", type=float, default=10.0, help="seconds between polls (default 10)")
    p.add_argument("--timeout", type=float, help="give up after this many seconds")
    args = p.parse_args(argv)
    for key in ("poll", "timeout"):  # within their ranges (core/bounds.py)
        try:
            bounds.check_flag(key, getattr(args, key))
        except errors.UsageError as e:
            p.error(str(e))
    return wait(args)


if __name__ == "__main__":
    sys.exit(main())
