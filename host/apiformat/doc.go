// Package apiformat translates between the two LLM wire formats the proxy speaks:
// OpenAI Chat Completions (POST /v1/chat/completions) and Anthropic Messages
// (POST /v1/messages). It covers request bodies, non-streaming responses,
// streaming events, error bodies, SSE framing, and summaries of responses for
// recording.
//
// Everything here is on the proxy's hot path. Bodies are decoded into structs
// that name only the fields we translate; JSON fragments that pass through
// unchanged (tool schemas, tool inputs) are kept as raw JSON; streaming
// events are built by hand into one buffer each. Output is never HTML-escaped
// ('<' stays '<'), because agent prompts are full of markup.
//
// # Requests, Anthropic → OpenAI
//
//   - system (string or text blocks, joined with a blank line) becomes the
//     first system message. cache_control is dropped everywhere: OpenAI has no
//     equivalent and caches prefixes automatically.
//   - text blocks become content parts; a message that is a single text is sent
//     as plain string content, which every OpenAI-compatible server accepts.
//     image blocks become image_url parts (base64 as a data: URL, url as is);
//     base64 documents become file parts, text documents text parts. Sources
//     that refer to Anthropic's Files API cannot be carried and are dropped.
//   - assistant tool_use blocks become tool_calls (arguments = compact JSON of
//     input); the assistant's text stays as content (null beside tool calls).
//   - tool_result blocks become role:tool messages, in order and before the
//     rest of their user message, since OpenAI wants tool messages right after
//     the assistant message that called them. Their text blocks are joined with
//     a blank line; is_error prefixes "Error: ". OpenAI tool messages hold text
//     only, so images a tool returned go into the following user message after
//     a short label instead of being lost.
//   - thinking and redacted_thinking blocks are dropped: their signatures only
//     mean something to Anthropic. A message left empty is omitted.
//   - max_tokens, temperature, top_p and stream are copied; stop_sequences →
//     stop; stream:true adds stream_options.include_usage so token counts
//     arrive. metadata.user_id → user.
//   - custom tools → function tools (input_schema → parameters, unchanged).
//     Server tools (web_search_*, bash_*, …) run inside Anthropic and are
//     dropped. tool_choice auto|any|tool|none → auto|required|{function}|none,
//     disable_parallel_tool_use → parallel_tool_calls:false; both only when
//     tools remain, as OpenAI rejects tool_choice without tools.
//   - Other top-level fields (top_k, thinking, service_tier, container,
//     mcp_servers, …) are Anthropic-specific and dropped.
//
// # Requests, OpenAI → Anthropic
//
//   - system and developer messages, wherever they are, are joined (blank
//     line) into the top-level system string.
//   - Runs of same-role messages are merged, as Anthropic requires alternation.
//     tool messages become tool_result blocks of a user message; in a merged
//     user message tool_result blocks are moved first, as Anthropic requires.
//     Empty or whitespace-only text is dropped (Anthropic rejects it), and a
//     message left empty is omitted. Whether the first message is a user
//     message is not enforced.
//   - assistant tool_calls become tool_use blocks whose input is the parsed
//     arguments. Arguments that are not a JSON object (models do emit
//     truncated JSON) are kept verbatim as {"_raw": "<arguments>"}; empty
//     arguments become {}. Tool ids are made to match Anthropic's
//     ^[a-zA-Z0-9_-]+$ by replacing other bytes with '_', the same way on the
//     tool_use and the tool_result, so pairs stay matched.
//   - image_url parts: base64 data URLs → base64 image source, other URLs →
//     url source; "detail" and non-base64 data URLs are dropped. file parts
//     with file_data → base64 documents; file_id references, input_audio and
//     reasoning_content in history are dropped.
//   - max_completion_tokens, else max_tokens, else 4096 (Anthropic requires
//     it) → max_tokens. stop (string or list) → stop_sequences. temperature,
//     top_p and stream are copied as given (Anthropic rejects temperature > 1).
//   - function tools → {name, description, input_schema} (parameters
//     unchanged, or an empty object schema when absent); other tool types
//     are dropped. tool_choice required → any, {function} → tool, auto, none;
//     parallel_tool_calls:false → disable_parallel_tool_use (on an auto choice
//     if none was given). user → metadata.user_id.
//   - n, logprobs, top_logprobs, reasoning_effort, response_format, seed,
//     penalties, logit_bias, stream_options, store, metadata, legacy
//     functions/function_call and role:function messages are dropped.
//
// # Responses
//
// Text, tool calls (ids kept; call_/toolu_ ids generated when absent),
// reasoning_content ↔ thinking (without a signature), id and model carry over.
// Only choices[0] is used. Anthropic text blocks are concatenated without a
// separator, exactly as their streamed deltas would be. Stop reasons:
//
//	stop ↔ end_turn, length ↔ max_tokens, tool_calls ↔ tool_use
//	content_filter → end_turn (Anthropic has no filter stop a client handles)
//	stop_sequence, pause_turn, refusal → stop; model_context_window_exceeded → length
//
// A response with tool calls always reports tool_use / tool_calls (unless it
// was cut by length), because some servers say "stop" and clients only run
// tools on the tool stop reason. stop_sequence is always null: OpenAI does not
// say which sequence matched. Usage: Anthropic's input_tokens excludes cache
// reads and writes while OpenAI's prompt_tokens includes them, so
// prompt_tokens = input + cache_read + cache_creation, cached_tokens =
// cache_read, and in the other direction input_tokens = prompt_tokens -
// cached_tokens.
//
// # Streams
//
// NewOpenAIToAnthropicStream emits message_start on the first chunk
// (input_tokens 0 unless that chunk has usage), opens a text, thinking or
// tool_use block as deltas of that kind arrive (closing the previous one), and
// ends with message_delta (stop reason, usage) and message_stop on the usage
// chunk after finish_reason, or on [DONE]. Thinking blocks carry no
// signature_delta: there is none to give. Fragments of a parallel tool call
// whose block was already closed (servers that interleave calls) are still
// sent with that block's index.
//
// NewAnthropicToOpenAIStream emits chat.completion.chunk events with the
// upstream message id and one created time, a first chunk with
// role:assistant, tool calls indexed 0, 1, … in block order, a finish chunk on
// message_delta, then on message_stop a usage chunk (choices: []) and [DONE].
// The translator always emits the usage chunk; the proxy passes it on only
// to a client that asked (stream_options.include_usage). A tool_use
// without input gets arguments "{}" so clients can parse it. ping,
// signature_delta and citations_delta are ignored; an upstream error event
// becomes an OpenAI error chunk followed by [DONE].
//
// Finish closes a stream whose upstream ended without its terminal event. If
// the upstream had already said why it stopped, the stream is closed normally;
// otherwise the answer was cut off and the client gets an error event (or
// error chunk and [DONE]) rather than a message that looks complete.
//
// # Summaries and errors
//
// Summary is filled the same way from a body (SummarizeResponse) and from a
// stream (Accumulator), so the two can be compared. StopReason is the
// upstream's own word; InputTokens counts cached prompt tokens too; empty tool
// arguments read as "{}".
//
// ErrorBody and TranslateErrorBody produce each client's own error shape,
// with the type taken from the HTTP status (TranslateErrorBody keeps the
// upstream's type when the target format knows it):
//
//	status            OpenAI type             Anthropic type
//	400, 409, 422, …  invalid_request_error   invalid_request_error
//	401               authentication_error    authentication_error
//	402               insufficient_quota      billing_error
//	403               permission_error        permission_error
//	404               not_found_error         not_found_error
//	408, 504          timeout_error           timeout_error
//	413               request_too_large       request_too_large
//	429               rate_limit_error        rate_limit_error
//	500, other 5xx    server_error            api_error
//	502               upstream_error          api_error
//	503, 529          server_error            overloaded_error
//
// An Anthropic upstream's own type reaches an OpenAI client in OpenAI's
// words (overloaded_error and api_error become server_error, billing_error
// insufficient_quota); other types are kept.
//
// OpenAI's "code" is null: a status alone does not say which code is true.
package apiformat
