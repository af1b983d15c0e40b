"""HTTP's token (RFC 9110 5.6.2): what a header name is (5.1), and each half of a MIME type's ``type/subtype``
(8.3.1). One pattern for the clients' ``headers=``, the event endpoint's extra headers and the media downloads'
Content-Type."""

from __future__ import annotations

import re
from typing import Final

__all__ = ["HEADER_NAME", "TOKEN"]

#: A token, as a regular expression (to build others from)
TOKEN: Final = r"[!#$%&'*+\-.^_`|~0-9A-Za-z]+"
#: A header name: one token
HEADER_NAME: Final = re.compile(TOKEN)
