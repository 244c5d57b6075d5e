// Package modeltest runs scripted model servers for tests: a fake Anthropic
// Messages API and a fake OpenAI Responses API, each on a loopback httptest
// server, answering by a fixed script so that the real agent CLIs (Claude
// Code, Codex) can be driven through real tool calls without a real model.
//
// The script looks at the last message of each request:
//
//   - a tool result (Anthropic tool_result, OpenAI function_call_output):
//     answer "DONE: " followed by the result text (first 200 characters);
//   - a user text with a line "RUN: <command>", when the request offers a
//     shell tool (Bash, exec_command or shell): call that tool with <command>;
//   - a user text with a line "WRITE: <path>", when the request offers a
//     file-writing tool (Write, apply_patch): write WriteContent to <path>;
//   - anything else: answer "ECHO: " followed by the user text (first 200
//     characters).
//
// Requests that offer no tools at all are side calls (Claude Code asks a small
// model for a session title or topic this way) and get the plain text
// SideReply.
//
// Every request is recorded, flattened into a [Request], so that a test can
// check what the CLI really sent: the key that arrived, the earlier turns of a
// resumed session, the tool results.
package modeltest
