"""An independent MCP client for airlock: the official MCP Python SDK (2.x) over
streamable HTTP.

Usage: python_client.py URL TOKEN

The token needs the writer and publisher roles. The server must have an approved post
waiting and no quota left, so publishing it is refused, and a channel `cats` whose
policy requires a phrase. The client works as a writer agent would:

1. lists the tools (thirteen, each with an input and an output schema; the SDK checks
   every structured result against its tool's output schema);
2. reads the channel's rules (list_channels) and checks a draft without drafting it
   (check_draft): once lacking the required phrase, once with it;
3. drafts (draft_post) twice, one of them breaking the policy, which is drafted with its
   violations; discards that one (discard_post);
4. lists only its own posts (list_posts mine) one page at a time, following `next`;
5. asks to publish the approved post and is told when the next slot frees;
6. closes its session (the SDK sends DELETE).

It prints one JSON line with what it saw and exits 0, or names what was wrong on stderr
and exits 1.
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
        "check_draft",
        "update_draft",
        "discard_post",
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


async def call(session: ClientSession, tool: str, arguments: dict):
    """A successful tool call's structured content (the SDK validated it against the tool's
    output schema)."""
    result = await session.call_tool(tool, arguments)
    if result.is_error:
        fail(f"{tool} failed: {text_of(result)}")
    if not isinstance(result.structured_content, dict):
        fail(f"{tool} answered without structured content: {text_of(result)}")
    return result


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
                    if not tool.output_schema or tool.output_schema.get("type") != "object":
                        fail(f"{tool.name} declares no object output schema: {tool.output_schema}")

                # The channel's rules, before drafting.
                listed = await call(session, "list_channels", {})
                channels = listed.structured_content["channels"]
                if json.loads(text_of(listed)) != channels:
                    fail("list_channels' text is not its list of channels")
                cats = next((c for c in channels if c["name"] == "cats"), None)
                if cats is None:
                    fail(f"no channel cats in {channels}")
                required = cats["policy"]["required"]
                if not required:
                    fail(f"cats requires no phrase: {cats['policy']}")
                phrase = required[0]
                for key in ("max_chars", "length_unit", "forbidden"):
                    if key not in cats["policy"]:
                        fail(f"cats' policy lacks {key}: {cats['policy']}")
                if "approvals_required" not in cats["review"] or "video" not in cats["media"]:
                    fail(f"cats lacks its review settings or media rules: {cats}")

                # A check drafts nothing and says what the channel finds.
                lacking = "Drafted by the Python SDK"
                check = (await call(session, "check_draft", {"channel": "cats", "text": lacking})).structured_content
                kinds = [v["kind"] for v in check["violations"]]
                if check["accepted"] is not True or check["approvable"] is not False or kinds != ["missing_required_phrase"]:
                    fail(f"check_draft of a text lacking {phrase!r} answered {check}")
                if check["lengths"][0]["length"] != len(lacking):
                    fail(f"check_draft counted {check['lengths']}")
                good = f"{lacking} {phrase}"
                check = (await call(session, "check_draft", {"channel": "cats", "text": good})).structured_content
                if not (check["accepted"] and check["approvable"] and not check["violations"]):
                    fail(f"check_draft of a text with {phrase!r} answered {check}")

                # Two drafts: one keeps the rules, one does not and is discarded.
                drafted = await call(
                    session, "draft_post", {"channel": "cats", "text": good, "idempotency_key": "py-1"}
                )
                post = drafted.structured_content
                if post.get("status") != "draft" or post.get("violations") != []:
                    fail(f"draft_post answered {post}")
                if json.loads(text_of(drafted)) != post:
                    fail("draft_post's text is not its structured content")
                flawed = (await call(session, "draft_post", {"channel": "cats", "text": lacking})).structured_content
                if [v["kind"] for v in flawed["violations"]] != ["missing_required_phrase"]:
                    fail(f"a draft lacking {phrase!r} was not told so: {flawed}")
                discarded = (await call(session, "discard_post", {"id": flawed["id"]})).structured_content
                if discarded != {"id": flawed["id"], "discarded": True}:
                    fail(f"discard_post answered {discarded}")
                third = (await call(session, "draft_post", {"channel": "dogs", "text": "Dogs too"})).structured_content

                # Only its own posts, one page at a time.
                seen, pages, before = [], 0, None
                while True:
                    arguments = {"mine": True, "limit": 1}
                    if before is not None:
                        arguments["before"] = before
                    page = (await call(session, "list_posts", arguments)).structured_content
                    pages += 1
                    seen += [p["id"] for p in page["posts"]]
                    before = page["next"]
                    if before is None:
                        break
                    if pages > 10:
                        fail("list_posts never reached its last page")
                if seen != [third["id"], post["id"]]:
                    fail(f"its own posts, page by page, were {seen}")

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

                return {
                    "tools": names,
                    "drafted": post["id"],
                    "discarded": flawed["id"],
                    "mine": seen,
                    "pages": pages,
                    "over_quota": message,
                }


def main() -> None:
    if len(sys.argv) != 3:
        fail("usage: python_client.py URL TOKEN")
    print(json.dumps(asyncio.run(run(sys.argv[1], sys.argv[2]))))


if __name__ == "__main__":
    main()
