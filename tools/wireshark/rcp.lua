-- Wireshark / tshark dissector for p4rcp: the 16-byte RCP header on UDP port 6577 and the end hosts'
-- transport header behind it, as docs/protocol.md specifies them (field by field, same names).
--
--   tshark -X lua_script:tools/wireshark/rcp.lua -r capture.pcap -Y rcp
--   wireshark -X lua_script:tools/wireshark/rcp.lua capture.pcap
-- or copy it into Wireshark's personal plugins folder (Help > About > Folders).
--
-- Rates are kb/s of Ethernet frames (docs/protocol.md, "Units"); rtt_us is microseconds.

local RCP_UDP_PORT = 6577
local RCP_HEADER_LEN = 16

local types = { [0] = "DATA", [1] = "ACK", [2] = "SYN", [3] = "SYNACK", [4] = "FIN", [5] = "FINACK", [6] = "REF",
                [7] = "REFACK" }
local schemes = { [0] = "other", [1] = "rcp", [2] = "allegro", [3] = "vivace", [4] = "vivace-loss",
                  [5] = "vivace-latency", [6] = "fixed", [7] = "allegro-ref", [8] = "vivace-stop", [9] = "vivace-loss-p4rcp" }

local rcp = Proto("rcp", "Rate Control Protocol (p4rcp)")
local f = {
    version = ProtoField.uint8("rcp.version", "Version", base.DEC, nil, 0xF0),
    type = ProtoField.uint8("rcp.type", "Type", base.DEC, types, 0x0F),
    flags = ProtoField.uint8("rcp.flags", "Flags", base.HEX),
    reserved = ProtoField.uint16("rcp.reserved", "Reserved", base.HEX),
    rate_kbps = ProtoField.uint32("rcp.rate_kbps", "Rate (kb/s)", base.DEC),
    rtt_us = ProtoField.uint32("rcp.rtt_us", "RTT (us)", base.DEC),
    feedback_kbps = ProtoField.uint32("rcp.feedback_kbps", "Feedback rate (kb/s)", base.DEC),
}
rcp.fields = { f.version, f.type, f.flags, f.reserved, f.rate_kbps, f.rtt_us, f.feedback_kbps }

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
    if len < 28 then return end
    local t = tree:add(host, buf(16))
    t:add(h.flow_id, buf(16, 4))
    t:add(h.pkt_seq, buf(20, 4))
    t:add(h.ts_us, buf(24, 4))
    if kind == 2 and len >= 40 then                         -- SYN
        t:add(h.total_size, buf(28, 8))
        t:add(h.mss, buf(36, 2))
        t:add(h.cc, buf(38, 1))
    elseif kind == 3 and len >= 32 then                     -- SYNACK
        t:add(h.window, buf(28, 4))
    elseif kind == 0 and len >= 36 then                     -- DATA
        t:add(h.offset, buf(28, 8))
        t:add(h.payload_len, buf(36), len - 36)
    elseif kind == 1 and len >= 44 then                     -- ACK
        t:add(h.cum_ack, buf(28, 8))
        t:add(h.window, buf(36, 4))
        t:add(h.sack_count, buf(40, 1))
        local n = buf(40, 1):uint()
        for i = 0, n - 1 do
            local at = 44 + 16 * i
            if at + 16 > len then break end
            t:add(h.sack_start, buf(at, 8))
            t:add(h.sack_end, buf(at + 8, 8))
        end
    elseif kind == 4 and len >= 36 then                     -- FIN
        t:add(h.final_size, buf(28, 8))
    elseif kind == 5 and len >= 40 then                     -- FINACK
        t:add(h.cum_ack, buf(28, 8))
        t:add(h.status, buf(36, 1))
    end
    -- REF (6) and REFACK (7) carry the 12 common bytes only.
end

function rcp.dissector(buf, pinfo, tree)
    if buf:len() < RCP_HEADER_LEN then return 0 end
    local kind = buf(0, 1):bitfield(4, 4)
    pinfo.cols.protocol = "RCP"
    local name = types[kind] or ("type " .. kind)
    local t = tree:add(rcp, buf(0, RCP_HEADER_LEN), "RCP " .. name)
    t:add(f.version, buf(0, 1))
    t:add(f.type, buf(0, 1))
    t:add(f.flags, buf(1, 1))
    t:add(f.reserved, buf(2, 2))
    t:add(f.rate_kbps, buf(4, 4))
    t:add(f.rtt_us, buf(8, 4))
    t:add(f.feedback_kbps, buf(12, 4))
    pinfo.cols.info = string.format("RCP %s rate=%d kb/s rtt=%d us feedback=%d kb/s", name, buf(4, 4):uint(),
                                    buf(8, 4):uint(), buf(12, 4):uint())
    dissect_host(buf, kind, tree)
    return buf:len()
end

DissectorTable.get("udp.port"):add(RCP_UDP_PORT, rcp)
