"""Wire readers: bytes to payloads, with no agent or provider knowledge. SSE events (``sse``), lines
(``lines``), JSON values written one after another (``values``), the framing that tells them apart in a
provider body (``framing``), the JSON records of a file of instances: one value, an array or JSON Lines
(``records``, public as ``agentmsg.read_records``), and a stream whose first bytes are read ahead to tell what it
holds, then served again (``peek``, public as ``agentmsg.Peeked``); and HTTP's token, a header name's and a MIME type's syntax (``token``)."""
