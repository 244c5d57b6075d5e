// Package modeltest runs scripted model servers for tests: a fake Anthropic
// Messages API and a fake OpenAI Responses API, each on a loopback httptest
// server, answering by a fixed script so that the real agent CLIs (Claude
// Code, Codex) can be driven through real tool calls without a real model.
//
// The script looks at the last user or assistant message of each request:
//
//   - a user text holding the marker of a rule the test added with RunOn or
//     ReplyOn: call the shell tool with that rule's command, or answer its text
//     (for messages the test does not write itself, such as the ones paddock
//     sends an agent);
//   - lines "CALL: <tool> <JSON input>" in the latest user text (Anthropic, and OpenAI
//     when the tool is a function): the calls are
//     made one per turn, in order, whatever their results, then the usual DONE answer
//     follows. This scripts the multi-turn tool use of a loop that offers its own tools;
//     Fail, Drop and SetDelay script errors, cut streams and a model's thinking time;
//   - a tool result (Anthropic tool_result, OpenAI function_call_output or
//     custom_tool_call_output): answer "DONE: " followed by the result text
//     (first 200 characters). A tool result never leads to another call, so a
//     command whose output holds "RUN:" cannot loop;
//   - a user text with a line "RUN: <command>" (outside <system-reminder>
//     sections), when the request offers a shell tool (Bash, exec_command or
//     shell): call that tool with <command>;
//   - a user text with a line "WRITE: <path>", when the request offers a
//     file-writing tool (Write, apply_patch): write WriteContent to <path>;
//   - anything else: answer "ECHO: " followed by the user text without its
//     <system-reminder> sections (first 200 characters).
//
// Requests that offer no tools are side calls and get SideReply, as JSON
// when the request asks for output by a JSON schema.
//
// Every request is recorded, flattened into a [Request], so that a test can
// check what the CLI really sent: the key that arrived, the earlier turns of
// a resumed session, the tool results.
//
// # What the real CLIs sent
//
// Claude Code 2.1.330 (ANTHROPIC_BASE_URL set to the server): POST
// /v1/messages?beta=true, streamed, key in x-api-key, with anthropic-version
// 2023-06-01, an anthropic-beta list and X-Claude-Code-Session-Id carrying
// the session id. The user's turn is a text block preceded by
// <system-reminder> blocks, and a role "system" message (the environment
// description) follows it: the script skips such messages. In -p mode it
// offers 12 tools (Agent, Bash, Edit, Read, Write, ToolSearch...). With
// CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC=1 it sends nothing but these
// model calls (no count_tokens, no side calls). Without it (observed in a
// network namespace with only loopback) it first sends GET /api/hello to the
// base URL (answered 404 here, which it tolerates) and, interactively, a
// title side call: same model, "tools": [], output_config.format a JSON
// schema asking for {"title": string}; it records the answer in its
// transcript as an "ai-title" line.
//
// With a subscription token (CLAUDE_CODE_OAUTH_TOKEN) instead of a key,
// Claude Code sends the same calls with the token as a bearer token, no
// x-api-key, and oauth-2025-04-20 in its anthropic-beta list.
//
// Codex 0.169.0 (a model provider with wire_api = "responses"): POST
// /v1/responses, streamed, key as a bearer token, with session-id,
// thread-id and originator: codex_exec headers. The input holds developer
// messages, a user <environment_context> message, then the prompt. It
// offers exec_command ({"cmd": ...}), apply_patch as a custom (free-form)
// tool, write_stdin, request_user_input, view_image, goal tools, and the
// hosted tool_search and web_search. It sent no side calls and no
// /v1/models request. Signed in with ChatGPT (auth.json, a provider with
// requires_openai_auth), it sends its model calls to ChatGPTResponses with
// a ChatGPT-Account-Id header, and first looks up ChatGPTAccounts, which the
// server answers; its other look-ups (codex/models, wham/settings/user) get
// 404, which it tolerates. docs/subscriptions.md has the whole list.
package modeltest
