"""A notebook's Jupyter kernel inside the sandbox: ``SandboxedKernelManager`` starts ipykernel in ``bwrap`` with
the view, limits and empty environment of every other sandboxed run (``nkilab.isolate.sandbox``), for nbclient (and so
nbgrader's execute step) to talk to as to any local kernel.

A kernel and its client talk over five ZeroMQ sockets.  The sandbox has a network namespace of its own (nothing
in it, not even the host's loopback) and a private ``/tmp``, so the kernel listens on Unix sockets there
(``transport = "ipc"``) and the client reaches them through ``/proc/<sandbox init>/root/tmp`` -- the sandbox's
own file system as the host sees it.  Nothing is shared with the host but those sockets; nothing the kernel
writes lands on the host's disk (the 64 MiB tmpfs holds it, and goes with the sandbox).

What the kernel can reach is hostile from its first cell on, so the client connects only once, before any cell
runs: it waits until each socket exists as a socket (not a link), connects, and never reconnects (a cell could
replace a socket with a link to one of the host's, and a reconnecting client would follow it); the heartbeat
channel, which reconnects by design, is not started (the manager knows whether the process lives).  Interrupts
go as messages (``interrupt_mode = "message"``: a signal to ``bwrap`` would not reach the kernel), and the
manager never deletes anything under the sandbox's path (its process id may already be another's)."""

from __future__ import annotations

import json
import os
import stat
import subprocess
import sys
import time
from typing import Any

import zmq
from jupyter_client.asynchronous import AsyncKernelClient
from jupyter_client.connect import channel_socket_types
from jupyter_client.kernelspec import KernelSpec
from jupyter_client.manager import AsyncKernelManager
from traitlets import Instance, Type

from nkilab.isolate import sandbox

#: where the kernel's sockets are, inside the sandbox (``<IPC_PREFIX>-<port>``), and its connection file
IPC_PREFIX = f"{sandbox.SCRATCH}/nkilab-kernel"
CONNECTION_FILE = f"{sandbox.KERNEL_DIR}/connection.json"
CHANNELS = ("shell_port", "iopub_port", "stdin_port", "control_port", "hb_port")
#: the largest message the grader takes from the kernel (a larger one ends the connection: the cells left time out)
MAX_MESSAGE_BYTES = 64 << 20


def kernel_limits(cpu_s: int) -> sandbox.Limits:
    """A notebook kernel's limits: the sandbox's, with room for ipykernel's threads (about 15)."""
    return sandbox.Limits(cpu_s=cpu_s, processes=32)


class _OnceConnected:
    """Sockets that connect once and never follow the path again (see the module docstring)."""

    def _create_connected_socket(self, channel: str, identity: bytes | None = None) -> zmq.Socket:
        url = self._make_url(channel)  # type: ignore[attr-defined]
        sock = self.context.socket(channel_socket_types[channel])  # type: ignore[attr-defined]
        sock.linger = 1000
        sock.setsockopt(zmq.RECONNECT_IVL, -1)
        sock.setsockopt(zmq.MAXMSGSIZE, MAX_MESSAGE_BYTES)
        if identity:
            sock.identity = identity
        sock.connect(url)
        return sock


class SandboxedKernelClient(_OnceConnected, AsyncKernelClient):
    """nbclient's kernel client, connected once, without the heartbeat channel."""

    def start_channels(self, shell: bool = True, iopub: bool = True, stdin: bool = True, hb: bool = True,
                       control: bool = True) -> None:
        super().start_channels(shell=shell, iopub=iopub, stdin=stdin, hb=False, control=control)


class SandboxedKernelManager(_OnceConnected, AsyncKernelManager):
    """ipykernel in the sandbox (see the module docstring).  Whatever kernel the notebook names, this runs the
    grader's own Python and ipykernel, under ``limits``."""

    client_factory = Type(klass=AsyncKernelClient, default_value=SandboxedKernelClient)
    limits = Instance(sandbox.Limits, kw=dict(cpu_s=600, processes=32))
    #: the sandbox's first process, as this process sees it (None before it starts)
    sandbox_pid: int | None = None

    def __init__(self, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.transport = "ipc"
        self.ip = IPC_PREFIX
        self._kernel_spec = KernelSpec(argv=[sys.executable, "-m", "ipykernel_launcher", "-f", CONNECTION_FILE],
                                       display_name="Python 3 (nkilab sandbox)", language="python",
                                       interrupt_mode="message")
        self._command: sandbox.Command | None = None

    @property
    def ipykernel(self) -> bool:
        return True

    def format_kernel_cmd(self, extra_arguments: list[str] | None = None) -> list[str]:
        """The sandbox command; the kernel reads its connection file (sockets in its own ``/tmp``) inside."""
        info = dict(self.get_connection_info(), ip=IPC_PREFIX, transport="ipc", kernel_name="python3")
        info["key"] = info["key"].decode() if isinstance(info["key"], bytes) else info["key"]
        spec = self.kernel_spec
        assert spec is not None  # set in __init__, never cleared
        argv = [*spec.argv, *(extra_arguments or [])]
        self._command = sandbox.command(argv, None, sandbox.environment({}), self.limits,
                                        files={CONNECTION_FILE: json.dumps(info).encode()})
        return self._command.argv

    async def _async_pre_start_kernel(self, **kw: Any) -> tuple[list[str], dict[str, Any]]:
        self.ip = IPC_PREFIX  # a restart writes the sandbox's path again, not the host's view of the last one
        return await super()._async_pre_start_kernel(**kw)

    async def _async_launch_kernel(self, kernel_cmd: list[str], **kw: Any) -> None:
        command = self._command
        assert command is not None and self.provisioner is not None
        kw.update(cwd="/", env={"PATH": os.environ.get("PATH", "/usr/bin:/bin")}, stdin=subprocess.DEVNULL,
                  stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, pass_fds=command.fds,
                  preexec_fn=sandbox.preexec(self.limits, command))
        try:
            info = await self.provisioner.launch_kernel(kernel_cmd, **kw)
            self._reconcile_connection_info(info)
            pid = command.started()
        finally:
            command.close()
            self._command = None
        if pid is None:
            raise RuntimeError("the notebook's sandbox did not start")
        self.sandbox_pid = pid
        root = f"/proc/{pid}/root"
        await self._sockets_ready(root + IPC_PREFIX)
        self.ip = root + IPC_PREFIX

    async def _sockets_ready(self, prefix: str, timeout: float = 60.0) -> None:
        """Wait until the kernel listens on every socket (each a socket, not a link) or its sandbox ends."""
        import asyncio

        deadline = time.monotonic() + timeout
        ports = [getattr(self, name) for name in CHANNELS]
        while time.monotonic() < deadline:
            if all(_is_socket(f"{prefix}-{port}") for port in ports):
                return
            if self.provisioner is None or await self.provisioner.poll() is not None:
                break
            await asyncio.sleep(0.05)
        raise RuntimeError("the notebook's kernel did not start in its sandbox")

    def cleanup_ipc_files(self) -> None:
        """Nothing: the sockets live in the sandbox's tmpfs, which ends with it (and its process id may be reused)."""


def _is_socket(path: str) -> bool:
    try:
        return stat.S_ISSOCK(os.lstat(path).st_mode)
    except OSError:
        return False
