#!/usr/bin/env python3
"""Forwards a free loopback port of the host to an address inside another network namespace.

The test cluster's API server listens in the cluster's own network namespace (10.99.0.1:6443
there); tests and ipamctl on the host reach it through this process. It binds 127.0.0.1:0 in
the namespace it starts in (the host's), writes the port to PORT_FILE, then enters the network
namespace of TARGET_PID with setns(2) — so every connection it opens afterwards starts there —
and copies bytes both ways for each accepted connection (TLS passes through untouched).

Usage: api-forward.py PORT_FILE TARGET_PID HOST:PORT
Stops on SIGTERM; test/cluster/down.sh stops it by its recorded PID.
"""
import asyncio
import ctypes
import os
import signal
import socket
import sys

CLONE_NEWNET = 0x40000000  # <sched.h>


def enter_netns(pid: int) -> None:
    libc = ctypes.CDLL(None, use_errno=True)
    fd = os.open(f"/proc/{pid}/ns/net", os.O_RDONLY)
    try:
        if libc.setns(fd, CLONE_NEWNET) != 0:
            err = ctypes.get_errno()
            raise OSError(err, f"setns into the network namespace of {pid}: {os.strerror(err)}")
    finally:
        os.close(fd)


async def pipe(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
    try:
        while data := await reader.read(65536):
            writer.write(data)
            await writer.drain()
    except (ConnectionError, OSError):
        pass
    finally:
        try:
            writer.close()
        except OSError:
            pass


async def serve(listener: socket.socket, host: str, port: int) -> None:
    async def handle(cr: asyncio.StreamReader, cw: asyncio.StreamWriter) -> None:
        try:
            ur, uw = await asyncio.open_connection(host, port)
        except OSError:
            cw.close()
            return
        await asyncio.gather(pipe(cr, uw), pipe(ur, cw))

    server = await asyncio.start_server(handle, sock=listener)
    stop = asyncio.get_running_loop().create_future()
    asyncio.get_running_loop().add_signal_handler(signal.SIGTERM, stop.set_result, None)
    async with server:
        await stop


def main() -> None:
    port_file, target_pid, target = sys.argv[1], int(sys.argv[2]), sys.argv[3]
    host, port = target.rsplit(":", 1)
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen(128)
    enter_netns(target_pid)
    with open(port_file + ".tmp", "w") as f:
        f.write(str(listener.getsockname()[1]))
    os.rename(port_file + ".tmp", port_file)
    asyncio.run(serve(listener, host, int(port)))


if __name__ == "__main__":
    main()
