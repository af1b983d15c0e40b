/** Wire shape of every titled object a message holds (see scripts/build.mjs, shapes()). */
export const shapes = {
    "AudioBlock": [
        {
            "key": "type",
            "mode": "required",
            "shape": null
        },
        {
            "key": "source",
            "mode": "required",
            "shape": {
                "union": {
                    "url": "URLSource",
                    "base64": "Base64Source"
                }
            }
        }
    ],
    "Base64Source": [
        {
            "key": "type",
            "mode": "required",
            "shape": null
        },
        {
            "key": "media_type",
            "mode": "required",
            "shape": null
        },
        {
            "key": "data",
            "mode": "required",
            "shape": null
        }
    ],
    "ChatUsage": [
        {
            "key": "inputTokens",
            "mode": "optional",
            "shape": null
        },
        {
            "key": "outputTokens",
            "mode": "optional",
            "shape": null
        },
        {
            "key": "cachedTokens",
            "mode": "optional",
            "shape": null
        },
        {
            "key": "time",
            "mode": "optional",
            "shape": null
        },
        {
            "key": "totalTokens",
            "mode": "optional",
            "shape": null
        }
    ],
    "DataBlock": [
        {
            "key": "type",
            "mode": "required",
            "shape": null
        },
        {
            "key": "source",
            "mode": "required",
            "shape": {
                "union": {
                    "url": "URLSource",
                    "base64": "Base64Source"
                }
            }
        },
        {
            "key": "id",
            "mode": "optional",
            "shape": null
        },
        {
            "key": "name",
            "mode": "optional",
            "shape": null
        }
    ],
    "HintBlock": [
        {
            "key": "type",
            "mode": "required",
            "shape": null
        },
        {
            "key": "id",
            "mode": "nullable",
            "shape": null
        },
        {
            "key": "hint",
            "mode": "required",
            "shape": null
        },
        {
            "key": "source",
            "mode": "nullable",
            "shape": null
        }
    ],
    "ImageBlock": [
        {
            "key": "type",
            "mode": "required",
            "shape": null
        },
        {
            "key": "source",
            "mode": "required",
            "shape": {
                "union": {
                    "url": "URLSource",
                    "base64": "Base64Source"
                }
            }
        },
        {
            "key": "minPixels",
            "mode": "optional",
            "shape": null,
            "alt": "min_pixels"
        },
        {
            "key": "maxPixels",
            "mode": "optional",
            "shape": null,
            "alt": "max_pixels"
        }
    ],
    "Msg": [
        {
            "key": "id",
            "mode": "required",
            "shape": null
        },
        {
            "key": "name",
            "mode": "nullable",
            "shape": null
        },
        {
            "key": "role",
            "mode": "required",
            "shape": null
        },
        {
            "key": "content",
            "mode": "required",
            "shape": {
                "array": {
                    "union": {
                        "text": "TextBlock",
                        "thinking": "ThinkingBlock",
                        "image": "ImageBlock",
                        "audio": "AudioBlock",
                        "video": "VideoBlock",
                        "data": "DataBlock",
                        "tool_use": "ToolUseBlock",
                        "tool_result": "ToolResultBlock",
                        "hint": "HintBlock"
                    }
                }
            }
        },
        {
            "key": "metadata",
            "mode": "default",
            "shape": null,
            "default": {}
        },
        {
            "key": "timestamp",
            "mode": "nullable",
            "shape": null
        },
        {
            "key": "usage",
            "mode": "nullable",
            "shape": "ChatUsage"
        }
    ],
    "TextBlock": [
        {
            "key": "type",
            "mode": "required",
            "shape": null
        },
        {
            "key": "text",
            "mode": "required",
            "shape": null
        }
    ],
    "ThinkingBlock": [
        {
            "key": "type",
            "mode": "required",
            "shape": null
        },
        {
            "key": "thinking",
            "mode": "required",
            "shape": null
        },
        {
            "key": "metadata",
            "mode": "nullable",
            "shape": null
        }
    ],
    "ToolResultBlock": [
        {
            "key": "type",
            "mode": "required",
            "shape": null
        },
        {
            "key": "id",
            "mode": "required",
            "shape": null
        },
        {
            "key": "name",
            "mode": "nullable",
            "shape": null
        },
        {
            "key": "output",
            "mode": "default",
            "shape": {
                "array": {
                    "union": {
                        "text": "TextBlock",
                        "thinking": "ThinkingBlock",
                        "image": "ImageBlock",
                        "audio": "AudioBlock",
                        "video": "VideoBlock",
                        "data": "DataBlock",
                        "tool_use": "ToolUseBlock",
                        "tool_result": "ToolResultBlock",
                        "hint": "HintBlock"
                    }
                }
            },
            "default": []
        },
        {
            "key": "metadata",
            "mode": "default",
            "shape": null,
            "default": {}
        },
        {
            "key": "state",
            "mode": "default",
            "shape": null,
            "default": "running"
        }
    ],
    "ToolUseBlock": [
        {
            "key": "type",
            "mode": "required",
            "shape": null
        },
        {
            "key": "id",
            "mode": "required",
            "shape": null
        },
        {
            "key": "name",
            "mode": "required",
            "shape": null
        },
        {
            "key": "input",
            "mode": "default",
            "shape": null,
            "default": {}
        },
        {
            "key": "content",
            "mode": "nullable",
            "shape": null
        },
        {
            "key": "metadata",
            "mode": "default",
            "shape": null,
            "default": {}
        },
        {
            "key": "state",
            "mode": "default",
            "shape": null,
            "default": "pending"
        }
    ],
    "URLSource": [
        {
            "key": "type",
            "mode": "required",
            "shape": null
        },
        {
            "key": "url",
            "mode": "required",
            "shape": null
        },
        {
            "key": "mime_type",
            "mode": "optional",
            "shape": null
        }
    ],
    "VideoBlock": [
        {
            "key": "type",
            "mode": "required",
            "shape": null
        },
        {
            "key": "source",
            "mode": "required",
            "shape": {
                "union": {
                    "url": "URLSource",
                    "base64": "Base64Source"
                }
            }
        },
        {
            "key": "fps",
            "mode": "optional",
            "shape": null
        },
        {
            "key": "maxFrames",
            "mode": "optional",
            "shape": null,
            "alt": "max_frames"
        },
        {
            "key": "minPixels",
            "mode": "optional",
            "shape": null,
            "alt": "min_pixels"
        },
        {
            "key": "maxPixels",
            "mode": "optional",
            "shape": null,
            "alt": "max_pixels"
        },
        {
            "key": "totalPixels",
            "mode": "optional",
            "shape": null,
            "alt": "total_pixels"
        }
    ]
};
/** The shape name of a whole message. */
export const MSG = "Msg";
