"""An independent MCP client for airlock: the official MCP Python SDK (2.x) over
streamable HTTP.

Usage: python_client.py URL TOKEN

The token needs the writer and publisher roles. The server must have an approved post
waiting and no quota left, so publishing it is refused. The client lists the tools
(eleven), drafts a post, and asks to publish the approved post; it prints one JSON line
with what it saw and exits 0, or names what was wrong on stderr and exits 1.
"""

import asyncio
import json
import sys

from mcp import ClientSession
from mcp.client.streamable_http import streamable_http_client
from mcp.shared._httpx_utils import create_mcp_http_client

EXPECTED_TOOLS = sorted(
    [
        "draft_post",
        "update_draft",
        "list_posts",
        "get_post",
        "approve_post",
        "reject_post",
        "publish_post",
        "quota_status",
        "list_channels",
        "get_review_packet",
        "submit_verdict",
    ]
)


def fail(message: str) -> None:
    print(f"python_client: {message}", file=sys.stderr)
    sys.exit(1)


def text_of(result) -> str:
    return "".join(block.text for block in result.content if getattr(block, "type", None) == "text")


async def run(url: str, token: str) -> dict:
    http_client = create_mcp_http_client(headers={"Authorization": f"Bearer {token}"})
    async with http_client:
        async with streamable_http_client(url, http_client=http_client) as (read, write):
            async with ClientSession(read, write) as session:
                await session.initialize()

                tools = (await session.list_tools()).tools
                names = sorted(tool.name for tool in tools)
                if names != EXPECTED_TOOLS:
                    fail(f"tools/list returned {names}, expected {EXPECTED_TOOLS}")
                for tool in tools:
                    if tool.input_schema.get("type") != "object":
                        fail(f"{tool.name} has no object input schema: {tool.input_schema}")

                drafted = await session.call_tool(
                    "draft_post",
                    {"channel": "cats", "text": "Drafted by the Python SDK", "idempotency_key": "py-1"},
                )
                if drafted.is_error:
                    fail(f"draft_post failed: {text_of(drafted)}")
                post = json.loads(text_of(drafted))
                if post.get("status") != "draft":
                    fail(f"draft_post answered {post}")

                listed = await session.call_tool("list_posts", {"status": "approved"})
                if listed.is_error:
                    fail(f"list_posts failed: {text_of(listed)}")
                approved = json.loads(text_of(listed))
                if not approved:
                    fail("no approved post to publish: the test must create one")

                published = await session.call_tool("publish_post", {"id": approved[0]["id"]})
                message = text_of(published)
                if not published.is_error:
                    fail(f"publish_post over quota was not an error: {message}")
                if "next slot frees" not in message:
                    fail(f"the over-quota error does not say when the next slot frees: {message}")

                return {"tools": names, "drafted": post["id"], "over_quota": message}


def main() -> None:
    if len(sys.argv) != 3:
        fail("usage: python_client.py URL TOKEN")
    print(json.dumps(asyncio.run(run(sys.argv[1], sys.argv[2]))))


if __name__ == "__main__":
    main()
