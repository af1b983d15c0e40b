"""Qwen's token profile, which both DashScope endpoints count with: the native one (``dashscope.py``) and the
compatible mode (``openai.py``'s ``dashscope-compatible``). Here, so that neither provider module imports the other
(``get("openai")`` imports the openai module alone)."""

from __future__ import annotations

from typing import Final

from agentmsg.providers.spec import TokenProfile

__all__ = ["QWEN_TOKENS"]

#: Qwen's chat template: <|im_start|>role\n ... <|im_end|>\n (5 tokens a message), the reply primed with
#: <|im_start|>assistant\n (3); a call as <tool_call> JSON </tool_call>, a result as <tool_response> ...
#: </tool_response> in its turn; tools as JSON lines inside the template's instructions (about 100 tokens). Not
#: measured (no official DashScope count at hand); audio and video rates unverified (their error is 1.0). The
#: compatible-mode endpoint (openai.py) counts with it too.
QWEN_TOKENS: Final = TokenProfile(
    vocab="qwen",
    own=True,
    per_message=5,
    priming=3,
    per_call=12,
    per_result=5,
    thinking="none",
    tools_base=100,
    per_tool=10,
    image="qwen",
    assistant_media=False,  # (an assistant turn's media: placeholders, natively and in compatible mode)
    result_text=True,
    result_messages=True,  # (a tool message per result, natively and in compatible mode)
    drop_empty=True,
    audio_per_second=25.0,
    video_per_second=200.0,
    timed_documented=False,
)
