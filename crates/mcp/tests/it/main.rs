//! airlock's MCP server as clients see it: in-process over a duplex pipe, over
//! streamable HTTP on a loopback port, and through the official Python SDK.

mod agents;
mod critic;
mod http;
mod python;
mod support;
mod tools;
