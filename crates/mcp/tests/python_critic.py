"""A critic agent and a writer agent on the official MCP Python SDK (2.x), over
streamable HTTP: the critic's workflow as an independent client sees it.

Usage: python_critic.py URL WRITER_TOKEN CRITIC_TOKEN POST_ID

POST_ID is a draft the writer token wrote, on a channel whose rubric has items and whose
max_revisions is 2. The critic fetches the review packet and fails the draft with
reasons naming rubric items; the writer reads the reasons back and revises; a verdict on
the text the critic read before the revision is refused; the critic fails it again and it
is quarantined; the writer's third try and the critic's pass are refused, saying so. The
script prints one JSON line with what it saw and exits 0, or names what was wrong on
stderr and exits 1.
"""

import asyncio
import json
import sys

from mcp import ClientSession
from mcp.client.streamable_http import streamable_http_client
from mcp.shared._httpx_utils import create_mcp_http_client


def fail(message: str) -> None:
    print(f"python_critic: {message}", file=sys.stderr)
    sys.exit(1)


def text_of(result) -> str:
    return "".join(block.text for block in result.content if getattr(block, "type", None) == "text")


class Agent:
    """One MCP session under one token."""

    def __init__(self, url: str, token: str):
        self.url = url
        self.token = token

    async def __aenter__(self):
        self.http = create_mcp_http_client(headers={"Authorization": f"Bearer {self.token}"})
        await self.http.__aenter__()
        self.transport = streamable_http_client(self.url, http_client=self.http)
        read, write = await self.transport.__aenter__()
        self.session = ClientSession(read, write)
        await self.session.__aenter__()
        await self.session.initialize()
        return self

    async def __aexit__(self, *exc):
        await self.session.__aexit__(*exc)
        await self.transport.__aexit__(*exc)
        await self.http.__aexit__(*exc)

    async def ok(self, tool: str, args: dict) -> dict:
        result = await self.session.call_tool(tool, args)
        if result.is_error:
            fail(f"{tool} failed: {text_of(result)}")
        return json.loads(text_of(result))

    async def refused(self, tool: str, args: dict) -> str:
        result = await self.session.call_tool(tool, args)
        if not result.is_error:
            fail(f"{tool} should have been refused: {text_of(result)}")
        return text_of(result)


def verdict(packet: dict, kind: str, reasons: list) -> dict:
    return {
        "id": packet["post"]["id"],
        "verdict": kind,
        "content_hash": packet["content_hash"],
        "rubric_hash": packet["rubric"]["hash"],
        "reasons": reasons,
    }


async def run(url: str, writer_token: str, critic_token: str, post_id: int) -> dict:
    async with Agent(url, writer_token) as writer, Agent(url, critic_token) as critic:
        tools = {tool.name: tool for tool in (await critic.session.list_tools()).tools}
        for name in ("get_review_packet", "submit_verdict"):
            if name not in tools:
                fail(f"tools/list lacks {name}")
        if not tools["get_review_packet"].annotations.read_only_hint:
            fail("get_review_packet is not marked read-only")
        required = sorted(tools["submit_verdict"].input_schema.get("required", []))
        if required != ["content_hash", "id", "rubric_hash", "verdict"]:
            fail(f"submit_verdict requires {required}")

        packet = await critic.ok("get_review_packet", {"id": post_id})
        items = [item["id"] for item in packet["rubric"]["items"]]
        if not items or not packet["content_hash"] or not packet["rubric"]["hash"]:
            fail(f"the packet lacks the rubric or the hashes: {packet}")
        first_reason = f"{items[0]}: a promise the inn cannot keep"
        first = await critic.ok("submit_verdict", verdict(packet, "fail", [first_reason]))
        if first["effect"] != "returned_to_writer":
            fail(f"the first fail did {first['effect']}")

        seen = await writer.ok("get_post", {"id": post_id})
        if first_reason not in (seen.get("error") or ""):
            fail(f"the writer does not read the reason back: {seen.get('error')}")
        if seen["verdicts"][0]["reasons"] != [first_reason]:
            fail(f"the verdicts do not carry the reason: {seen['verdicts']}")
        await writer.ok("update_draft", {"id": post_id, "text": "Some guests meet a cat, if it wants."})

        stale = await critic.refused("submit_verdict", verdict(packet, "pass", []))
        if "changed since it was reviewed" not in stale:
            fail(f"a verdict on old text was not refused as stale: {stale}")

        packet = await critic.ok("get_review_packet", {"id": post_id})
        changed = (packet.get("changes_since_last_verdict") or {}).get("fields")
        if changed != ["text"]:
            fail(f"the packet does not show what changed: {changed}")
        second_reason = f"{items[-1]}: still not quite right"
        second = await critic.ok("submit_verdict", verdict(packet, "fail", [second_reason]))
        if second["effect"] != "quarantined":
            fail(f"the second fail did {second['effect']}")

        third = await writer.refused("update_draft", {"id": post_id, "text": "A third try."})
        if "quarantined" not in third:
            fail(f"the third try does not say the post is quarantined: {third}")
        packet = await critic.ok("get_review_packet", {"id": post_id})
        refused_pass = await critic.refused("submit_verdict", verdict(packet, "pass", []))
        if "quarantined" not in refused_pass:
            fail(f"a pass of a quarantined post does not say why: {refused_pass}")

        return {
            "items": items,
            "first": first["effect"],
            "second": second["effect"],
            "third": third,
            "verdicts": len(packet["verdicts"]),
        }


def main() -> None:
    if len(sys.argv) != 5:
        fail("usage: python_critic.py URL WRITER_TOKEN CRITIC_TOKEN POST_ID")
    print(json.dumps(asyncio.run(run(sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4])))))


if __name__ == "__main__":
    main()
