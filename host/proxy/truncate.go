package proxy

import (
	"bytes"

	"github.com/metaclaw-go/metaclaw/host/apiformat"
	"github.com/metaclaw-go/metaclaw/host/tokens"
)

// perMessageOverhead approximates the role and framing tokens a chat
// template adds to every message.
const perMessageOverhead = 4

// truncate drops the oldest non-system messages until the prompt fits
// maxContext minus the completion budget. System messages and the newest
// message always stay; a tool result is never left without its call, and an
// Anthropic conversation still starts with a user message.
func (r *request) truncate(maxContext int, counter *tokens.Cache) (dropped int) {
	if maxContext <= 0 {
		return 0
	}
	reserve := r.maxTokens()
	if reserve == 0 {
		reserve = 2048
	}
	budget := maxContext - reserve
	if budget <= 0 {
		return 0
	}
	type info struct {
		role   string
		system bool
		tool   bool // a tool result: must follow its call
		tokens int
	}
	infos := make([]info, len(r.messages))
	fixed := 0
	if sys, ok := lookup(r.fields, "system"); ok && r.api == apiformat.Anthropic {
		fixed += counter.Count(string(sys))
	}
	for i, m := range r.messages {
		in := info{role: m.role, tokens: counter.Count(string(m.bytes())) + perMessageOverhead}
		in.system = m.role == "system" || m.role == "developer"
		in.tool = m.role == "tool" || (r.api == apiformat.Anthropic && m.role == "user" && bytes.Contains(m.raw, []byte(`"tool_result"`)))
		infos[i] = in
		if in.system {
			fixed += in.tokens
		}
	}
	// Walk back from the newest message while it fits.
	used := fixed
	cut := len(r.messages) - 1
	for i := len(r.messages) - 1; i >= 0; i-- {
		if infos[i].system {
			continue
		}
		if i < len(r.messages)-1 && used+infos[i].tokens > budget {
			break
		}
		used += infos[i].tokens
		cut = i
	}
	// Do not start on an orphan tool result or (Anthropic) an assistant message.
	for cut < len(r.messages)-1 && !infos[cut].system &&
		(infos[cut].tool || (r.api == apiformat.Anthropic && infos[cut].role != "user")) {
		cut++
	}
	kept := make([]msg, 0, len(r.messages))
	for i, m := range r.messages {
		if i >= cut || infos[i].system {
			kept = append(kept, m)
		} else {
			dropped++
		}
	}
	if dropped > 0 {
		r.messages = kept
		r.changed = true
	}
	return dropped
}
