// Package usertext finds what the user wrote in a message: without
// MetaClaw's injected block, agent-internal context and the envelope each
// client wraps around the user's words. It links nothing of the host (no
// store, no core), so the stdio plugins use it as the host does.
package usertext

import (
	"regexp"
	"strings"

	"github.com/metaclaw-go/metaclaw/host/block"
)

// internalContext matches agent-internal blocks such as OpenClaw's
// <<<BEGIN_OPENCLAW_INTERNAL_CONTEXT>>> … <<<END_OPENCLAW_INTERNAL_CONTEXT>>>.
var internalContext = regexp.MustCompile(`(?s)<<<BEGIN_[A-Z_]*INTERNAL_CONTEXT>>>.*?(<<<END_[A-Z_]*INTERNAL_CONTEXT>>>|$)`)

// Clean returns what the user wrote: without MetaClaw's injected blocks,
// agent-internal context and the client's envelope (StripEnvelope).
func Clean(text string) string {
	if strings.Contains(text, "<<<BEGIN_") {
		text = internalContext.ReplaceAllString(text, "")
	}
	return StripEnvelope(block.Strip(text))
}
