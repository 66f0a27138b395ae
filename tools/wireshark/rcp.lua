-- Wireshark / tshark dissector for p4rcp: the 16-byte RCP header on UDP port 6577, XCP's congestion header
-- where the RCP header's flags announce it (docs/xcp.md), and the end hosts' transport header behind them, as
-- docs/protocol.md specifies them (field by field, same names).
--
--   tshark -X lua_script:tools/wireshark/rcp.lua -r capture.pcap -Y rcp
--   wireshark -X lua_script:tools/wireshark/rcp.lua capture.pcap
-- or copy it into Wireshark's personal plugins folder (Help > About > Folders).
--
-- Rates are kb/s of Ethernet frames (docs/protocol.md, "Units"); rtt_us is microseconds.

-- The wire's constants as hosts/include/p4rcp_wire.h has them (generated from hosts/src/transport/wire.rs,
-- the one definition; each name here is its P4RCP_ macro's), since a dissector must stand alone in a plugins
-- folder; tools/tests/test_wireshark_dissector.py fails while they differ.
local UDP_PORT = 6577
local HEADER_LEN = 16
local FLAGS_OFFSET = 1
local SIZE_OFFSET = 2
local RATE_OFFSET = 4
local RTT_OFFSET = 8
local FEEDBACK_OFFSET = 12
local FLOW_ID_OFFSET = 16
local PKT_SEQ_OFFSET = 20
local TS_OFFSET = 24
local BODY_OFFSET = 28
local SYN_LEN = 40
local SYNACK_LEN = 32
local DATA_HEADER_LEN = 36
local ACK_LEN = 44
local SACK_LEN = 16
local FIN_LEN = 36
local FINACK_LEN = 40
local REF_LEN = 28
local TYPE_DATA = 0
local TYPE_ACK = 1
local TYPE_SYN = 2
local TYPE_SYNACK = 3
local TYPE_FIN = 4
local TYPE_FINACK = 5
local FLAG_XCP = 0x80
local XCP_HEADER_LEN = 12
local XCP_CWND_OFFSET = 16
local XCP_X_OFFSET = 20
local XCP_FEEDBACK_OFFSET = 24

local types = { [0] = "DATA", [1] = "ACK", [2] = "SYN", [3] = "SYNACK", [4] = "FIN", [5] = "FINACK", [6] = "REF",
                [7] = "REFACK" }
local schemes = { [0] = "other", [1] = "rcp", [2] = "allegro", [3] = "vivace", [4] = "vivace-loss",
                  [5] = "vivace-latency", [6] = "fixed", [7] = "allegro-ref", [8] = "vivace-stop", [9] = "vivace-loss-p4rcp",
                  [10] = "xcp" }

local rcp = Proto("rcp", "Rate Control Protocol (p4rcp)")
local f = {
    version = ProtoField.uint8("rcp.version", "Version", base.DEC, nil, 0xF0),
    type = ProtoField.uint8("rcp.type", "Type", base.DEC, types, 0x0F),
    flags = ProtoField.uint8("rcp.flags", "Flags", base.HEX),
    size = ProtoField.uint16("rcp.size", "Flow size (DATA packets)", base.DEC),
    rate_kbps = ProtoField.uint32("rcp.rate_kbps", "Rate (kb/s)", base.DEC),
    rtt_us = ProtoField.uint32("rcp.rtt_us", "RTT (us)", base.DEC),
    feedback_kbps = ProtoField.uint32("rcp.feedback_kbps", "Feedback rate (kb/s)", base.DEC),
}
rcp.fields = { f.version, f.type, f.flags, f.size, f.rate_kbps, f.rtt_us, f.feedback_kbps }

-- XCP's congestion header (docs/xcp.md): between the RCP header and the host header when flags hold FLAG_XCP.
local xcp = Proto("xcp", "XCP congestion header (p4rcp)")
local x = {
    cwnd = ProtoField.uint32("xcp.cwnd", "H_cwnd (frame bytes)", base.DEC),
    x_ns = ProtoField.uint32("xcp.x_ns", "x = rtt s / cwnd (ns)", base.DEC),
    feedback = ProtoField.int32("xcp.feedback", "H_feedback (bytes)", base.DEC),
}
xcp.fields = { x.cwnd, x.x_ns, x.feedback }

local host = Proto("p4rcp_host", "p4rcp host transport")
local h = {
    flow_id = ProtoField.uint32("p4rcp_host.flow_id", "Flow id", base.DEC),
    pkt_seq = ProtoField.uint32("p4rcp_host.pkt_seq", "Transmission number", base.DEC),
    ts_us = ProtoField.uint32("p4rcp_host.ts_us", "Timestamp (us)", base.DEC),
    total_size = ProtoField.uint64("p4rcp_host.total_size", "Flow size (bytes)", base.DEC),
    mss = ProtoField.uint16("p4rcp_host.mss", "MSS (bytes)", base.DEC),
    cc = ProtoField.uint8("p4rcp_host.cc", "Scheme", base.DEC, schemes),
    window = ProtoField.uint32("p4rcp_host.window", "Window (bytes)", base.DEC),
    offset = ProtoField.uint64("p4rcp_host.offset", "Stream offset", base.DEC),
    payload_len = ProtoField.uint32("p4rcp_host.payload_len", "Payload (bytes)", base.DEC),
    cum_ack = ProtoField.uint64("p4rcp_host.cum_ack", "Cumulative ack", base.DEC),
    sack_count = ProtoField.uint8("p4rcp_host.sack_count", "SACK blocks", base.DEC),
    sack_start = ProtoField.uint64("p4rcp_host.sack_start", "SACK start", base.DEC),
    sack_end = ProtoField.uint64("p4rcp_host.sack_end", "SACK end", base.DEC),
    final_size = ProtoField.uint64("p4rcp_host.final_size", "Final size (bytes)", base.DEC),
    status = ProtoField.uint8("p4rcp_host.status", "Status (bit 0: verified)", base.HEX),
}
host.fields = { h.flow_id, h.pkt_seq, h.ts_us, h.total_size, h.mss, h.cc, h.window, h.offset, h.payload_len,
                h.cum_ack, h.sack_count, h.sack_start, h.sack_end, h.final_size, h.status }

