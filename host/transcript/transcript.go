// Package transcript turns recorded turns into what learning may read: the
// user's new text and the assistant's final text. System prompts, tool
// output, agent-internal context and MetaClaw's own injected blocks are never
// part of it, so the layer never learns from its own output or mines prompts.
package transcript

import (
	"context"
	"encoding/json"
	"slices"
	"strings"
	"time"
	"unsafe"

	"github.com/metaclaw-go/metaclaw/host/core"
	"github.com/metaclaw-go/metaclaw/host/msgcontent"
	"github.com/metaclaw-go/metaclaw/host/store"
	"github.com/metaclaw-go/metaclaw/host/usertext"
	"github.com/metaclaw-go/metaclaw/internal/jsonscan"
)

// Exchange is one main turn as learning sees it.
type Exchange struct {
	TurnID    int64
	SessionID string
	Agent     string
	Scope     string
	TurnIndex int
	// User is the new user text of this turn; empty for tool rounds, where
	// the newest message is a tool result rather than something the user said.
	User      string
	Assistant string
	ToolCalls int
	At        time.Time
}

type message struct {
	Role    string          `json:"role"`
	Content json.RawMessage `json:"content"`
}

// TrailingUserJSON appends to dst the raw JSON contents (aliasing
// requestJSON) of the user messages UserText reads and returns true, when
// the body passes jsonscan.FastValid and UserText's scan reads it; true
// with no contents means UserText finds no user text. False (the body
// takes UserText's slower paths) leaves the caller to look at the whole
// body. Learning's per-turn prefilter uses it to skip what UserText never
// reads: the system prompt and the history.
func TrailingUserJSON(requestJSON string, dst [][]byte) ([][]byte, bool) {
	b := unsafe.Slice(unsafe.StringData(requestJSON), len(requestJSON)) // read only
	if !jsonscan.FastValid(b) {
		return nil, false
	}
	contents, r := trailingUserContents(b, dst)
	switch r {
	case scanFail:
		return dst, true
	case scanFallback:
		return nil, false
	}
	return contents, true
}

// UserText returns the new user text of a request body in either wire
// format: the trailing user messages after the last assistant/tool message,
// cleaned. A request whose tail is a tool result has no new user text.
//
// The body is read as encoding/json would decode it into a messages array
// of roles and raw contents, without decoding what it skips (scan.go).
func UserText(requestJSON string) string {
	b := unsafe.Slice(unsafe.StringData(requestJSON), len(requestJSON)) // read only
	if !jsonscan.Valid(b) {
		return ""
	}
	var buf [4][]byte
	contents, r := trailingUserContents(b, buf[:0])
	switch r {
	case scanFail:
		return ""
	case scanFallback:
		return userTextDecoded(requestJSON)
	}
	var parts []string
	for i := len(contents) - 1; i >= 0; i-- {
		var c msgcontent.Content
		ok := false
		if c.Text, ok = plainString(contents[i]); !ok {
			c, _ = msgcontent.Read(contents[i], msgcontent.Options{Sep: "\n"})
		}
		if c.ToolResult {
			return ""
		}
		if t := usertext.Clean(c.Text); t != "" {
			parts = append(parts, t)
		}
	}
	if len(parts) == 1 {
		return parts[0]
	}
	slices.Reverse(parts)
	return strings.Join(parts, "\n")
}

// userTextDecoded is UserText by encoding/json, for the bodies the scan
// leaves to it.
func userTextDecoded(requestJSON string) string {
	var body struct {
		Messages []message `json:"messages"`
	}
	if json.Unmarshal([]byte(requestJSON), &body) != nil {
		return ""
	}
	var parts []string
	for i := len(body.Messages) - 1; i >= 0; i-- {
		m := body.Messages[i]
		if m.Role != "user" {
			break
		}
		c, _ := msgcontent.Read(m.Content, msgcontent.Options{Sep: "\n"})
		t, isTool := c.Text, c.ToolResult
		if isTool {
			return ""
		}
		if t = usertext.Clean(t); t != "" {
			parts = append([]string{t}, parts...)
		}
	}
	return strings.Join(parts, "\n")
}

// FromTurn builds the Exchange of a recorded turn.
func FromTurn(t store.Turn) Exchange {
	return Exchange{
		TurnID: t.ID, SessionID: t.SessionID, Agent: t.Agent, Scope: t.MemoryScope, TurnIndex: t.TurnIndex,
		User: UserText(t.RequestJSON), Assistant: usertext.Clean(t.ResponseText), ToolCalls: toolCalls(t.ToolCallsJSON), At: t.CreatedAt,
	}
}

// toolCalls counts the elements of a recorded turn's tool calls; the store
// writes "[]" for a turn without any, which needs no decoder.
func toolCalls(callsJSON string) int {
	if callsJSON == "[]" {
		return 0
	}
	var calls []json.RawMessage
	_ = json.Unmarshal([]byte(callsJSON), &calls)
	return len(calls)
}

// Learnable reports whether a turn may feed learning: a successful main turn.
func Learnable(t store.Turn) bool {
	return t.TurnType == core.TurnMain && t.Status >= 200 && t.Status < 300
}

// Session returns the learnable exchanges of a session, in order.
func Session(ctx context.Context, st store.Store, sessionID string) ([]Exchange, error) {
	turns, err := st.SessionTurns(ctx, sessionID)
	if err != nil {
		return nil, err
	}
	out := make([]Exchange, 0, len(turns))
	for _, t := range turns {
		if Learnable(t) {
			out = append(out, FromTurn(t))
		}
	}
	return out, nil
}
