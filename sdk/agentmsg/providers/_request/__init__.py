"""The request side every provider formatter shares: the per-call context and its diagnostics (``context``),
the conversation walks (``walk``, ``turns`` for role-alternating APIs, ``chat`` for chat-message APIs), tool
definitions and choices (``tools``), and media under the caller's policy (``media``, ``files``,
``download``, ``common``)."""
