"""Wire readers: bytes to payloads, with no agent or provider knowledge. SSE events (``sse``), lines
(``lines``), JSON values written one after another (``values``), and the framing that tells them apart in a
provider body (``framing``)."""
