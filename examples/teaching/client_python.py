#!/usr/bin/python3
"""Long-lived proxyless gRPC xDS client (Python, Debian python3-grpcio 1.51, gRPC C core).

    GRPC_XDS_BOOTSTRAP=/path/bootstrap.json \
    GRPC_CLIENT_CHANNEL_BACKUP_POLL_INTERVAL_MS=100 \
    /usr/bin/python3 examples/teaching/client_python.py

Commands on stdin, one per line, handled in order:
  call <request_id>   one unary call of /cxds.teaching.Inventory/GetQuote on xds:///quote;
                      prints exactly one JSON line:
                      {"request_id","ok","inventory","port","error","code","elapsed_ms"}
  quit                exit 0 (end of stdin does the same)
Nothing else is written to stdout; diagnostics go to stderr.

Environment:
  GRPC_XDS_BOOTSTRAP        bootstrap file (read by the C core)
  CXDS_TEACHING_TARGET      testing only: another target, e.g. dns:///127.0.0.1:18080
  CXDS_TEACHING_DEADLINE_MS per-call deadline (default 3000)
  CXDS_TEACHING_MAX_SECONDS exit by itself after this many seconds (default 900; 0 disables)
"""

import json
import os
import sys
import threading
import time

import grpc

METHOD_PATH = "/cxds.teaching.Inventory/GetQuote"
TARGET = os.environ.get("CXDS_TEACHING_TARGET") or "xds:///quote"
DEADLINE_S = int(os.environ.get("CXDS_TEACHING_DEADLINE_MS") or "3000") / 1000.0
MAX_SECONDS = float(os.environ.get("CXDS_TEACHING_MAX_SECONDS") or "900")


def emit(obj):
    sys.stdout.write(json.dumps(obj, separators=(",", ":")) + "\n")
    sys.stdout.flush()


def call_once(method, request_id):
    started = time.monotonic()

    def elapsed_ms():
        return int((time.monotonic() - started) * 1000)

    request = json.dumps({"sku": "paper", "request_id": request_id}).encode("utf-8")
    try:
        raw = method(request, timeout=DEADLINE_S)
    except grpc.RpcError as err:
        code = err.code() if hasattr(err, "code") else None
        return {
            "request_id": request_id,
            "ok": False,
            "inventory": None,
            "port": None,
            "error": err.details() if hasattr(err, "details") else str(err),
            "code": code.value[0] if code is not None else None,
            "elapsed_ms": elapsed_ms(),
        }
    try:
        reply = json.loads(raw.decode("utf-8"))
    except (UnicodeDecodeError, ValueError) as err:
        return {
            "request_id": request_id,
            "ok": False,
            "inventory": None,
            "port": None,
            "error": "reply is not JSON: %s" % err,
            "code": 0,
            "elapsed_ms": elapsed_ms(),
        }
    ok = isinstance(reply, dict) and reply.get("request_id") == request_id
    return {
        "request_id": request_id,
        "ok": ok,
        "inventory": reply.get("inventory") if isinstance(reply, dict) else None,
        "port": reply.get("port") if isinstance(reply, dict) else None,
        "error": None if ok else "reply does not echo the request_id",
        "code": 0,
        "elapsed_ms": elapsed_ms(),
    }


def main():
    if MAX_SECONDS > 0:
        def expire():
            sys.stderr.write("client_python: max lifetime of %ss reached\n" % MAX_SECONDS)
            sys.stderr.flush()
            os._exit(3)

        timer = threading.Timer(MAX_SECONDS, expire)
        timer.daemon = True
        timer.start()

    channel = grpc.insecure_channel(TARGET)

    # Leave IDLE right away so the ADS stream is opened before the first call. The
    # subscription is one-shot: grpcio polls connectivity in a helper thread while any callback
    # is subscribed, and that thread must be gone before the channel is closed.
    def kick_once(_state):
        channel.unsubscribe(kick_once)

    channel.subscribe(kick_once, try_to_connect=True)
    # No serializers: the method takes and returns raw bytes (the JSON payload).
    method = channel.unary_unary(METHOD_PATH)

    for line in sys.stdin:
        parts = line.split()
        if not parts:
            continue
        if parts[0] == "call" and len(parts) == 2:
            emit(call_once(method, parts[1]))
        elif parts[0] == "quit":
            break
        else:
            sys.stderr.write("client_python: ignoring unknown command: %s\n" % line.strip())
            sys.stderr.flush()
    channel.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
