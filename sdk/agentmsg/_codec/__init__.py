"""The message codec: the schemas and their validation, JSON text in and out under the limits, the cattrs
converter and the msgspec decode fast path, unknown keys and timestamps. Nothing here knows a provider."""
