"""The response side every provider reader shares: the one stream parser and the whole-reply reader
(``parser``), the builder that writes the AgentEvents (``builder``), and the readers of payload values
(``payload``, ``numbers``, ``partial_json``)."""
