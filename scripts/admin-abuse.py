#!/usr/bin/env python3
"""Bad clients against a running cxds admin port (issue 11), for before/after figures.

  scripts/admin-abuse.py --admin 127.0.0.1:15014 slowloris   # /ready latency with 10 slowloris
  scripts/admin-abuse.py --admin 127.0.0.1:15014 concurrent  # 1,000 concurrent GET /healthz

slowloris: opens N connections that send a partial request header and then one more header
byte every few seconds (never the end), then times M sequential GET /ready, each on a new
connection with a 30 s bound. concurrent: opens N connections at once, each sends GET /healthz
and reads until the server closes; after the bound (30 s) it counts answers by status.
Only the standard library; loopback addresses only.
"""
import argparse
import asyncio
import time


async def get(host, port, path, timeout):
    start = time.monotonic()
    try:
        reader, writer = await asyncio.wait_for(asyncio.open_connection(host, port), timeout)
        writer.write(f"GET {path} HTTP/1.1\r\nHost: {host}\r\nConnection: close\r\n\r\n".encode())
        await writer.drain()
        data = await asyncio.wait_for(reader.read(), timeout - (time.monotonic() - start))
        writer.close()
        status = data[9:12].decode() if data.startswith(b"HTTP/1.1 ") else "none"
    except asyncio.TimeoutError:
        status = "timeout"
    except OSError as error:
        status = type(error).__name__
    return status, time.monotonic() - start


async def slowloris(host, port, count, probes, interval):
    slow = []
    for _ in range(count):
        reader, writer = await asyncio.open_connection(host, port)
        writer.write(b"GET /ready HTTP/1.1\r\nHost: x\r\nX-Slow: ")
        slow.append(writer)

    async def trickle():
        while True:
            await asyncio.sleep(interval)
            for writer in slow:
                if not writer.is_closing():
                    writer.write(b"a")

    trickler = asyncio.create_task(trickle())
    await asyncio.sleep(0.5)
    for i in range(probes):
        status, took = await get(host, port, "/ready", 30.0)
        print(f"slowloris={count} probe={i} /ready status={status} latency_s={took:.3f}", flush=True)
    trickler.cancel()
    for writer in slow:
        writer.close()


async def concurrent(host, port, count, bound):
    start = time.monotonic()
    tasks = [asyncio.create_task(get(host, port, "/healthz", bound)) for _ in range(count)]
    done, pending = await asyncio.wait(tasks, timeout=bound + 1)
    took = time.monotonic() - start
    statuses = {}
    for task in done:
        status, _ = task.result()
        statuses[status] = statuses.get(status, 0) + 1
    statuses["still_pending"] = len(pending)
    answered = sum(v for k, v in statuses.items() if k.isdigit())
    slowest = max((t.result()[1] for t in done if t.result()[0].isdigit()), default=0)
    print(f"concurrent={count} answered={answered} statuses={statuses} "
          f"all_done_s={took:.3f} slowest_answer_s={slowest:.3f}", flush=True)
    for task in pending:
        task.cancel()


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--admin", default="127.0.0.1:15014")
    parser.add_argument("mode", choices=["slowloris", "concurrent"])
    parser.add_argument("--count", type=int, default=0, help="10 slowloris, 1000 concurrent")
    parser.add_argument("--probes", type=int, default=3)
    parser.add_argument("--interval", type=float, default=2.0, help="seconds between trickled bytes")
    parser.add_argument("--bound", type=float, default=30.0)
    args = parser.parse_args()
    host, port = args.admin.rsplit(":", 1)
    if args.mode == "slowloris":
        asyncio.run(slowloris(host, int(port), args.count or 10, args.probes, args.interval))
    else:
        asyncio.run(concurrent(host, int(port), args.count or 1000, args.bound))


if __name__ == "__main__":
    main()
