"""Start and stop one simple_switch process, ready when its Thrift server answers the driver (bmv2_thrift.py)."""

from __future__ import annotations

import subprocess
import tempfile
import time
from pathlib import Path

from control_plane.bmv2_thrift import Bmv2ThriftDriver
from control_plane.driver import SwitchUnavailable
from p4rcp.control_ports import ControlPortGuard, GuardUnavailable
from p4rcp.toolchain import THRIFT_MISSING, grpc_switch_has_thrift, require_tool


class SwitchFailed(RuntimeError):
    pass


class SimpleSwitch:
    """simple_switch with the given program and ports, controllable from this machine only.

    ``interfaces`` maps port numbers to Linux interface names. Logging and
    pcap are off unless a path is given. ``binary="simple_switch_grpc"`` with
    ``json_path=None`` starts without a program, for a P4Runtime client to
    push one on ``grpc_port``; ``target_args`` go after ``--``.

    The Thrift server listens on every address (bmv2 cannot bind one), so a
    packet filter (p4rcp.control_ports) resets connections to the control
    ports that do not come from this machine, for the switch's lifetime; the
    P4Runtime server binds 127.0.0.1. ``expose_control_ports=True`` leaves
    both open to the network, for a testbed controlled from elsewhere.
    """

    def __init__(self, json_path: str | Path | None, interfaces: dict[int, str], thrift_port: int, *,
                 device_id: int = 0, log_file: str | Path | None = None, pcap_dir: str | Path | None = None,
                 extra_args: tuple[str, ...] = (), binary: str = "simple_switch", target_args: tuple[str, ...] = (),
                 grpc_port: int | None = None, expose_control_ports: bool = False):
        self.json_path = Path(json_path) if json_path is not None else None
        self.interfaces, self.thrift_port, self.binary, self.target_args = interfaces, thrift_port, binary, target_args
        self.device_id, self.log_file, self.pcap_dir, self.extra_args = device_id, log_file, pcap_dir, extra_args
        self.grpc_port, self.expose_control_ports = grpc_port, expose_control_ports
        self.process: subprocess.Popen | None = None
        self._guard: ControlPortGuard | None = None

    @property
    def notifications_socket(self) -> Path:
        return Path(f"/tmp/bmv2-p4rcp-{self.thrift_port}-notifications.ipc")

    @property
    def control_ports(self) -> list[int]:
        return [self.thrift_port] + ([self.grpc_port] if self.grpc_port is not None else [])

    def command(self) -> list[str]:
        # bmv2's default notifications socket is named after the device id only, so two switches of the same
        # device id on one machine (a PTF run beside an experiment or another checkout's tests) collide; the
        # Thrift port is unique per running switch.
        cmd = [require_tool(self.binary), "--device-id", str(self.device_id),
               "--thrift-port", str(self.thrift_port),
               "--notifications-addr", f"ipc://{self.notifications_socket}"]
        for number, iface in sorted(self.interfaces.items()):
            cmd += ["-i", f"{number}@{iface}"]
        if self.log_file:
            cmd += ["--log-file", str(self.log_file), "--log-flush"]
        if self.pcap_dir:
            cmd += ["--pcap", str(self.pcap_dir)]
        cmd += list(self.extra_args) + [str(self.json_path) if self.json_path else "--no-p4"]
        target_args = list(self.target_args)
        if self.grpc_port is not None:
            address = "0.0.0.0" if self.expose_control_ports else "127.0.0.1"
            target_args += ["--grpc-server-addr", f"{address}:{self.grpc_port}"]
        return cmd + (["--", *target_args] if target_args else [])

    def start(self, timeout_s: float = 15.0) -> "SimpleSwitch":
        if self.json_path is not None and not self.json_path.is_file():
            raise SwitchFailed(f"{self.json_path} does not exist: run 'make build'")
        command = self.command()
        if self.binary == "simple_switch_grpc" and not grpc_switch_has_thrift(command[0]):
            # Else it would start, serve P4Runtime, and never answer the readiness check below.
            raise SwitchFailed(THRIFT_MISSING.format(path=command[0]))
        if not self.expose_control_ports:
            try:
                self._guard = ControlPortGuard(self.control_ports).open()
            except GuardUnavailable as e:
                raise SwitchFailed(f"{self.binary} not started: {e}") from None
        # stderr to a file, never a pipe: an unread pipe would stall the switch.
        self._stderr = tempfile.TemporaryFile()
        try:
            self.process = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=self._stderr,
                                            start_new_session=True)
            self.wait_ready(timeout_s)
        except BaseException:
            self.stop()      # whatever went wrong, no switch is left behind
            raise
        return self

    def wait_ready(self, timeout_s: float) -> None:
        """Ready when its Thrift server answers a real request."""
        driver = Bmv2ThriftDriver(self.thrift_port)
        end = time.monotonic() + timeout_s
        while True:
            if self.process.poll() is not None:
                self._stderr.seek(0)
                err = self._stderr.read().decode(errors="replace").strip()
                raise SwitchFailed(f"{self.binary} exited with {self.process.returncode}: {err}")
            try:
                driver.connect()
                driver.close()
                return
            except SwitchUnavailable:
                if time.monotonic() > end:
                    self.stop()
                    raise SwitchFailed(f"{self.binary} did not answer on Thrift port {self.thrift_port} "
                                       f"within {timeout_s} s")
                time.sleep(0.05)

    @property
    def pid(self) -> int | None:
        return self.process.pid if self.process else None

    def stop(self) -> None:
        if self.process is not None and self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(5)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait(5)
        if self.process is not None:     # bmv2 leaves its notifications socket behind
            self.notifications_socket.unlink(missing_ok=True)
        if self._guard is not None:      # after the switch: its ports never open while it runs
            self._guard.close()
            self._guard = None

    def __enter__(self) -> "SimpleSwitch":
        return self.start()

    def __exit__(self, *exc) -> None:
        self.stop()
