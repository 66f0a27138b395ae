"""Starting a switch (control_plane/simple_switch.py) with a bmv2 build that cannot serve p4rcp."""

from __future__ import annotations

import pytest

from control_plane.simple_switch import SimpleSwitch, SwitchFailed


def test_a_grpc_switch_without_thrift_is_refused_before_it_starts(tmp_path, monkeypatch):
    binary = tmp_path / "simple_switch_grpc"
    # What the binary of a build configured without --with-thrift carries (bmv2's switch_runner.cpp); the
    # script exits at once if run, so a start that went ahead would fail on the exit, not on the check.
    binary.write_bytes(b"#!/bin/sh\nexit 3\n# grpc-server-addr\n# this target was compiled without Thrift support\n")
    binary.chmod(0o755)
    monkeypatch.setenv("PATH", str(tmp_path))
    switch = SimpleSwitch(None, {}, thrift_port=1, binary="simple_switch_grpc", grpc_port=2)
    with pytest.raises(SwitchFailed, match=r"built without Thrift.*--with-thrift"):
        switch.start()
    assert switch.process is None
