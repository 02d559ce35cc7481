package core

import (
	"encoding/json"
	"strconv"
	"sync"
	"time"

	"github.com/metaclaw-go/metaclaw/host/store"
	"github.com/metaclaw-go/metaclaw/internal/jsonstr"
)

// The journal line of a turn is written by hand: it is appended before
// every answer is released, and encoding/json's reflection and escaping
// of a 6 KB request body cost ~50 µs of that path. The line is what
// json.Marshal writes for a store.Turn (same field names; strings without
// HTML escaping, which decodes to the same value), so readSpool reads it
// with json.Unmarshal like the spool's lines; TestTurnLineRoundTrips checks
// every field, so a field added to store.Turn fails the test until it is
// written here too.

var lineBufs = sync.Pool{New: func() any { b := make([]byte, 0, 16<<10); return &b }}

// appendTurnLine appends t's journal line (JSON and a newline) to dst.
func appendTurnLine(dst []byte, t *store.Turn) ([]byte, error) {
	if y := t.CreatedAt.Year(); y < 0 || y > 9999 {
		// Outside RFC 3339: let encoding/json report it.
		b, err := json.Marshal(t)
		return append(append(dst, b...), '\n'), err
	}
	str := func(name, v string) {
		dst = append(dst, ',', '"')
		dst = append(dst, name...)
		dst = append(dst, '"', ':')
		dst = jsonstr.Append(dst, v)
	}
	num := func(name string, v int64) {
		dst = append(dst, ',', '"')
		dst = append(dst, name...)
		dst = append(dst, '"', ':')
		dst = strconv.AppendInt(dst, v, 10)
	}
	dst = append(dst, `{"ID":`...)
	dst = strconv.AppendInt(dst, t.ID, 10)
	str("SessionID", t.SessionID)
	str("Agent", t.Agent)
	num("TurnIndex", int64(t.TurnIndex))
	str("TurnType", t.TurnType)
	str("ClientAPI", t.ClientAPI)
	str("UpstreamAPI", t.UpstreamAPI)
	str("Model", t.Model)
	dst = append(dst, `,"Stream":`...)
	dst = strconv.AppendBool(dst, t.Stream)
	str("RequestJSON", t.RequestJSON)
	str("ResponseText", t.ResponseText)
	str("Reasoning", t.Reasoning)
	str("ToolCallsJSON", t.ToolCallsJSON)
	str("StopReason", t.StopReason)
	num("InputTokens", int64(t.InputTokens))
	num("OutputTokens", int64(t.OutputTokens))
	num("LatencyMS", t.LatencyMS)
	num("TTFBMS", t.TTFBMS)
	num("Status", int64(t.Status))
	str("Error", t.Error)
	str("InjectedJSON", t.InjectedJSON)
	num("InjectedTokens", int64(t.InjectedTokens))
	str("UserID", t.UserID)
	str("WorkspaceID", t.WorkspaceID)
	str("MemoryScope", t.MemoryScope)
	dst = append(dst, `,"CreatedAt":"`...)
	dst = t.CreatedAt.AppendFormat(dst, time.RFC3339Nano)
	dst = append(dst, '"')
	num("SampleID", t.SampleID)
	return append(dst, '}', '\n'), nil
}