-- The transport behind the RCP header (offsets from the UDP payload's start, docs/protocol.md).
local function dissect_host(buf, kind, tree)
    local len = buf:len()
    if len < REF_LEN then return end
    local t = tree:add(host, buf(HEADER_LEN))
    t:add(h.flow_id, buf(FLOW_ID_OFFSET, 4))
    t:add(h.pkt_seq, buf(PKT_SEQ_OFFSET, 4))
    t:add(h.ts_us, buf(TS_OFFSET, 4))
    local b = BODY_OFFSET
    if kind == TYPE_SYN and len >= SYN_LEN then
        t:add(h.total_size, buf(b, 8))
        t:add(h.mss, buf(b + 8, 2))
        t:add(h.cc, buf(b + 10, 1))
    elseif kind == TYPE_SYNACK and len >= SYNACK_LEN then
        t:add(h.window, buf(b, 4))
    elseif kind == TYPE_DATA and len >= DATA_HEADER_LEN then
        t:add(h.offset, buf(b, 8))
        t:add(h.payload_len, buf(DATA_HEADER_LEN), len - DATA_HEADER_LEN)
    elseif kind == TYPE_ACK and len >= ACK_LEN then
        t:add(h.cum_ack, buf(b, 8))
        t:add(h.window, buf(b + 8, 4))
        t:add(h.sack_count, buf(b + 12, 1))
        local n = buf(b + 12, 1):uint()
        for i = 0, n - 1 do
            local at = ACK_LEN + SACK_LEN * i
            if at + SACK_LEN > len then break end
            t:add(h.sack_start, buf(at, 8))
            t:add(h.sack_end, buf(at + 8, 8))
        end
    elseif kind == TYPE_FIN and len >= FIN_LEN then
        t:add(h.final_size, buf(b, 8))
    elseif kind == TYPE_FINACK and len >= FINACK_LEN then
        t:add(h.cum_ack, buf(b, 8))
        t:add(h.status, buf(b + 8, 1))
    end
    -- REF and REFACK carry the common bytes only.
end

function rcp.dissector(buf, pinfo, tree)
    if buf:len() < HEADER_LEN then return 0 end
    local kind = buf(0, 1):bitfield(4, 4)
    pinfo.cols.protocol = "RCP"
    local name = types[kind] or ("type " .. kind)
    local t = tree:add(rcp, buf(0, HEADER_LEN), "RCP " .. name)
    t:add(f.version, buf(0, 1))
    t:add(f.type, buf(0, 1))
    t:add(f.flags, buf(FLAGS_OFFSET, 1))
    t:add(f.size, buf(SIZE_OFFSET, 2))
    t:add(f.rate_kbps, buf(RATE_OFFSET, 4))
    t:add(f.rtt_us, buf(RTT_OFFSET, 4))
    t:add(f.feedback_kbps, buf(FEEDBACK_OFFSET, 4))
    pinfo.cols.info = string.format("RCP %s rate=%d kb/s rtt=%d us feedback=%d kb/s", name,
                                    buf(RATE_OFFSET, 4):uint(), buf(RTT_OFFSET, 4):uint(),
                                    buf(FEEDBACK_OFFSET, 4):uint())
    -- With the XCP header the host header moves by its length; its offsets count from the payload's start, so
    -- it is read from a buffer that starts that much later.
    local hosts_buf = buf
    if bit.band(buf(FLAGS_OFFSET, 1):uint(), FLAG_XCP) ~= 0 then
        if buf:len() < HEADER_LEN + XCP_HEADER_LEN then return buf:len() end
        local xt = tree:add(xcp, buf(HEADER_LEN, XCP_HEADER_LEN))
        xt:add(x.cwnd, buf(XCP_CWND_OFFSET, 4))
        xt:add(x.x_ns, buf(XCP_X_OFFSET, 4))
        xt:add(x.feedback, buf(XCP_FEEDBACK_OFFSET, 4))
        pinfo.cols.info:append(string.format(" xcp cwnd=%d x=%d ns feedback=%d", buf(XCP_CWND_OFFSET, 4):uint(),
                                             buf(XCP_X_OFFSET, 4):uint(), buf(XCP_FEEDBACK_OFFSET, 4):int()))
        hosts_buf = buf(XCP_HEADER_LEN):tvb()
    end
    dissect_host(hosts_buf, kind, tree)
    return buf:len()
end

DissectorTable.get("udp.port"):add(UDP_PORT, rcp)
