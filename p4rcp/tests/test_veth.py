"""Veth pairs and the capture socket (root: network interfaces)."""

from __future__ import annotations

import os
import socket

import pytest

from p4rcp.veth import VethPairs, capture_socket

FRAME = bytes.fromhex("ffffffffffff" "000000000001" "88b5") + bytes(50)     # local experimental EtherType


@pytest.mark.skipif(os.geteuid() != 0, reason="creating veth pairs needs root")
def test_a_capture_socket_receives_its_interface_only():
    with VethPairs(2, tag="cs") as veths, capture_socket(veths.host_side[0]) as rx, \
            socket.socket(socket.AF_PACKET, socket.SOCK_RAW) as tx:
        rx.settimeout(0.3)
        tx.bind((veths.host_side[1], 0))      # out of the other pair: never seen by rx
        tx.send(FRAME)
        with pytest.raises(TimeoutError):
            while True:
                if rx.recv(2048) == FRAME:
                    break
        with socket.socket(socket.AF_PACKET, socket.SOCK_RAW) as into:
            into.bind((veths.switch_side[0], 0))     # into rx's own interface, from its peer
            into.send(FRAME)
            frames = []
            while FRAME not in frames:
                frames.append(rx.recv(2048))
